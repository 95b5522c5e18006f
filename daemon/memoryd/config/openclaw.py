"""OpenClaw discovery: its state dir, its ``openclaw.json``, its agents and their
workspaces, found by OpenClaw's own rules so that memoryd with no configuration at all
watches what OpenClaw writes.

(No ``from __future__ import annotations``: ``NamedTuple`` would compile every string
annotation into a ``ForwardRef`` at each command's start-up.)
"""

import functools
import os
import re
import stat
import typing
from pathlib import Path
from typing import Any, NamedTuple

from .errors import ConfigError, OpenClawJsonError

_LEGACY_DIRS = (".clawdbot", ".moldbot", ".moltbot")


def openclaw_home(environ: typing.Mapping[str, str]) -> Path:
    home = environ.get("OPENCLAW_HOME") or environ.get("HOME") or str(Path.home())
    return Path(home).expanduser()


def expand_home(path: str, environ: typing.Mapping[str, str]) -> Path:
    """``~`` and ``~/x`` against OpenClaw's home ($OPENCLAW_HOME, else $HOME).

    ``~user/x`` is that user's home; a user the system does not know is a
    :class:`ConfigError` (the setting is the person's to fix), not a traceback."""
    if path == "~" or path.startswith("~/"):
        return openclaw_home(environ) / path[2:]
    try:
        return Path(path).expanduser()
    except RuntimeError:  # pathlib's "Could not determine home directory."
        user = path[1:].split("/", 1)[0]
        raise ConfigError(f"{path}: no user {user!r} on this system to expand ~{user}") from None


def discover_state_dir(environ: typing.Mapping[str, str]) -> Path:
    """OpenClaw's state dir, found the way OpenClaw finds it (first match wins)."""
    explicit = environ.get("OPENCLAW_STATE_DIR") or environ.get("CLAWDBOT_STATE_DIR")
    if explicit:
        return expand_home(explicit, environ)
    home = openclaw_home(environ)
    if (home / ".openclaw").is_dir():
        return home / ".openclaw"
    for legacy in _LEGACY_DIRS:
        if (home / legacy).is_dir():
            return home / legacy
    return home / ".openclaw"


def openclaw_json_path(state_dir: Path, environ: typing.Mapping[str, str]) -> Path:
    """Where OpenClaw's own config is: $OPENCLAW_CONFIG_PATH, else <state>/openclaw.json."""
    explicit = environ.get("OPENCLAW_CONFIG_PATH")
    return expand_home(explicit, environ) if explicit else state_dir / "openclaw.json"


