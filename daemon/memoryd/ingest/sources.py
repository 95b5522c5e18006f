"""Which files are transcripts, and where to find them.

OpenClaw's ``sessions/`` folder holds live transcripts next to archives,
sidecars, locks and backups (openclaw-formats.md §2). :func:`classify_name` is
the one place that decides, from the file name alone, whether a file is read.
Renamed transcripts (``.reset.<ts>``, ``.deleted.<ts>``) are read: they are the
same file as before under a new name, and the tailer keeps their offset.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from ..config import Agent
from . import sqlite_source
from .turn_kinds import CRON, HEARTBEAT, run_kind

LIVE, SUCCESSOR, RESET, DELETED, CLAUDE = "live", "successor", "reset", "deleted", "claude"
SQLITE = "sqlite"
# A JSONL transcript moved into the import archive when OpenClaw upgraded to the SQLite store:
# ``<keySlug>.<original file name>.imported-<ts>``. Its events were copied into the store (same
# call ids, same session id), so reading both counts each hit once.
IMPORTED = "imported"
# A zstd archive of a session that left the live store or folder (openclaw-formats.md §2b):
# ``<sessionId>.jsonl.deleted.<ts>.zst`` / ``.jsonl.reset.<ts>.zst`` (JSONL text) and
# ``cold/<sha256>.jsonl.zst`` (JSONL records). Read whole, once (see :mod:`.archives`).
ARCHIVE = "archive"
COLD_DIR = "cold"
# Not a transcript: a folder of them that cannot be listed, as a failed source names it.
FOLDER = "folder"

# The import archive: ``<state>/agents/<id>/session-sqlite-import-archive/`` (also looked for
# inside ``sessions/``).
IMPORT_ARCHIVE_DIR = "session-sqlite-import-archive"
ACTIVE_MEMORY_DIR = "active-memory"

_SUCCESSOR = re.compile(r"^\d{4}-\d{2}-\d{2}T[\d\-:.]+Z?_[0-9A-Za-z\-]+\.jsonl$")
_RENAMED = re.compile(r"\.jsonl\.(reset|deleted)\.[^/]+$")
_ARCHIVED = re.compile(r"\.jsonl(?:\.(?:reset|deleted)\.[^/]+)?\.zst$")
# `.imported-<Date.now()>`, `.<attempt>` added when that name was taken (an ISO time too).
_IMPORTED = re.compile(r"\.imported-[^/.]*(?:\.[^/.]*Z)?(?:\.\d+)?$")
_SKIP_INFIXES = (".trajectory.", ".checkpoint.", ".bak-", ".repair-")
_SKIP_SUFFIXES = (".zst", ".gz", ".lock", ".tmp", ".bak", ".swp")


def classify_name(name: str) -> str | None:
    """The kind of transcript a file name denotes, or None for files not to read."""
    if name.startswith(("sessions.json", ".")):
        return None
    if any(part in name for part in _SKIP_INFIXES):
        return None
    if _ARCHIVED.search(name):
        return ARCHIVE
    if name.endswith(_SKIP_SUFFIXES):
        return None
    imported = _IMPORTED.search(name)
    if imported:
        original = name[: imported.start()]
        return IMPORTED if original.endswith(".jsonl") or _RENAMED.search(original) else None
    m = _RENAMED.search(name)
    if m:
        return RESET if m.group(1) == "reset" else DELETED
    if not name.endswith(".jsonl"):
        return None
    return SUCCESSOR if _SUCCESSOR.match(name) else LIVE


class SourceFile(NamedTuple):
    """A transcript found on disk, with the agent its hits belong to."""

    agent: str
    kind: str
    path: Path
    # Its lstat when it was listed (a regular file then), which the scanner uses rather
    # than a second stat; None when it was not listed (a path from a file event).
    st: os.stat_result | None = None


def imported_session_id(name: str) -> str:
    """The session id in an import-archive name ``<keySlug>.<original file>.imported-<ts>``,
    for a copy whose header does not say it (the original ``<sessionId>.jsonl`` or
    ``<ISO time>_<sessionId>.jsonl``, perhaps renamed, follows the key slug and a dot)."""
    stem = name.split(".jsonl", 1)[0]
    last = stem.rsplit(".", 1)[-1]
    return last.rsplit("_", 1)[-1] if "_" in last else last


def imported_key_slug(name: str, session: str) -> str:
    """The key slug an import-archive name starts with. Pure.

    OpenClaw builds the name as ``<keySlug>.<original file>.imported-<ms>[.<attempt>]``; the
    slug is the session key with every run of characters outside ``[A-Za-z0-9_.-]`` made ``_``,
    so it keeps the key's dots. The original name starts with the session id (``<id>.jsonl``,
    ``<id>-topic-<n>.jsonl``, ``<id>.checkpoint.<uuid>.jsonl``, perhaps renamed) or
    ``<ISO time>_<id>.jsonl``: the slug is everything before the first dot such a name follows,
    the copy's ``session`` id there when it is in the name, else any dot-free id.
    """
    stem = name[: m.start()] if (m := _IMPORTED.search(name)) else name
    ids = [re.escape(session)] if session and session in stem else []
    for id_pattern in [*ids, r"[^.]+"]:
        original = re.compile(_ISO_TIME + r"?" + id_pattern + r"[^.]*\.jsonl(?:\.|$)")
        for dot in (i for i, ch in enumerate(stem) if ch == "."):
            if original.match(stem, dot + 1):
                return stem[:dot]
    return stem.split(".", 1)[0]


_ISO_TIME = r"(?:\d{4}-\d{2}-\d{2}T[\d\-:.]+Z?_)"  # a successor's time, then `_`


# The kinds of run that are not the user's (``openclaw.count_<kind>``; all of them with
# ``openclaw.count_synthetic``): OpenClaw's heartbeat polls, its automation (cron) jobs, and
# the dream-diary runs of its dreaming.
DREAMING = "dreaming"
RUN_KINDS = frozenset({HEARTBEAT, CRON, DREAMING})


def excluded_kinds(synthetic: bool | frozenset[str]) -> frozenset[str]:
    """The run kinds left out: ``True`` all of them, ``False`` none, else the set given."""
    if synthetic is True:
        return RUN_KINDS
    if synthetic is False:
        return frozenset()
    return frozenset(synthetic)


def run_kind_of_key(key: str) -> str | None:
    """The run kind a session key names by OpenClaw's own key rules, else None.

    By the key's structure, never a substring (``agent:main:heartbeat-notes`` is a user's):
    ``agent:<id>:cron:<job>[:run:<id>]``, a key ending ``:heartbeat``, a part
    ``dreaming-narrative-<phase>-…``. A cron job pinned to a named session, and the heartbeat
    in the main session, are told by their turns instead (:func:`turn_kind`).
    """
    parts = key.strip().lower().split(":")
    rest = parts[2:] if len(parts) >= 3 and parts[0] == "agent" else parts
    if rest and rest[0] == CRON:
        return CRON
    if len(parts) >= 2 and parts[-1] == HEARTBEAT:
        return HEARTBEAT
    if any(part.startswith("dreaming-narrative-") for part in rest):
        return DREAMING
    return None


def is_synthetic_key(
    key: str, *, active_memory: bool = False, synthetic: bool | frozenset[str] = True
) -> bool:
    """A session key of traffic that is not the user's and is left out: of a run kind in
    ``synthetic`` (:func:`excluded_kinds`, :func:`run_kind_of_key`), or with ``active_memory``
    (``openclaw.include_active_memory = false``) the Active Memory helper's runs,
    ``<parent key>:active-memory:<hash>``, which on a store install share the user's store.
    """
    kinds = excluded_kinds(synthetic)
    if kinds and run_kind_of_key(key) in kinds:
        return True
    return active_memory and ":active-memory:" in key.lower()


def is_synthetic_slug(
    slug: str, *, active_memory: bool = False, synthetic: bool | frozenset[str] = True
) -> bool:
    """:func:`is_synthetic_key` of a key's slug in a file name: ``agent:<id>:cron:<job>``
    reads ``agent_<id>_cron_<job>`` there (and ``:active-memory:`` ``_active-memory_``)."""
    s = slug.lower()
    kinds = excluded_kinds(synthetic)
    return (
        is_synthetic_key(s, active_memory=active_memory, synthetic=kinds)
        or (CRON in kinds and _CRON_SLUG.match(s) is not None)
        or (HEARTBEAT in kinds and s.endswith("_heartbeat"))
        or (DREAMING in kinds and "_dreaming-narrative-" in s)
        or (active_memory and "_active-memory_" in s)
    )


_CRON_SLUG = re.compile(r"(?:agent_[a-z0-9-]+_)?cron_")  # agent_<id>_cron_<job>…


# ---------------------------------------------------------------------- turns of a run
# OpenClaw runs its heartbeat in the main session by default, and a cron job may be pinned to
# a named session: what tells those turns from the user's is their user message.

USER_ROLE = b'"user"'  # the prefilter for user messages (``"role":"user"``, any spacing)


def turn_kind(event: bytes | memoryview) -> tuple[bool, str | None]:
    """Whether an event is a user message, and the run kind its turn is (None: the user's;
    :func:`.turn_kinds.run_kind`). Called only on events holding :data:`USER_ROLE`; anything
    that does not read is no user message.
    """
    import orjson

    try:
        record = orjson.loads(event)
    except orjson.JSONDecodeError:
        return False, None
    msg = record.get("message") if isinstance(record, dict) else None
    if not isinstance(msg, dict) or msg.get("role") != "user":
        return False, None
    return True, run_kind(msg)


def agent_dirs(agent: Agent, include_active_memory: bool) -> list[Path]:
    """Folders holding this agent's transcripts (they may not exist yet)."""
    dirs = [
        agent.sessions_dir,
        agent.sessions_dir.parent / IMPORT_ARCHIVE_DIR,
        agent.sessions_dir / IMPORT_ARCHIVE_DIR,
        sqlite_source.db_path_for(agent.sessions_dir).parent,
        sqlite_source.db_path_for(agent.sessions_dir).parent / COLD_DIR,
        agent.sessions_dir / COLD_DIR,
    ]
    if include_active_memory:
        # `sessions/active-memory/`, or `<state>/plugins/active-memory/transcripts/agents/<id>/
        # <transcriptDir>/` (the default `active-memory` also read: earlier runs stay there).
        state = agent.sessions_dir.parent.parent.parent
        plugin = state / "plugins" / ACTIVE_MEMORY_DIR / "transcripts" / "agents" / agent.id
        dirs += [agent.sessions_dir / ACTIVE_MEMORY_DIR, plugin / ACTIVE_MEMORY_DIR]
        if agent.active_memory_dir != ACTIVE_MEMORY_DIR:
            dirs.append(plugin.joinpath(*agent.active_memory_dir.split("/")))
    return dirs


