"""Session injection: the hot/ notes a new session starts with (seed 004: 自动注入 session).

Kept apart from :mod:`.recall`, and light to import: the OpenClaw plugin runs ``memoryd
inject --session`` before a session's first turn, and that turn waits for it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from ..fsutil import read_text
from .layout import note_of, scan_tier


class Injection(NamedTuple):
    """What a session starts with (a named tuple: no :mod:`dataclasses` on this path)."""

    text: str
    included: list[str]
    omitted: list[str]
    truncated: bool
    already_there: list[str]  # left out by ``skip``


def inject(root: Path, max_chars: int, skip: Callable[[str], bool] | None = None) -> Injection:
    """The hot/ notes for a new session, newest first, within ``max_chars`` characters.

    Whole notes only, in recency order, stopping at the first that does not fit
    (so what is injected is always "everything since T"). When not even the
    newest fits, its beginning is given, marked as cut. A summary in hot/ is
    left out when its original is there too (the original says more). A note for which
    ``skip(text)`` is true (its text is already in the session's bootstrap) is left out
    and named in ``already_there``.
    """
    files = scan_tier(root, "hot")
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
    for i, f in enumerate(chosen):
        try:
            body = read_text(root / "hot" / f.filename).rstrip() + "\n"
        except OSError:
            continue
        if skip is not None and skip(body):
            already.append(f.filename)
            continue
        block = f"## hot/{f.filename}\n{body}\n"
        if used + len(block) <= max_chars:
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
        return Injection("".join(parts), included, omitted, truncated, already)
    return Injection("".join(parts), included, [], truncated, already)


def stamp(path: Path | str) -> str:
    """A file's identity for a cache: ``<mtime_ns>:<size>``, or ``missing``.

    The plugin keeps the last injection and checks these stamps (a few ``stat`` calls)
    instead of running memoryd again for every new session; any change runs it again.
    """
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    return f"{st.st_mtime_ns}:{st.st_size}"


def watch_list(root: Path, others: Iterable[Path | str]) -> list[dict[str, str]]:
    """The stamps of what an injection depends on: hot/ (the folder and each file in it)
    and ``others`` (the bootstrap files, the configurations)."""
    hot = root / "hot"
    paths: list[Path | str] = [hot]
    with contextlib.suppress(OSError):
        paths += sorted(str(e.path) for e in os.scandir(hot))
    paths += list(others)
    return [{"path": str(p), "stamp": stamp(p)} for p in dict.fromkeys(paths)]
