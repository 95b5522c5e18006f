"""A configuration file read and checked against the schema: unknown keys and wrong types
are refused with a message that names the key (exit code 2 at the command layer), never
silently ignored.

Schedules and the zone are checked by the functions that read them (:func:`job_schedules`,
:func:`schedule_timezone`), so a file is accepted or refused alike everywhere.
"""

import math
import os
import posixpath
import re
import typing
from datetime import UTC, tzinfo
from pathlib import Path
from typing import Any

from .. import timerules
from .errors import ConfigError
from .schema import (
    EXPIRE_POLICIES,
    RETIRED_POLICIES,
    Config,
    ScheduleConfig,
    _resolve_hint,
    is_table,
)

_CHOICES: dict[str, tuple[str, ...]] = {
    "log.level": ("debug", "info", "warning", "error"),
    "log.format": ("auto", "json", "console"),
    "expire.policy": EXPIRE_POLICIES,
    "plugin.recall_tool": ("deferred", "direct", "off"),
}


def _check_value(name: str, hint: Any, value: Any) -> Any:
    if hint is tuple:
        if not isinstance(value, list):
            raise ConfigError(f"{name}: expected a list of strings, got {type(value).__name__}")
        for item in value:
            if not isinstance(item, str):
                raise ConfigError(f"{name}: every item must be a string, got {item!r}")
            if "\0" in item:
                raise ConfigError(f"{name}: {item!r} holds a NUL character, which no name can")
        return tuple(value)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{name}: expected true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name}: expected an integer, got {value!r}")
        if value < 0:
            raise ConfigError(f"{name}: must not be negative, got {value}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{name}: expected a number, got {value!r}")
        if not math.isfinite(value):  # TOML allows nan and inf; no setting means either
            raise ConfigError(f"{name}: expected a finite number, got {value!r}")
        if value < 0:
            raise ConfigError(f"{name}: must not be negative, got {value}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name}: expected a string, got {value!r}")
        if "\0" in value:  # (no path, zone, cron or name holds one; open() would raise)
            raise ConfigError(f"{name}: {value!r} holds a NUL character, which no name can")
        choices = _CHOICES.get(name)
        if choices and value not in choices:
            if name == "expire.policy" and value in RETIRED_POLICIES:
                raise ConfigError(f"{name}: {value!r} {RETIRED_POLICIES[value]}")
            raise ConfigError(f"{name}: must be one of {', '.join(choices)}, got {value!r}")
        return value
    raise ConfigError(f"{name}: unsupported type")  # pragma: no cover - schema bug


def _did_you_mean(key: str, known: set[str], prefix: str) -> str:
    """`` (did you mean 'expire.policy'?)`` for the known key closest to a typo, else ``""``."""
    import difflib

    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    if not close:
        return ""
    return f" (did you mean {(f'{prefix}.' if prefix else '') + close[0]!r}?)"


def _build(cls: type, data: Any, prefix: str) -> Any:
    where = prefix or "the top level"
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a table, got {type(data).__name__}")
    hints = {
        name: _resolve_hint(hint) for name, hint in cls.__annotations__.items() if name != "source"
    }
    known = set(hints)
    for key in data:
        if key not in known:
            name = f"{prefix}.{key}" if prefix else key
            raise ConfigError(f"unknown key {name!r}{_did_you_mean(str(key), known, prefix)}")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else key
        hint = hints[key]
        if is_table(hint):
            kwargs[key] = _build(hint, value, name)
        else:
            kwargs[key] = _check_value(name, hint, value)
    return cls(**kwargs)


def parse_config(data: dict[str, Any], source: str = "") -> Config:
    """Validate a TOML document (already parsed) into a Config."""
    cfg = _build(Config, data, "")
    _check_semantics(cfg)
    return cfg._replace(source=source)


# The smallest ``daemon.clock_jump_seconds``: twice the daemon's one-second tick.
MIN_CLOCK_JUMP_SECONDS = 2.0
# The daemon's full rescan and its polling observer's interval: at 0 either spins.
MIN_RESCAN_SECONDS = 1.0
MIN_POLLING_INTERVAL = 0.1
MAX_WAIT_SECONDS = 30 * 86400.0  # (threading's waits overflow past about 292 years: 1e10 s)
# The bounds of ingest.chunk_bytes, a read buffer (too large, every read fails).
MIN_CHUNK_BYTES = 4096
MAX_CHUNK_BYTES = 64 << 20


