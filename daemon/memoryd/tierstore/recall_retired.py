"""Recall's last layer: the sections ``memoryd retire`` moved out of a note into its archive
file (``memory-archive/retired/<note>``). A section found there is shown, with its text, where
it came from and when; nothing moves (it goes back into its note with ``memoryd restore
--last``, or by copying it). Read-only."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from ..fsutil import read_regular
from ..workspace import relative_to_workspace

if TYPE_CHECKING:
    from ..config import Paths
    from ..store import Store

RETIRED = "retired"  # the layer's name in recall's answer
_ENTRY = re.compile(
    r"^<!-- memoryd retired from (?P<src>.+?) lines (?P<first>\d+)-(?P<last>\d+) "
    r"on (?P<when>\S+) \((?P<batch>[^)]*)\) -->$",
    re.M,
)
Matcher = Callable[[bytes, list[str], str, bool | None], tuple[tuple[str, ...], int, bool, str]]


class RetiredSection(NamedTuple):
    source: str  # the note it came from (workspace-relative)
    archive: str  # its archive file (workspace-relative)
    first_line: int
    last_line: int
    when: str
    text: str


def archive_files(store: Store) -> list[tuple[str, str]]:
    """(note, archive file) of every note a retire ever rewrote (absolute paths)."""
    try:
        rows = store.conn.execute(
            "SELECT DISTINCT src, archive FROM retires WHERE undo_of IS NULL "
            "AND state IN ('done', 'undone') ORDER BY archive"
        ).fetchall()
    except sqlite3.OperationalError:  # a database of before migration 12, opened read-only
        return []
    return [(str(a), str(b)) for a, b in rows]


def entries(text: str) -> list[tuple[re.Match[str], str]]:
    """Each retired section of an archive file: its origin line and its text."""
    found = list(_ENTRY.finditer(text))
    out = []
    for k, m in enumerate(found):
        end = found[k + 1].start() if k + 1 < len(found) else len(text)
        out.append((m, text[m.end() + 1 : end].rstrip("\n") + "\n"))
    return out


def search_retired(
    paths: Paths, store: Store, words: list[str], match: Matcher
) -> list[tuple[RetiredSection, tuple[str, ...], int, str]]:
    """The retired sections holding any of ``words``, most words first, then most often."""
    out = []
    ws = paths.workspace
    for _src, archive in archive_files(store):
        try:
            text = read_regular(archive)[0].decode("utf-8", errors="replace")
        except OSError:
            continue
        for m, body in entries(text):
            found, occ, _tag, snippet = match(body.encode("utf-8"), words, RETIRED, None)
            if not found:
                continue
            sec = RetiredSection(
                m["src"], relative_to_workspace(ws, archive) or archive,
                int(m["first"]), int(m["last"]), m["when"], body,
            )  # fmt: skip
            out.append((sec, found, occ, snippet))
    out.sort(key=lambda r: (-len(r[1]), -r[2], r[0].source, r[0].first_line))
    return out


def shown(sec: RetiredSection, found: tuple[str, ...], occ: int, snippet: str) -> dict[str, Any]:
    """One retired section as recall shows it."""
    return {
        "note": sec.source,
        "path": sec.archive,
        "now": None,
        "summary": False,
        "words": list(found),
        "occurrences": occ,
        "tag_match": False,
        "snippet": snippet,
        "retired_at": sec.when,
        "lines": [sec.first_line, sec.last_line],
        "text": sec.text,
    }