def discover(
    agents: tuple[Agent, ...], *, include_active_memory: bool = False,
    claude_projects: tuple[Path, ...] = (), unreadable: list[tuple[str, str, str]] | None = None,
) -> Iterator[SourceFile]:  # fmt: skip
    """Every transcript file to read (regular files only, no symlinks), oldest first.

    Each agent's transcripts come in the order they were last written (then by name): a
    compaction successor comes after the file it continues, so an answer at its start meets
    its call already read. Then the agent's SQLite store, if any, then its ``.zst`` archives.
    A folder that is there but cannot be listed hides every transcript in it: it is added to
    ``unreadable`` as (agent, folder, why) for the scan to report.
    """
    for agent in agents:
        files: list[tuple[int, str, SourceFile]] = []
        databases: list[SourceFile] = []
        archived: list[tuple[int, str, SourceFile]] = []
        for folder in agent_dirs(agent, include_active_memory):
            for entry in _files(folder, unreadable, agent.id):
                if entry.name == sqlite_source.DB_NAME:
                    databases.append(SourceFile(agent.id, SQLITE, Path(entry.path)))
                    continue
                kind = classify_name(entry.name)
                if kind is not None:
                    st = _lstat(entry)
                    sf = SourceFile(agent.id, kind, Path(entry.path), st)
                    group = archived if kind == ARCHIVE else files
                    group.append((st.st_mtime_ns if st else 0, entry.name, sf))
        files.sort(key=lambda f: f[:2])
        archived.sort(key=lambda f: f[:2])
        yield from (sf for _, _, sf in files)
        yield from databases
        # Archive files last: the store's session keys (cron, heartbeat) are known by then.
        yield from (sf for _, _, sf in archived)
    if claude_projects and agents:
        owner = agents[0].id
        found = []
        for project in claude_projects:
            for path in _claude_transcripts(project, unreadable, owner):
                st = _lstat(path)
                sf = SourceFile(owner, CLAUDE, path, st)
                found.append((st.st_mtime_ns if st else 0, str(path), sf))
        found.sort(key=lambda f: f[:2])
        yield from (sf for _, _, sf in found)