def _check_semantics(cfg: Config) -> None:
    sc = cfg.score
    if sc.keyword_weight + sc.time_weight + sc.access_weight + sc.tag_weight <= 0:
        raise ConfigError("score: the four weights must not all be zero")
    if cfg.score.max_prune_fraction > 1:
        raise ConfigError("score.max_prune_fraction: must be between 0 and 1")
    if not MIN_CHUNK_BYTES <= cfg.ingest.chunk_bytes <= MAX_CHUNK_BYTES:
        raise ConfigError(
            f"ingest.chunk_bytes: must be between {MIN_CHUNK_BYTES} and {MAX_CHUNK_BYTES} "
            f"(64 MiB), not {cfg.ingest.chunk_bytes}"
        )
    if cfg.ingest.parallel_min_bytes < 0:
        raise ConfigError("ingest.parallel_min_bytes: must be 0 (never) or more")
    if cfg.ingest.helper not in ("auto", "always", "never"):
        raise ConfigError('ingest.helper: must be "auto", "always" or "never"')
    if cfg.ingest.max_line_bytes < cfg.ingest.chunk_bytes:
        raise ConfigError("ingest.max_line_bytes: must be at least ingest.chunk_bytes")
    problem = archive_dir_problem(cfg.archive.dir)
    if problem:
        raise ConfigError(f"archive.dir: {cfg.archive.dir!r} {problem}")
    if cfg.schedule != ScheduleConfig():  # (the defaults are valid: a test reads them)
        if cfg.schedule.timezone:  # ("" is the local zone, always there: not resolved here)
            schedule_timezone(cfg)
        job_schedules(cfg)
    for key in ("later_needed_target", "archive_floor"):
        value = getattr(cfg.expire, key)
        if not 0 <= value <= 1:
            raise ConfigError(f"expire.{key}: must be between 0 and 1 (a share), got {value}")
    if not 0 <= cfg.expire.max_fraction_per_run <= 1:
        raise ConfigError(
            "expire.max_fraction_per_run: must be between 0 and 1 (a share of the files, "
            f"0.25 = a quarter), got {cfg.expire.max_fraction_per_run}"
        )
    for key in ("note_max_chars", "min_idle_days"):
        if getattr(cfg.retire, key) < 0:
            raise ConfigError(f"retire.{key}: must be 0 or more, got {getattr(cfg.retire, key)}")
    if cfg.daemon.clock_jump_seconds < MIN_CLOCK_JUMP_SECONDS:
        raise ConfigError(
            f"daemon.clock_jump_seconds: must be at least {MIN_CLOCK_JUMP_SECONDS:g} (the "
            "daemon's main loop looks every second: a smaller gap would be found at every "
            f"look, each a full rescan), got {cfg.daemon.clock_jump_seconds:g}"
        )
    if not cfg.openclaw.agents:
        raise ConfigError('openclaw.agents: list at least one agent id (or "*")')
    for key, value in (("openclaw.state_dir", cfg.openclaw.state_dir),
                       ("openclaw.workspace", cfg.openclaw.workspace),
                       ("state.dir", cfg.state.dir), ("tiers.root", cfg.tiers.root)):  # fmt: skip
        problem = folder_key_problem(value)
        if problem:
            raise ConfigError(f"{key}: {value!r} {problem}")
    for key, value in (("daemon.rescan_seconds", cfg.daemon.rescan_seconds),
                       ("daemon.polling_interval", cfg.daemon.polling_interval),
                       ("daemon.clock_jump_seconds", cfg.daemon.clock_jump_seconds),
                       ("daemon.stall_seconds", cfg.daemon.stall_seconds),
                       ("tiers.summarizer_timeout", cfg.tiers.summarizer_timeout),
                       ("notify.telegram.timeout", cfg.notify.telegram.timeout)):  # fmt: skip
        if value > MAX_WAIT_SECONDS:
            raise ConfigError(
                f"{key}: at most {MAX_WAIT_SECONDS:,.0f} seconds (30 days; a value far past "
                f"that overflows the daemon's timers and stops it), got {value:g}"
            )
    for key, least in (("rescan_seconds", MIN_RESCAN_SECONDS),
                       ("polling_interval", MIN_POLLING_INTERVAL)):  # fmt: skip
        if getattr(cfg.daemon, key) < least:
            raise ConfigError(
                f"daemon.{key}: must be at least {least:g} seconds (below it the daemon "
                f"looks without pause), got {getattr(cfg.daemon, key):g}"
            )


def job_schedules(cfg: Config) -> dict[str, timerules.CronSpec]:
    """Each scheduled job's parsed schedule; a bad expression is a ConfigError naming its key.

    The one check of a schedule, for validation, ``status`` and the daemon alike. A job
    switched off (``"off"``) has no entry: nothing fires it.
    """
    out: dict[str, timerules.CronSpec] = {}
    for name in timerules.SCHEDULED_JOBS:
        expr = getattr(cfg.schedule, name)
        if timerules.schedule_is_off(expr):
            continue
        if not expr.strip():
            raise ConfigError(
                f'schedule.{name}: "" is not a schedule; write "off" to switch the job off, '
                "or a cron expression (five fields: minute hour day month weekday)"
            )
        try:
            out[name] = timerules.parse(expr)
        except ValueError as exc:
            raise ConfigError(
                f"schedule.{name}: {expr!r} is not a cron expression (minute hour day month "
                f'weekday) or "off": {exc}'
            ) from None
        if timerules.next_fire(out[name], _A_LEAP_YEAR_EVE, UTC) is None:
            raise ConfigError(
                f"schedule.{name}: {expr!r} never fires (no such day in any year); write "
                '"off" to switch the job off'
            )
    return out


