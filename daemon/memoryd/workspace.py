"""Which files are memory files, and what a path from a transcript refers to.

Two jobs, both about trust. :func:`classify_result_path` is pure: it maps a path
string read from a transcript (data, never a place to touch) to a
workspace-relative key, or rejects it. :func:`list_memory_files` walks the real
workspace, never following a symlink and never leaving the workspace.
"""

from __future__ import annotations

import contextlib
import functools
import os
import posixpath
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from . import faults

# The memory files at the workspace's top that OpenClaw searches as memory: long-term memory,
# and the profile OpenClaw writes of its user (2026.9 searches it as ``source: "memory"``).
# Never archived (``expire.protect``), never promoted.
LONG_TERM_NAMES = ("MEMORY.md", "memory.md", "USER.md")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MEMORY_DIR = "memory"


def normalize(raw: str) -> str | None:
    """A transcript path as a clean POSIX path, or None when it cannot be one.

    Backslashes become slashes, ``./`` and duplicate slashes go, ``..`` is
    resolved lexically. NUL bytes, control characters and empty paths are refused.
    """
    if not raw or len(raw) > 4096 or _CONTROL.search(raw):
        return None
    p = posixpath.normpath(raw.replace("\\", "/"))
    if p in (".", "/"):
        return None
    return p


def is_memory_relpath(rel: str, extra: tuple[str, ...] = ()) -> bool:
    """True for ``MEMORY.md``, ``memory.md``, ``USER.md`` and ``memory/**/*.md`` (already
    normalized), and ``*.md`` under one of ``extra`` (workspace-relative folders of
    ``memorySearch.extraPaths`` inside the workspace, or such files themselves)."""
    if rel in LONG_TERM_NAMES:
        return True
    if not rel.endswith(".md"):
        return False
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return False
    if rel.startswith(MEMORY_DIR + "/"):
        return True
    return any(rel == e or rel.startswith(e + "/") for e in extra)


Roots = str | tuple[str, ...]


@functools.lru_cache(maxsize=8192)  # agents hit the same few files over and over
def classify_result_path(
    raw: str, workspace: Roots, tiers_root: Roots | None = None, extra: Roots = ()
) -> str | None:
    """The key under which a hit on ``raw`` is counted, or None if it is not a memory file.

    ``workspace``, ``tiers_root`` and ``extra`` (``memorySearch.extraPaths``) are absolute
    POSIX paths used only as strings, each one or several spellings of a folder
    (:func:`roots_of`). A relative path is joined to the first workspace spelling, as OpenClaw
    joins it. Keys: workspace-relative (``memory/x.md``; an extra path's file as OpenClaw
    names it, ``../shared-notes/runbook.md`` outside), and ``tiers/<name>`` whatever tier a
    note is in, so it keeps its history between tiers. Anything that escapes them is refused.
    """
    p = normalize(raw)
    if p is None:
        return None
    spaces = (workspace,) if isinstance(workspace, str) else workspace
    extras = (extra,) if isinstance(extra, str) else extra
    if p.startswith("/"):
        full = p
    elif p[1:3] == ":/":  # a Windows absolute path never lands inside a POSIX root
        return None
    else:
        full = posixpath.normpath(posixpath.join(posixpath.normpath(spaces[0]), p))
    for space in spaces:
        ws = posixpath.normpath(space)
        if full.startswith(ws + "/"):
            rel = full[len(ws) + 1 :]
            inside = tuple(
                e[len(ws) + 1 :] for e in map(posixpath.normpath, extras) if e.startswith(ws + "/")
            )
            if is_memory_relpath(rel, inside):
                return rel
    if full.endswith(".md"):
        for e in map(posixpath.normpath, extras):
            if full == e or full.startswith(e + "/"):
                home = posixpath.normpath(spaces[0])
                if not full.startswith(home + "/"):
                    return posixpath.relpath(full, home)  # outside: as OpenClaw names it
    for tiers in (tiers_root,) if isinstance(tiers_root, str) else tiers_root or ():
        root = posixpath.normpath(tiers)
        if full.startswith(root + "/") and full.endswith(".md"):
            rel = full[len(root) + 1 :]
            parts = rel.split("/")
            if len(parts) == 2 and parts[0] in ("hot", "warm", "gist", "forgotten"):
                return "tiers/" + parts[1]
    return None


