"""Layout of the tier store: the four folders, how a file name maps to a note, what is on disk.

Layout (``[tiers] root``, default ``<openclaw state dir>/memory_fs``; docs/tier-store.md)::

    hot/        < hot_hours by mtime       the original, complete (injected into sessions)
    warm/       < warm_days                the original, complete
    gist/       warm_days .. gist_days     a summary copy; warm/ keeps the original
    forgotten/  no retrieval for forget_after_days; deleted delete_after_days later

A *note* is one file name: its original in one of hot/, warm/, forgotten/; its summary
``gist/<name>``, or ``<stem>.gist.md`` beside the original when they share a folder (names
ending in ``.gist.md`` are reserved). Hits are keyed ``tiers/<name>`` whatever the tier.
This module only reads the disk (and creates the folders); :mod:`.plan` decides.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import NamedTuple

from ..config import Paths
from ..locks import held as held_lock
from ..workspace import is_utf8_name, shown_name

TIERS = ("hot", "warm", "gist", "forgotten")
SUMMARY_SUFFIX = ".gist.md"
KEY_PREFIX = "tiers/"
STAGING = ".memoryd-staging"  # gists are written here, then moved into gist/
HOUR = 3600.0
DAY = 86400.0


# --------------------------------------------------------------------------- names


def is_summary_name(filename: str) -> bool:
    return filename.endswith(SUMMARY_SUFFIX)


def note_of(tier: str, filename: str) -> tuple[str, bool]:
    """(note name, is it a summary) of the file ``<tier>/<filename>``."""
    if tier == "gist":
        return filename, True
    if is_summary_name(filename):
        return filename[: -len(SUMMARY_SUFFIX)] + ".md", True
    return filename, False


def summary_name(note: str) -> str:
    """The name of a note's summary outside gist/: ``x.md`` → ``x.gist.md``."""
    stem = note[:-3] if note.endswith(".md") else note
    return stem + SUMMARY_SUFFIX


def summary_rel(note: str, tier: str) -> str:
    """Root-relative path of a note's summary when it is in ``tier``."""
    return f"gist/{note}" if tier == "gist" else f"{tier}/{summary_name(note)}"


def original_rel(note: str, tier: str) -> str:
    return f"{tier}/{note}"


def hit_key(note: str) -> str:
    return KEY_PREFIX + note


def note_of_key(key: str) -> str | None:
    """The note a hit key belongs to (a hit on a summary counts for its note)."""
    if not key.startswith(KEY_PREFIX):
        return None
    name = key[len(KEY_PREFIX) :]
    if "/" in name or not name:
        return None
    return note_of("hot", name)[0]


def key_of_tier_path(rel: str) -> str | None:
    """The note key (``tiers/<note>``) of a path a person gives for a tier file.

    Accepts ``<tier>/<file>`` relative to the tier root, with or without a leading
    ``tiers/``, and ``tiers/<note>``; a summary names its note. None otherwise.
    """
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if parts and parts[0] == "tiers":
        parts = parts[1:]
    if len(parts) == 2 and parts[0] in TIERS and parts[1].endswith(".md"):
        return hit_key(note_of(parts[0], parts[1])[0])
    if len(parts) == 1 and parts[0].endswith(".md"):
        return hit_key(note_of("hot", parts[0])[0])
    return None


# --------------------------------------------------------------------------- the disk


# Named tuples, not dataclasses: importing :mod:`dataclasses` is a tenth of ``memoryd inject
# --session``, which a session's first turn waits for.
class TierFile(NamedTuple):
    tier: str
    filename: str
    mtime: float
    size: int

    @property
    def rel(self) -> str:
        return f"{self.tier}/{self.filename}"


class Placement(NamedTuple):
    """Where one note's files are: originals (normally one) and summaries (zero or one)."""

    name: str
    originals: tuple[TierFile, ...] = ()
    summaries: tuple[TierFile, ...] = ()

    @property
    def files(self) -> tuple[TierFile, ...]:
        return self.originals + self.summaries