def _lstat(entry: os.DirEntry[str] | Path) -> os.stat_result | None:
    """The lstat of a listed file; None when it is gone since (it sorts first, is skipped)."""
    try:
        return entry.stat(follow_symlinks=False)
    except OSError:
        return None


def _files(
    folder: Path, unreadable: list[tuple[str, str, str]] | None = None, owner: str = ""
) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return [e for e in it if e.is_file(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        if unreadable is not None:
            unreadable.append((owner, str(folder), exc.strerror or str(exc)))
        return []


def _claude_transcripts(
    project: Path, unreadable: list[tuple[str, str, str]] | None = None, owner: str = ""
) -> Iterator[Path]:
    """``<project>/<uuid>.jsonl`` and ``<project>/<uuid>/subagents/agent-*.jsonl``."""
    for entry in _files(project, unreadable, owner):
        if entry.name.endswith(".jsonl"):
            yield Path(entry.path)
    try:
        with os.scandir(project) as it:
            subdirs = [e for e in it if e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for sub in subdirs:
        for entry in _files(Path(sub.path) / "subagents", unreadable, owner):
            if entry.name.endswith(".jsonl"):
                yield Path(entry.path)


# ---------------------------------------------------------------------- naming sessions
# The same conversation carries the same session id whichever source it is read from. (orjson
# and the tailer are imported in these functions: `status`, which lists sources, loads neither.)

_HEADER_MAX = 64 << 10  # a session header longer than this is not read for its parent


def parent_session(fd: int, head: bytes) -> str | None:
    """The session a transcript (a compaction successor) continues, from its header's
    ``parentSession``; None when there is none, or the header cannot be read."""
    from .tailer import HEAD_MAX

    end = head.find(b"\n")
    if end < 0 and len(head) >= HEAD_MAX:  # a header longer than the head read: read it whole
        head = os.pread(fd, _HEADER_MAX, 0)
        end = head.find(b"\n")
    if end < 0:
        return None
    return header_parent(head[:end])


def file_session(sf: SourceFile, head: bytes) -> str:
    """The session a transcript file holds: its name's id (``<sessionId>.jsonl``,
    ``<ISO>_<sessionId>.jsonl``); an import-archive copy's header, else its name."""
    if sf.kind != IMPORTED:
        return session_id_of(sf.path.name)
    end = head.find(b"\n")
    if end > 0 and b'"session"' in head[:end]:
        import orjson

        try:
            header = orjson.loads(head[:end])
        except orjson.JSONDecodeError:
            header = None
        if isinstance(header, dict) and header.get("type") == "session":
            sid = header.get("id")
            if isinstance(sid, str) and sid.strip():
                return sid.strip()
    return imported_session_id(sf.path.name)


def header_parent(line: bytes) -> str | None:
    """The session id a header line (``"type": "session"``) names as ``parentSession``, if
    any (a file path there is data, never opened)."""
    if b'"parentSession"' not in line:
        return None
    import orjson

    try:
        header = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    parent = header.get("parentSession") if isinstance(header, dict) else None
    if not isinstance(parent, str) or not parent.strip() or header.get("type") != "session":
        return None
    return parent_id(parent.strip())


def parent_id(parent: str) -> str:
    """The session id a ``parentSession`` value names: a transcript path, a bare id, or
    ``sqlite:<agent>:<session id>:<store path>`` (forked subagents, whose first events copy
    the parent's: the parent is read first, so the child's copies count nothing)."""
    if parent.startswith("sqlite:"):
        parts = parent.split(":", 3)
        if len(parts) >= 3 and parts[2].strip():
            return parts[2].strip()
    name = parent.replace("\\", "/").rsplit("/", 1)[-1]
    return session_id_of(name)


def synthetic_from_keys(
    keyed: Iterable[tuple[str, str]], *, active_memory: bool = False,
    synthetic: bool | frozenset[str] = True,
) -> frozenset[str]:  # fmt: skip
    """The sessions of ``(session id, session key)`` pairs whose key :func:`is_synthetic_key`
    names: the one rule for JSONL indexes and the SQLite store (one such key suffices)."""
    return frozenset(
        sid
        for sid, key in keyed
        if is_synthetic_key(key, active_memory=active_memory, synthetic=synthetic)
    )


def synthetic_session_ids(
    index: object, *, active_memory: bool = False, synthetic: bool | frozenset[str] = True
) -> frozenset[str]:
    """Sessions that are not the user's, from a ``sessions.json`` index: each entry's
    ``sessionId`` and ``sessionFile`` under its key, judged by :func:`synthetic_from_keys`."""
    if not isinstance(index, dict):
        return frozenset()
    keyed: list[tuple[str, str]] = []
    for key, entry in index.items():
        if not isinstance(entry, dict):
            continue
        sid = entry.get("sessionId")
        if isinstance(sid, str):
            keyed.append((sid, str(key)))
        sfile = entry.get("sessionFile")
        if isinstance(sfile, str):
            keyed.append((session_id_of(Path(sfile).name), str(key)))
    return synthetic_from_keys(keyed, active_memory=active_memory, synthetic=synthetic)


def session_id_of(name: str) -> str:
    """Session id from a transcript name: ``<id>.jsonl[...]``, ``<ISO>_<id>.jsonl``."""
    stem = name.split(".jsonl", 1)[0]
    if _SUCCESSOR.match(stem + ".jsonl"):
        stem = stem.split("_", 1)[1]
    return stem