def roots_of(folder: Path) -> tuple[str, ...]:
    """``folder`` as given (made absolute) and, when a symlink leads elsewhere, where it
    leads: the spellings under which transcripts may name its files."""
    given = str(folder.absolute())
    resolved = os.path.realpath(given)
    return (given,) if resolved == given else (given, resolved)


def relative_to_workspace(workspace: Path, path: str | Path | None) -> str | None:
    """``path`` (absolute) as a workspace-relative POSIX key, under the workspace as given or
    where its symlink leads (:func:`roots_of`: the journal and transcripts hold either); None
    when it lies elsewhere (or is the workspace itself). Pure but for ``realpath``."""
    if path is None:
        return None
    target = Path(path)
    for root in roots_of(workspace):
        try:
            rel = target.relative_to(root)
        except ValueError:
            continue
        if rel.parts:
            return rel.as_posix()
    return None


def is_utf8_name(name: str) -> bool:
    """False for a file name whose bytes are not UTF-8 (surrogate-escaped): it cannot be
    stored, printed as JSON or reported, so every listing skips it rather than stop a job."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(name: str) -> str:
    """A surrogate-escaped name as a person can read it: the bad bytes as ``\\xff``."""
    return os.fsencode(name).decode("utf-8", errors="backslashreplace")


_reported: set[str] = set()


def report_skipped_names(skipped: list[str]) -> int:
    """Warn (once per process and name) about skipped non-UTF-8 names; how many there are."""
    new = [n for n in skipped if n not in _reported]
    if new:
        _reported.update(new)
        example = ", ".join(new[:3]) + (f" and {len(new) - 3} more" if len(new) > 3 else "")
        import logging  # (here: a read command that skips nothing never loads it)

        logging.getLogger("memoryd.workspace").warning(
            "skipped %d file name(s) that are not UTF-8: %s (rename them to be included)",
            len(new),
            example,
        )
    return len(skipped)


_unlisted: set[tuple[str, str]] = set()


def _report_unlisted(folder: Path, shown: str, exc: OSError) -> None:
    """Warn (once per process, folder and reason) that a folder of notes cannot be listed:
    its notes are left out of every listing (so never archived), which the user should know
    rather than find a folder's notes missing from ``hits``."""
    why = exc.strerror or str(exc)
    if (str(folder), why) in _unlisted:
        return
    _unlisted.add((str(folder), why))
    import logging

    logging.getLogger("memoryd.workspace").warning(
        "cannot list %s (%s): the notes in it are left out until it can be read", shown, why
    )


class MemoryFile(NamedTuple):
    """A memory file on disk: its workspace-relative key and the stat facts we use."""

    rel: str
    size: int
    mtime: float


def list_memory_files(
    workspace: Path,
    exclude_prefixes: tuple[str, ...] = (),
    skipped: list[str] | None = None,
    extra: tuple[Path, ...] = (),
) -> list[MemoryFile]:
    """Every memory file of the workspace, sorted by path.

    Symlinks are skipped, so nothing outside the workspace is listed. ``exclude_prefixes``
    (e.g. an archive inside ``memory/``) are left out, and so are names that are not UTF-8,
    each added to ``skipped``. ``extra``: the ``memorySearch.extraPaths``, for the commands
    that show hits, listed under OpenClaw's names (:func:`extra_key`); the jobs that move
    files never pass them (such a file is counted, never moved).
    """
    listed = _list_memory_files(workspace, exclude_prefixes, skipped)
    if not extra:
        return listed
    have = {m.rel for m in listed}
    for root in extra:
        for rel, st in _extra_files(root, skipped if skipped is not None else []):
            key = extra_key(workspace, root, rel)
            if key is not None and key not in have:
                have.add(key)
                listed.append(MemoryFile(key, st.st_size, st.st_mtime))
    return sorted(listed, key=lambda m: m.rel)