def check_layout(root: Path) -> None:
    """Raise OSError naming a tier folder that is there but no folder of its own (a symlink,
    a file): organize's dry run and its run refuse it alike, before anything is made."""
    if root.exists() and not root.is_dir():
        raise OSError(f"{root}: not a folder; memoryd will not use it as the tier store")
    for tier in TIERS:
        folder = root / tier
        try:
            mode = os.lstat(folder).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(mode):
            what = "a symlink" if stat.S_ISLNK(mode) else "not a folder"
            raise OSError(f"{folder}: {what}; memoryd will not use it as a tier folder")


def ensure_layout(root: Path) -> None:
    """Create the root and its four tier folders (never through a symlink)."""
    check_layout(root)
    root.mkdir(parents=True, exist_ok=True)
    for tier in TIERS:
        folder = root / tier
        with contextlib.suppress(FileExistsError):
            folder.mkdir()
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            raise OSError(f"{folder}: not a folder (a symlink?); memoryd will not use it")


def scan_tier(root: Path, tier: str, skipped: list[str] | None = None) -> list[TierFile]:
    """Regular ``.md`` files directly in ``root/tier`` (symlinks and folders skipped).

    A name that is not UTF-8 is left out and added (readable) to ``skipped``.
    """
    out: list[TierFile] = []
    folder = root / tier
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return out
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for entry in entries:
        name = entry.name
        if not name.endswith(".md") or name.startswith("."):
            continue
        if not is_utf8_name(name):
            if skipped is not None:
                skipped.append(shown_name(f"{tier}/{name}"))
            continue
        try:
            if entry.is_symlink() or not entry.is_file(follow_symlinks=False):
                continue
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        out.append(TierFile(tier, name, st.st_mtime, st.st_size))
    return out


def scan_store(root: Path, skipped: list[str] | None = None) -> dict[str, Placement]:
    """Every note of the store, by name (names that are not UTF-8 go to ``skipped``)."""
    originals: dict[str, list[TierFile]] = {}
    summaries: dict[str, list[TierFile]] = {}
    for tier in TIERS:
        for f in scan_tier(root, tier, skipped):
            note, is_summary = note_of(tier, f.filename)
            (summaries if is_summary else originals).setdefault(note, []).append(f)
    # Files were listed tier by tier in TIERS order, so each list is already ordered.
    return {
        name: Placement(name, tuple(originals.get(name, ())), tuple(summaries.get(name, ())))
        for name in sorted(originals.keys() | summaries.keys())
    }


def placement_of(root: Path, name: str) -> Placement:
    """Where one note's files are, from a handful of ``lstat`` calls (no folder scan)."""
    originals: list[TierFile] = []
    summaries: list[TierFile] = []
    for tier in TIERS:
        rels = [summary_rel(name, tier)]
        if tier != "gist":
            rels.insert(0, original_rel(name, tier))
        for rel in rels:
            try:
                st = os.lstat(root / rel)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                f = TierFile(tier, rel.split("/", 1)[1], st.st_mtime, st.st_size)
                (summaries if note_of(tier, f.filename)[1] else originals).append(f)
    return Placement(name, tuple(originals), tuple(summaries))


# --------------------------------------------------------------------------- memoryd's own places


def tiers_lock(paths: Paths) -> contextlib.AbstractContextManager[None]:
    """One organize or recall at a time on a store (the daemon and a person may race)."""
    return held_lock(paths.memoryd_dir / "tiers.lock")


def staging_dir(root: Path) -> Path:
    """The folder gists are written in before they are moved into gist/ (made if missing)."""
    folder = root / STAGING
    with contextlib.suppress(FileExistsError):
        folder.mkdir()
    if not stat.S_ISDIR(os.lstat(folder).st_mode):
        raise OSError(f"{folder}: not a folder; memoryd will not write gists through it")
    return folder


def clean_staging(root: Path) -> int:
    """Remove gists a killed run left half-way (they are ours, and made again)."""
    folder = root / STAGING
    removed = 0
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return 0
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if entry.is_file(follow_symlinks=False):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed += 1
    return removed
