"""Session injection: the hot/ notes a new session starts with (自动注入 session).

Kept apart from :mod:`.recall`, and light to import: the OpenClaw plugin runs ``memoryd
inject --session`` before a session's first turn, and that turn waits for it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from .. import faults
from ..fsutil import BINARY, looks_binary, not_a_note, read_note
from .layout import note_of, scan_tier

# UTF-8 spends at most 4 bytes on a character: a note's first ``4 * budget`` bytes hold all an
# injection of ``budget`` characters can show (a huge note read whole would miss the deadline).
BYTES_PER_CHAR = 4


class Injection(NamedTuple):
    """What a session starts with (a named tuple: no :mod:`dataclasses` on this path)."""

    text: str
    included: list[str]
    omitted: list[str]
    truncated: bool
    already_there: list[str]  # left out by ``skip``
    not_notes: list[str]  # left out: not a regular file (a FIFO, ...), or binary, when read


def inject(root: Path, max_chars: int, skip: Callable[[str], bool] | None = None) -> Injection:
    """The hot/ notes for a new session, newest first, within ``max_chars`` characters.

    Whole notes only, stopping at the first that does not fit (what is injected is always
    "everything since T"); when not even the newest fits, its beginning, marked as cut. A
    summary is left out when its original is there too; a note ``skip(text)`` says is in
    the bootstrap already is named in ``already_there``, a file that is no note in
    ``not_notes``. Each note is read only as far as the budget left could show.
    """
    files = scan_tier(root, "hot")
    faults.point("inject.listed")
    originals = {f.filename for f in files if not note_of("hot", f.filename)[1]}
    chosen = [
        f
        for f in files
        if not (note_of("hot", f.filename)[1] and note_of("hot", f.filename)[0] in originals)
    ]
    chosen.sort(key=lambda f: (-f.mtime, f.filename))
    parts: list[str] = []
    included: list[str] = []
    used = 0
    truncated = False
    already: list[str] = []
    not_notes: list[str] = []
    for i, f in enumerate(chosen):
        header = f"## hot/{f.filename}\n"
        limit = BYTES_PER_CHAR * max(0, max_chars - used - len(header)) + BYTES_PER_CHAR
        path = root / "hot" / f.filename
        got = read_note(path, limit)
        if got is None:
            if os.path.lexists(path):  # (else it was moved meanwhile: nothing to say)
                not_notes.append(f.filename)
            continue
        data, size = got
        if looks_binary(data):
            not_a_note(path, BINARY)
            not_notes.append(f.filename)
            continue
        whole = len(data) >= size
        body = data.decode("utf-8", errors="replace")
        body = body.rstrip() + "\n" if whole else body
        if whole and skip is not None and skip(body):
            already.append(f.filename)
            continue
        block = f"{header}{body}\n"
        if whole and used + len(block) <= max_chars:
            parts.append(block)
            included.append(f.filename)
            used += len(block)
            continue
        rest = i
        if not included and max_chars > 0:
            marker = "\n[… cut by memoryd inject --max-chars]\n"
            room = max_chars - len(marker)
            parts.append(block[:room] + marker if room > 0 else block[:max_chars])
            included.append(f.filename)
            truncated = True
            rest = i + 1
        omitted = [g.filename for g in chosen[rest:]]
        return Injection("".join(parts), included, omitted, truncated, already, not_notes)
    return Injection("".join(parts), included, [], truncated, already, not_notes)


def stamp(path: Path | str, *, follow: bool = True) -> str:
    """A file's identity for the plugin's cache of the last injection: ``<mtime_ns>:<size>``,
    or ``missing``. ``follow=False``: the name's own stamp (``lstat``)."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return "missing"
    return f"{st.st_mtime_ns}:{st.st_size}"


def _hot_notes(hot: Path) -> list[str]:
    """The names in hot/ an injection may read: regular files (by the entry's own type, a
    symlink is never one), ``.md``, not hidden."""
    out: list[str] = []
    with contextlib.suppress(OSError):
        for e in os.scandir(hot):
            with contextlib.suppress(OSError):
                if (
                    e.name.endswith(".md")
                    and not e.name.startswith(".")
                    and e.is_file(follow_symlinks=False)
                ):
                    out.append(str(e.path))
    return sorted(out)


# At most this many hot/ notes are stamped for the plugin's cache, the newest first
# (docs/benchmarks.md). A capped list is valid for WATCH_PARTIAL_SECONDS only: an edit of a
# note left out of it changes no stamp the plugin checks.
WATCH_NOTES_MAX = 200
WATCH_PARTIAL_SECONDS = 60
# Names of notes left out of an injection listed in the answer (the rest counted).
OMITTED_NAMES_MAX = 50


class Watch(NamedTuple):
    """The stamps the plugin checks, and how many hot/ notes there were to stamp."""

    stamps: list[dict[str, str]]
    notes: int  # in hot/
    notes_stamped: int  # of them, the newest

    def partial(self) -> dict[str, int] | None:
        """What the answer says of a capped list (None: every note is stamped)."""
        if self.notes_stamped >= self.notes:
            return None
        return {
            "notes": self.notes,
            "stamped": self.notes_stamped,
            "valid_seconds": WATCH_PARTIAL_SECONDS,
        }


def watch_list(root: Path, others: Iterable[Path | str], notes_max: int = WATCH_NOTES_MAX) -> Watch:
    """The stamps of what an injection depends on: hot/ (the folder and its newest
    ``notes_max`` notes) and ``others`` (the bootstrap files, the configurations). A file in
    hot/ that is never read (a symlink, a FIFO) is not watched: the folder's stamp is."""
    hot = root / "hot"
    stamped = [(p, stamp(p, follow=False)) for p in _hot_notes(hot)]
    newest = sorted(stamped, key=lambda ps: (-_mtime_ns(ps[1]), ps[0]))[:notes_max]
    watched = [{"path": str(hot), "stamp": stamp(hot)}]
    watched += [{"path": p, "stamp": s} for p, s in sorted(newest)]
    seen = {w["path"] for w in watched}
    for p in dict.fromkeys(str(o) for o in others):
        if p not in seen:
            watched.append({"path": p, "stamp": stamp(p)})
    return Watch(watched, len(stamped), len(newest))


def _mtime_ns(stamp_text: str) -> int:
    """The mtime of a :func:`stamp` (0 for ``missing``)."""
    head = stamp_text.split(":", 1)[0]
    return int(head) if head.isdigit() else 0