def extra_key(workspace: Path, root: Path, rel: str) -> str | None:
    """The name a file ``rel`` under an extra path ``root`` is counted under: what
    :func:`classify_result_path` makes of its absolute path."""
    full = (root / rel).as_posix() if rel else root.as_posix()
    spelled = roots_of(root)
    return classify_result_path(full, roots_of(workspace), None, spelled)


def _extra_files(root: Path, skipped: list[str]) -> Iterator[tuple[str, os.stat_result]]:
    """The Markdown files of an extra path: the file itself, or those below the folder."""
    st = regular_stat(root)
    if st is not None:
        if root.name.endswith(".md"):
            yield "", st
        return
    try:
        if not stat.S_ISDIR(os.lstat(root).st_mode):
            return
    except OSError:
        return
    for child, child_st in _walk(root, "", skipped):
        yield child.lstrip("/"), child_st


def _list_memory_files(
    workspace: Path, exclude_prefixes: tuple[str, ...], skipped: list[str] | None
) -> list[MemoryFile]:
    out: list[MemoryFile] = []
    seen_inodes: set[tuple[int, int]] = set()  # MEMORY.md is memory.md on macOS
    for name in LONG_TERM_NAMES:
        st = regular_stat(workspace / name)
        if st is not None and (st.st_dev, st.st_ino) not in seen_inodes:
            seen_inodes.add((st.st_dev, st.st_ino))
            out.append(MemoryFile(name, st.st_size, st.st_mtime))
    mem = workspace / MEMORY_DIR
    try:
        is_dir = stat.S_ISDIR(os.lstat(mem).st_mode)
    except OSError:
        is_dir = False
    if is_dir:
        for rel, st in _walk(mem, MEMORY_DIR, skipped if skipped is not None else []):
            if not any(rel.startswith(p.rstrip("/") + "/") for p in exclude_prefixes):
                out.append(MemoryFile(rel, st.st_size, st.st_mtime))
    return sorted(out, key=lambda m: m.rel)


def regular_stat(path: Path) -> os.stat_result | None:
    """lstat of a regular file; None for anything else (missing, symlink, folder)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _walk(folder: Path, rel: str, skipped: list[str]) -> Iterator[tuple[str, os.stat_result]]:
    try:
        faults.point("workspace.list", folder)
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):  # (gone since it was listed)
        return
    except OSError as exc:
        # (a workspace's folder by its workspace name; an extraPaths folder, whole)
        _report_unlisted(folder, rel if rel.startswith(MEMORY_DIR) else str(folder), exc)
        return
    for entry in sorted(entries, key=lambda e: e.name):
        child = f"{rel}/{entry.name}"
        if not is_utf8_name(entry.name):
            with contextlib.suppress(OSError):
                if entry.name.endswith(".md") or entry.is_dir(follow_symlinks=False):
                    skipped.append(shown_name(child))
            continue
        try:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith("."):  # .dreams and other tool folders
                    yield from _walk(Path(entry.path), child, skipped)
            elif entry.is_file(follow_symlinks=False) and entry.name.endswith(".md"):
                yield child, entry.stat(follow_symlinks=False)
        except OSError:
            continue


def _archive_parts(archive_dir: str) -> list[str]:
    """``archive.dir``'s parts, as a POSIX path without empty or ``.`` parts."""
    return [p for p in archive_dir.replace("\\", "/").split("/") if p not in ("", ".")]


def archive_folder_of(rel: str, archive_dir: str) -> tuple[str, bool] | None:
    """The archive folder an archived file ``rel`` is in, for tidying up after a restore. Pure.

    ``(folder, removable)``: with ``{month}`` the month's folder, which may go once empty;
    without, the fixed archive folder, which stays. None when ``rel`` is not in the archive.
    """
    template = "/".join(_archive_parts(archive_dir))
    if "{month}" in template:
        head, _, tail = template.partition("{month}")
        month_part = tail.split("/", 1)[0]
        pattern = re.escape(head) + r"\d{4}-\d{2}" + re.escape(month_part)
        m = re.match(f"({pattern})/", rel)
        return (m.group(1), True) if m else None
    if template and rel.startswith(template + "/"):
        return template, False
    return None


RETIRED_FOLDER = "retired"  # retire's sections, below the archive root: not expire's notes