def read_openclaw_json(path: Path | None) -> dict[str, Any]:
    """OpenClaw's own config (JSON5). Missing → {} (OpenClaw's defaults, as OpenClaw does);
    there but not parseable → :class:`OpenClawJsonError`. Read once per version of the file;
    plain JSON takes the fast parser, only real JSON5 the slow pure-Python one.
    """
    if path is None:
        return {}
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError as exc:  # (a folder on the way that cannot be searched: not missing)
        raise OpenClawJsonError(str(path), f"cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):  # (a FIFO would block every command, a device never end)
        raise OpenClawJsonError(str(path), "not a regular file")
    data = _parse_openclaw_json(str(path), st.st_mtime_ns, st.st_size, st.st_ctime_ns)
    if isinstance(data, OpenClawJsonError):
        raise OpenClawJsonError(data.path, data.reason)
    _LAST_GOOD[str(path)] = data
    return data


# OpenClaw's `${VAR}` in any string of its config: upper-case names only; `$${VAR}` is the
# literal text; a variable unset or empty stays as written (OpenClaw warns and leaves it).
_ENV_REF = re.compile(r"\$(\$?)\{([A-Z_][A-Z0-9_]*)\}")


def with_env_refs(oc: dict[str, Any], environ: typing.Mapping[str, str]) -> dict[str, Any]:
    """``oc`` with its ``${VAR}`` references replaced as OpenClaw replaces them, from
    ``environ`` and then the config's own inline variables, which override nothing set
    (``env.vars``, and any other string directly under ``env``: OpenClaw 2026.9.6's
    ``collectConfigEnvVarsByTarget``). Pure.

    (A workspace written ``"${HOME}/agent-ws"`` was taken as a folder of that name.)"""
    found = oc.get("env")
    block: dict[str, Any] = found if isinstance(found, dict) else {}
    vars_ = block.get("vars")
    listed: dict[str, Any] = vars_ if isinstance(vars_, dict) else {}
    beside = {k: v for k, v in block.items() if k not in ("vars", "shellEnv")}
    env = {k: v for k, v in (*listed.items(), *beside.items()) if isinstance(v, str) and v.strip()}
    env.update({k: v for k, v in environ.items() if v})

    def value_of(match: re.Match[str]) -> str:
        if match.group(1):
            return match.group(0)[1:]
        found = env.get(match.group(2))
        return found if isinstance(found, str) and found else match.group(0)

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return _ENV_REF.sub(value_of, node) if "${" in node else node
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(oc) if "${" in repr(oc) else oc


def last_good_openclaw_json(path: Path | None) -> dict[str, Any]:
    """:func:`read_openclaw_json`, or when the file does not parse now, what it said when it
    last did in this process ({} if never): for readers that already resolved their paths
    from it (the daemon's notifier, a hook's injection) and must not stop on a later bad
    edit."""
    try:
        return read_openclaw_json(path)
    except OpenClawJsonError:
        return _LAST_GOOD.get(str(path), {})


_LAST_GOOD: dict[str, dict[str, Any]] = {}


@functools.lru_cache(maxsize=4)
def _parse_openclaw_json(
    path: str, _mtime_ns: int, _size: int, _ctime_ns: int
) -> dict[str, Any] | OpenClawJsonError:
    # The standard library's parser imports faster than orjson. A failure is returned, not
    # raised, so it is cached with the file's version; ctime is in the version so a chmod shows.
    import json

    try:
        with open(path, "rb") as fh:  # one byte more than allowed: too large is seen
            raw = fh.read(MAX_OPENCLAW_JSON_BYTES + 1)
    except FileNotFoundError:  # (gone since the stat: missing, as OpenClaw takes it)
        return {}
    except OSError as exc:  # unreadable is not missing: its workspace would be guessed
        return OpenClawJsonError(path, f"cannot be read ({exc.strerror or exc})")
    if len(raw) > MAX_OPENCLAW_JSON_BYTES:
        return OpenClawJsonError(path, f"larger than {MAX_OPENCLAW_JSON_BYTES >> 20} MiB")
    try:
        data = json.loads(raw)
    except RecursionError:
        return OpenClawJsonError(path, "nested too deeply")
    except ValueError:  # not JSON (or not UTF-8): most often JSON5 written by hand
        from .json5_common import Uncommon, loads_common

        try:
            text = raw.decode("utf-8")
            data = loads_common(text)
        except UnicodeDecodeError as exc:
            return OpenClawJsonError(path, f"not UTF-8 text at byte {exc.start}")
        except Uncommon:
            data = _json5_proper(path, text)
            if isinstance(data, OpenClawJsonError):
                return data
    if not isinstance(data, dict):
        return OpenClawJsonError(path, f"the top level is {type(data).__name__}, not an object")
    return data


def _json5_proper(path: str, text: str) -> Any:
    """``text`` read by the ``json5`` package (all of JSON5, in pure Python: slow), or the
    error that tells the person where it stops being JSON5."""
    import json5

    try:
        return json5.loads(text)
    except RecursionError:
        return OpenClawJsonError(path, "nested too deeply")
    except Exception as exc:  # json5 raises ValueError and others on bad input
        reason = _first_line(str(exc)).replace("<string>:", "line ")
        return OpenClawJsonError(path, reason or type(exc).__name__)


# OpenClaw's own config is a few KB; one this large is not one (a device, a runaway write).
MAX_OPENCLAW_JSON_BYTES = 16 << 20


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else ""


# ASCII letters only, either case: Python's case-insensitive match would also take `ı`, `ſ`
# or `İ` for `i` / `s` (JavaScript's does not), keeping them in the id OpenClaw rewrites.
_AGENT_ID_OK = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$", re.IGNORECASE | re.ASCII)


def normalize_agent_id(value: Any) -> str:
    """An agent id as OpenClaw files it (``agents/<id>/``): lower case, other characters ``-``.

    ``"Work"`` in ``openclaw.json`` is the agent of ``agents/work/``; an empty id is ``main``.
    """
    raw = value.strip() if isinstance(value, str) else ""
    if not raw:
        return "main"
    if _AGENT_ID_OK.match(raw):
        return raw.lower()
    return re.sub(r"[^a-z0-9_-]+", "-", raw.lower()).strip("-")[:64] or "main"


def _roster(oc: dict[str, Any]) -> list[dict[str, Any]]:
    """The agents ``openclaw.json`` configures, in order, each with its normalized ``id``.

    As OpenClaw's ``readAgentRosterProperty``: ``agents.entries.<id>`` alone when present,
    else the older builds' ``agents.list[]``.
    """
    agents = oc.get("agents")
    if not isinstance(agents, dict):
        return []
    if "entries" in agents:
        entries = agents["entries"]
        if not isinstance(entries, dict):
            return []  # OpenClaw: an `entries` that is no object (null too) is an empty roster
        return [
            {**entries[key], "id": normalize_agent_id(key)}
            for key in entries
            if isinstance(entries[key], dict)
        ]
    listed = agents.get("list")
    if not isinstance(listed, list):
        return []
    return [
        {**entry, "id": normalize_agent_id(entry.get("id"))}
        for entry in listed
        if isinstance(entry, dict)
    ]


def agent_entry(oc: dict[str, Any], agent_id: str) -> dict[str, Any] | None:
    """The first roster entry of ``agent_id`` in ``openclaw.json`` (as OpenClaw reads it)."""
    wanted = normalize_agent_id(agent_id)
    return next((e for e in _roster(oc) if e["id"] == wanted), None)


def default_agent_id(oc: dict[str, Any]) -> str:
    """The agent that owns OpenClaw's default workspace (``agents.defaults.workspace``):
    the one marked ``default: true``; else ``main`` when configured (or none is); else the
    first configured."""
    roster = _roster(oc)
    marked = [entry["id"] for entry in roster if entry.get("default") is True]
    if marked:
        return marked[0]
    ids = [entry["id"] for entry in roster]
    return "main" if not ids or "main" in ids else ids[0]


_JSON_TYPES = {bool: "a boolean", int: "a number", float: "a number", dict: "an object",
               list: "an array"}  # fmt: skip


def _json_text(value: Any) -> str:
    """``value`` as it stands in the JSON file, shortened to 60 characters."""
    import json

    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _named_workspace(agent_id: str, oc: dict[str, Any]) -> str | None:
    """The agent's own ``workspace`` in ``openclaw.json``: that of the first roster entry
    with its id, as OpenClaw's ``resolveAgentEntry`` (a later entry of the same id, e.g.
    ``"Work"`` after ``"work"``, is never looked at, even when the first names none)."""
    entry = next((e for e in _roster(oc) if e["id"] == agent_id), None)
    return _workspace_setting(entry.get("workspace") if entry is not None else None)


def _defaults_workspace(oc: dict[str, Any]) -> str | None:
    agents = oc.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, dict) else None
    return _workspace_setting(defaults.get("workspace") if isinstance(defaults, dict) else None)