# 2027-12-31T00:00Z: the search for a schedule's next fire spans the leap day 2028-02-29.
_A_LEAP_YEAR_EVE = 1830211200.0


def schedule_timezone(cfg: Config) -> tzinfo:
    """The zone cron expressions and period keys are read in: ``schedule.timezone``, else
    the local one; a ConfigError when it names no zone."""
    try:
        return timerules.zone_named(cfg.schedule.timezone)
    except ValueError as exc:
        raise ConfigError(f"schedule.timezone: {exc}") from None


def folder_key_problem(value: str) -> str | None:
    """Why a folder setting (``openclaw.workspace``, ``state.dir``, ...) cannot stand, or None.

    A relative folder would be a different one from each directory memoryd is started in
    (the service runs in ``/``, a command where the person stands): the daemon and the
    commands would then manage different notes. The root itself is no one's notes folder."""
    if not value or value == "~" or value.startswith("~"):
        return None
    if not os.path.isabs(value):
        return (
            "is relative: write an absolute path or one from ~ (a relative one would mean "
            "another folder for the service, which runs in /, than for a command run here)"
        )
    if os.path.normpath(value) in ("/", "//"):
        return "is the file system's root: name the folder itself"
    return None


def archive_dir_problem(template: str) -> str | None:
    """Why ``archive.dir`` cannot be an archive folder, or None when it can. Pure.

    The archive must be a folder of its own inside the workspace, since ``hits`` and
    ``expire`` stop listing what is in it; each refusal says why.
    """
    if template.count("{") != template.count("{month}") or "}" in template.replace("{month}", ""):
        return "uses an unknown placeholder (only {month} is known)"
    if not template.strip():
        return "is empty: the archive must be a folder inside the workspace"
    if template.startswith(("/", "~", "\\")) or template[1:3] in (":/", ":\\"):
        return (
            "is absolute: the archive must be a folder inside the workspace, written relative "
            "to it (for example 'memory-archive/{month}')"
        )
    parts = [p for p in re.split(r"[/\\]+", template) if p]
    if ".." in parts:
        return "contains '..': the archive must stay inside the workspace"
    norm = posixpath.normpath("/".join(parts))
    if norm in (".", ""):
        return "is the workspace itself: the archive must be a folder of its own"
    if norm == "memory":
        return "is memory/ itself: archived notes would stay where they are, and all of it hidden"
    first = norm.split("/")
    if first[0] == "memory" and len(first) > 1 and first[1].startswith("{month}"):
        return (
            "puts a bare {month} folder directly under memory/, where the user's own "
            "memory/YYYY-MM/ notes may be (use 'memory/archive-{month}' or "
            "'memory-archive/{month}')"
        )
    return None


def config_path_from(explicit: str | None, environ: typing.Mapping[str, str]) -> str | None:
    """Which config file to read: --config, then $MEMORYD_CONFIG, else none (defaults)."""
    return explicit or environ.get("MEMORYD_CONFIG") or None


def load_config(path: str | None) -> Config:
    """Read and validate a TOML file; ``None`` means the defaults."""
    if not path:
        return Config()
    import tomllib  # (only with a file: running on the defaults need not load the TOML reader)

    try:
        data = tomllib.loads(_config_text(path))
    except FileNotFoundError:
        raise ConfigError(f"config file {path}: not found") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path}: is a directory") from None
    except PermissionError:
        raise ConfigError(f"config file {path}: permission denied") from None
    except OSError as exc:
        raise ConfigError(f"config file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
            f"{exc.start}); TOML files are UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"config file {path}: invalid TOML: nested too deeply") from None
    return parse_config(data, source=str(Path(path).resolve()))


# A configuration file is a few KB; anything near this is not one.
MAX_CONFIG_BYTES = 1 << 20


def _config_text(path: str) -> str:
    """The file's text, at most :data:`MAX_CONFIG_BYTES` of it (``--config /dev/zero`` would
    otherwise be read until memory runs out). A pipe is read too (``--config <(…)``,
    ``/dev/stdin``). Raises OSError and UnicodeDecodeError as reading would, ConfigError for
    what is too large to be a config file."""
    import stat

    if stat.S_ISDIR(os.stat(path).st_mode):
        raise IsADirectoryError(path)
    with open(path, "rb") as fh:
        raw = fh.read(MAX_CONFIG_BYTES + 1)
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config file {path}: larger than {MAX_CONFIG_BYTES >> 20} MiB; not a memoryd "
            "configuration"
        )
    return raw.decode("utf-8")