def retired_archive_of(archive_dir: str, rel: str) -> str:
    """Where retire keeps the sections it took from ``rel``: ``<archive root>/retired/<rel>``
    (``memory-archive`` when even the archive's first folder is a month's)."""
    return f"{archive_root(archive_dir) or 'memory-archive'}/{RETIRED_FOLDER}/{rel}"


def files_in_archive(workspace: Path, archive_dir: str) -> list[str]:
    """The workspace-relative paths of the notes in the archive's folders as they are on
    disk (regular files in expire's layout: ``memory-archive/<YYYY-MM>/<path>``; no hidden
    side files), journaled or not: what a state database started anew no longer knows."""
    root = archive_root(archive_dir)
    if not root:
        return []
    out = []
    base = workspace / root
    for folder, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if not d.startswith(".")
                   and not (folder == str(base) and d == RETIRED_FOLDER)]  # fmt: skip
        for name in files:
            if name.startswith("."):
                continue
            full = os.path.join(folder, name)
            rel = Path(full).relative_to(workspace).as_posix()
            if archive_folder_of(rel, archive_dir) is not None and os.path.isfile(full) and \
                    not os.path.islink(full):  # fmt: skip
                out.append(rel)
    return sorted(out)


def unjournaled_in_archive(ws: Path, archive_dir: str, journaled: set[str]) -> list[str]:
    """The notes in the workspace's archive that no journaled move put there (``journaled``:
    the resolved archived paths the journal knows): a state database started anew, or the
    archive copied in by hand. memoryd cannot undo what it has no record of; said, not
    guessed."""
    try:
        on_disk = files_in_archive(ws, archive_dir)
    except OSError:
        return []
    return [rel for rel in on_disk if os.path.realpath(ws / rel) not in journaled]


def archive_root(archive_dir: str) -> str:
    """The workspace-relative folder every archived note is below: ``archive.dir`` up to its
    first ``{…}`` part (``memory-archive`` of ``memory-archive/{month}``; ``memory`` of
    ``memory/archive-{month}``); ``""`` when even its first part changes. Pure."""
    static: list[str] = []
    for part in _archive_parts(archive_dir):
        if "{" in part:
            break
        static.append(part)
    return "/".join(static)


def archive_is_searched(archive_dir: str, workspace: Path, extra: tuple[Path, ...]) -> bool:
    """Whether OpenClaw's own search reaches the archive: it lies inside ``memory/``, or its
    root (:func:`archive_root`) inside one of ``extra`` (``memory.search.extraPaths``; an
    entry's file pattern is not read). Pure but for resolving symlinks."""
    parts = _archive_parts(archive_dir)
    if parts[:1] == [MEMORY_DIR] and len(parts) >= 2:
        return True
    fixed = archive_root(archive_dir)
    if not fixed:
        return False
    root = os.path.realpath(workspace / fixed)
    for e in extra:
        folder = os.path.realpath(e)
        if root == folder or root.startswith(folder.rstrip(os.sep) + os.sep):
            return True
    return False


def archive_excludes(workspace: Path, archive_dir: str) -> tuple[str, ...]:
    """Workspace-relative folders of the archive that lie inside ``memory/``.

    ``memory/archive-{month}`` → every existing ``memory/archive-YYYY-MM`` folder;
    a fixed folder such as ``memory/archive/{month}`` → ``memory/archive``.
    Archives outside ``memory/`` are never listed anyway.
    """
    parts = _archive_parts(archive_dir)  # (`memory/./archive-{month}` is memory/archive-…)
    if not parts or parts[0] != "memory" or len(parts) < 2:
        return ()
    static: list[str] = []
    for part in parts:
        if "{" in part:
            break
        static.append(part)
    if len(static) >= 2:
        return ("/".join(static),)
    # {month} is a run's YYYY-MM: the user's own ``memory/archive-ideas/`` is no archive.
    pattern = re.compile(
        r"\d{4}-\d{2}".join(re.escape(piece) for piece in parts[len(static)].split("{month}"))
    )
    folder = workspace.joinpath(*static)
    out = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return ()
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and pattern.fullmatch(entry.name):
            out.append("/".join([*static, entry.name]))
    return tuple(sorted(out))