def _workspace_setting(value: Any) -> str | None:
    """A ``workspace`` value of ``openclaw.json``: a path, or None for none or blank (OpenClaw
    falls back too). Another type, which OpenClaw refuses too, or a NUL byte is the user's to
    fix (ValueError), not a place to guess."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(
            f"workspace {_json_text(value)} is {_JSON_TYPES.get(type(value), 'no string')}, "
            "not a path; `openclaw config validate` refuses it too"
        )
    if not value.strip():
        return None
    if "\0" in value:
        raise ValueError(f"workspace {value!r} holds a NUL byte")
    return value.strip()


def workspace_candidates(
    agent_id: str, oc: dict[str, Any], state_dir: Path, environ: typing.Mapping[str, str]
) -> list[Path]:
    """Where OpenClaw keeps this agent's workspace, most likely first. Pure.

    OpenClaw's ``resolveAgentWorkspaceDir`` (the table in docs/ingest.md). Where builds
    differ, the later candidates are the other builds' answers: the caller takes the first
    that holds notes, else the first that exists.
    """
    agent_id = normalize_agent_id(agent_id)
    named = _named_workspace(agent_id, oc)
    if named:
        return [expand_home(named, environ)]
    defaults = _defaults_workspace(oc)
    own_default = [expand_home(defaults, environ)] if defaults else None
    shared = [expand_home(defaults, environ) / agent_id] if defaults else []
    others = [*shared, state_dir / f"workspace-{agent_id}"]
    if agent_id == default_agent_id(oc):
        inherited = own_default or default_workspaces(state_dir, environ)
        return inherited if _default_is_certain(oc) else [*inherited, *others]
    if agent_id == "main" and all(entry["id"] != "main" for entry in _roster(oc)):
        # ``main`` left out of a roster of other agents: the agent of the install before
        # they were added, whose notes stay in the default workspace (OpenClaw itself then
        # calls another agent the default; the folder that exists decides).
        return [*(own_default or default_workspaces(state_dir, environ)), *others]
    return others


def _default_is_certain(oc: dict[str, Any]) -> bool:
    """Whether every build gives :func:`default_agent_id` the default workspace: a roster of
    at most one agent, or exactly one entry marked ``default: true`` (which current builds
    ignore under ``agents.ownership = "explicit"``)."""
    roster = _roster(oc)
    if len(roster) <= 1:
        return True
    agents = oc.get("agents")
    explicit = isinstance(agents, dict) and agents.get("ownership") == "explicit"
    return not explicit and sum(entry.get("default") is True for entry in roster) == 1


def default_workspaces(state_dir: Path, environ: typing.Mapping[str, str]) -> list[Path]:
    """OpenClaw's default workspace when its config names none, then memoryd's older guess.

    ``<home>/.openclaw/workspace``, or ``workspace-<profile>`` for ``$OPENCLAW_PROFILE`` or a
    profile's state folder ``~/.openclaw-<profile>``; ``<state>/workspace`` (the same folder
    unless ``$OPENCLAW_STATE_DIR`` moved the state) comes second.
    """
    home = openclaw_home(environ)
    profile = (environ.get("OPENCLAW_PROFILE") or "").strip()
    if not profile and state_dir.name.startswith(".openclaw-"):
        profile = state_dir.name.removeprefix(".openclaw-")
    name = f"workspace-{profile}" if profile and profile.lower() != "default" else "workspace"
    first = home / ".openclaw" / name
    return [first] if first == state_dir / "workspace" else [first, state_dir / "workspace"]


def resolve_workspace(
    agent_id: str, oc: dict[str, Any], state_dir: Path, environ: typing.Mapping[str, str]
) -> Path:
    """The agent's workspace: the first of :func:`workspace_candidates` that holds notes
    (``MEMORY.md`` or ``memory/``), else the first that is a folder, else the first (a
    workspace not made yet). Holding notes comes first: ``<defaults>`` exists wherever
    ``<defaults>/main`` does, as its parent."""
    candidates = workspace_candidates(agent_id, oc, state_dir, environ)
    return next(
        (c for c in candidates if _holds_notes(c)),
        next((c for c in candidates if c.is_dir()), candidates[0]),
    )


def _workspace_of(
    agent_id: str,
    oc: dict[str, Any],
    state_dir: Path,
    environ: typing.Mapping[str, str],
    oc_file: Path | None,
) -> Path:
    """:func:`resolve_workspace`, a path no system call takes (a NUL byte, a name longer
    than the file system allows) being a :class:`ConfigError` naming the file to fix."""
    try:
        return resolve_workspace(agent_id, oc, state_dir, environ)
    except (OSError, ValueError, ConfigError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise ConfigError(
            f"{oc_file or 'openclaw.json'}: agent {agent_id}'s workspace is no usable path ({why})"
        ) from exc


def _holds_notes(folder: Path) -> bool:
    return (folder / "MEMORY.md").is_file() or (folder / "memory").is_dir()


ACTIVE_MEMORY_TRANSCRIPT_DIR = "active-memory"  # the plugin's default `transcriptDir`


class Agent(NamedTuple):
    """One followed agent: where its transcripts are and which workspace its memory is in."""

    id: str
    sessions_dir: Path
    workspace: Path
    # The Active Memory plugin's `transcriptDir`, relative to its per-agent folder (read only
    # with `openclaw.include_active_memory`).
    active_memory_dir: str = ACTIVE_MEMORY_TRANSCRIPT_DIR
    # The folders (or files) OpenClaw also searches as memory (`memory.search.extraPaths`),
    # absolute: their notes are counted under the names OpenClaw reports, never moved.
    extra_paths: tuple[Path, ...] = ()


def extra_memory_paths(oc: dict[str, Any], agent_id: str, workspace: Path) -> tuple[Path, ...]:
    """``memorySearch.extraPaths`` as OpenClaw resolves them for one agent. Pure.

    Every place a build keeps the setting is taken (docs/ingest.md). An entry is a path or
    ``{path, pattern}``; a relative path is the workspace's, ``~`` the home folder.
    """
    found: list[Any] = []

    def take(node: Any, *keys: str) -> None:
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, list):
            found.extend(node)

    take(oc, "memory", "search", "extraPaths")
    take(oc, "agents", "defaults", "memorySearch", "extraPaths")
    entry = agent_entry(oc, agent_id)
    take(entry, "memorySearch", "extraPaths")
    take(entry, "memory", "search", "extraPaths")
    out: list[Path] = []
    for item in found:
        raw = item.get("path") if isinstance(item, dict) else item
        if not isinstance(raw, str) or not raw.strip() or "\0" in raw:
            continue
        raw = raw.strip()
        if raw == "~" or raw.startswith("~/"):
            path = Path(os.path.expanduser(raw))
        else:
            path = Path(raw) if os.path.isabs(raw) else workspace / raw
        path = Path(os.path.normpath(path))
        if path != Path(os.path.normpath(workspace)) and path not in out:
            out.append(path)
    return tuple(out)


def active_memory_transcript_dir(oc: dict[str, Any]) -> str:
    """The Active Memory plugin's ``transcriptDir`` as it resolves it: a path relative to
    ``<state>/plugins/active-memory/transcripts/agents/<id>/``. Pure.

    As the plugin's resolveSafeTranscriptDir: empty, ``.`` and ``..`` parts dropped, so it
    never leaves that folder; a ``:`` or NUL, or nothing left, gives the default. Read from
    ``openclaw.json`` (the user's setting), never from a transcript.
    """
    plugins = oc.get("plugins")
    entries = plugins.get("entries") if isinstance(plugins, dict) else None
    entry = entries.get("active-memory") if isinstance(entries, dict) else None
    conf = entry.get("config") if isinstance(entry, dict) else None
    raw = conf.get("transcriptDir") if isinstance(conf, dict) else None
    if not isinstance(raw, str):
        return ACTIVE_MEMORY_TRANSCRIPT_DIR
    parts = [part.strip() for part in raw.strip().replace("\\", "/").split("/")]
    kept = [part for part in parts if part not in ("", ".", "..")]
    if not kept or any(":" in part or "\0" in part for part in kept):
        return ACTIVE_MEMORY_TRANSCRIPT_DIR
    return "/".join(kept)
