"""The configuration's two refusals: a setting a person must fix, and an ``openclaw.json``
that does not parse (every command stops on either with exit 2, the key or file named)."""


class ConfigError(Exception):
    """A configuration problem a person must fix; the message names the key or file."""


class OpenClawJsonError(ConfigError):
    """OpenClaw's own ``openclaw.json`` is there but does not parse (a truncated JSON5 file, a
    half-written edit). Never read as empty: an empty config sends discovery to
    ``~/.openclaw/workspace``, and ``expire --force`` would act on a folder the user never
    configured. Every command stops on it (exit 2); the daemon keeps the view it last
    resolved and says so in ``status``."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"{path}: cannot be read as JSON5 ({reason}); fix the file, memoryd "
            "does not guess where the workspace is without it"
        )
        self.path = path
        self.reason = reason
