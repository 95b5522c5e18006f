"""The tier store's records: each note's row in ``tier_files``, its marks, and refcount.json.

The state of each note (when it was created, entered its tier, was summarised)
is in the ``tier_files`` table; its marks (user-marked, promoted) are in the
``marks`` table under the note's hit key ``tiers/<name>``, the one place marks
live. ``refcount.json`` beside the tier root is a read-only view of both for the
seed's tools, rewritten atomically after each change.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..fsutil import read_regular, write_atomic
from ..store import Store
from .layout import (
    DAY,
    KEY_PREFIX,
    TIERS,
    Placement,
    hit_key,
    note_of_key,
    scan_store,
    summary_name,
)


@dataclass(frozen=True)
class NoteRecord:
    """A note's row in ``tier_files``, with its marks (from ``marks``) beside it."""

    name: str
    tier: str
    created: float
    entered: float
    summarized: float | None = None
    user_marked: bool = False
    promoted: bool = False


def notes_with_mark(store: Store, kind: str) -> set[str]:
    """The notes that carry a mark of ``kind`` (``marked``, ``promoted``) in ``marks``, the
    one place a mark lives. A mark on a summary's key counts for its note."""
    return {n for k in store.marks(kind) if (n := note_of_key(k))}


def note_owner(
    root: Path, placements: Mapping[str, Placement], names: Iterable[str]
) -> Mapping[str, str]:
    """Each of ``names`` that is another spelling of a note in the store → that note
    (``warm/Plan.md`` for ``warm/plan.md`` on a Mac: docs/paths.md); the note files under
    ``root`` are what the file system is asked about."""
    from ..pathmatch import attribution_for

    probe = [f.rel for place in placements.values() for f in place.files]
    return attribution_for(root, list(placements), names, probe=probe).owner


def load_records(store: Store, names: Iterable[str] | None = None) -> dict[str, NoteRecord]:
    """Every note's record (or only those of ``names``), its marks read from ``marks``."""
    sql = "SELECT name, tier, created, entered, summarized FROM tier_files"
    if names is None:
        rows = store.conn.execute(sql)
    else:
        wanted = sorted(set(names))
        rows = store.conn.execute(f"{sql} WHERE name IN ({','.join('?' * len(wanted))})", wanted)
    marked = notes_with_mark(store, "marked")
    promoted = notes_with_mark(store, "promoted")
    return {
        r[0]: NoteRecord(r[0], r[1], r[2], r[3], r[4], r[0] in marked, r[0] in promoted)
        for r in rows
    }


def save_records(store: Store, records: Iterable[NoteRecord]) -> None:
    """Insert or update records (call inside a transaction). Marks live in ``marks``
    (:func:`mark_rescued`); the table's ``user_marked`` / ``promoted`` columns are unread."""
    store.conn.executemany(
        "INSERT INTO tier_files(name, tier, created, entered, summarized) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET tier = excluded.tier, "
        "created = excluded.created, entered = excluded.entered, "
        "summarized = excluded.summarized",
        [(r.name, r.tier, r.created, r.entered, r.summarized) for r in records],
    )


def mark_rescued(
    store: Store, records: dict[str, NoteRecord], names: Iterable[str], by: str
) -> None:
    """Mark notes brought back from forgotten/ (rescued means wanted: never deleted), in
    ``marks`` (call inside a transaction); ``records`` is updated to match."""
    for name in names:
        store.set_mark(hit_key(name), "marked", f"recovered from forgotten/ by {by}")
        rec = records.get(name)
        if rec is not None and not rec.user_marked:
            records[name] = replace(rec, user_marked=True)


def tier_of(place: Placement) -> str:
    """The tier a note is in: its original's, else its summary's ('missing' with no files)."""
    if place.originals:
        return place.originals[0].tier
    if place.summaries:
        return place.summaries[0].tier
    return "missing"


def reconcile(
    placements: Mapping[str, Placement], records: Mapping[str, NoteRecord], now: float
) -> dict[str, NoteRecord]:
    """Records brought in line with the disk (only those that changed are returned). A note
    found in a tier its record does not say entered it *now*: that never makes a deletion
    earlier."""
    changed: dict[str, NoteRecord] = {}
    for name, place in placements.items():
        tier = tier_of(place)
        rec = records.get(name)
        if rec is None or rec.tier in ("deleted", "missing"):
            # A new note, or a new one under a gone note's name (checkpoint.md is reused
            # all the time): it starts fresh, nothing inherited from the old record.
            created = min(f.mtime for f in place.files)
            summarized = now if place.summaries else None
            changed[name] = NoteRecord(name, tier, created, now, summarized)
        elif rec.tier != tier:
            summarized = rec.summarized
            if place.summaries and summarized is None:
                summarized = now
            changed[name] = replace(rec, tier=tier, entered=now, summarized=summarized)
        elif place.summaries and rec.summarized is None:
            changed[name] = replace(rec, summarized=now)
    for name, rec in records.items():
        if name not in placements and rec.tier not in ("deleted", "missing"):
            changed[name] = replace(rec, tier="missing", entered=now)
    return changed


def last_retrievals(store: Store) -> dict[str, float]:
    """note → time of its latest hit (transcript hits and recalls alike)."""
    out: dict[str, float] = {}
    rows = store.conn.execute(
        "SELECT memory_path, MAX(ts) FROM hits WHERE memory_path >= ? AND memory_path < ? "
        "GROUP BY memory_path",
        (KEY_PREFIX, KEY_PREFIX[:-1] + chr(ord("/") + 1)),
    )
    for key, ts in rows:
        note = note_of_key(key)
        if note is not None and ts is not None and ts > out.get(note, float("-inf")):
            out[note] = ts
    return out


# --------------------------------------------------------------------------- refcount.json


def refcount_path(root: Path) -> Path:
    """The seed's ``~/.openclaw/refcount.json``: beside the tier root."""
    return root.parent / "refcount.json"


def refcount_document(
    store: Store,
    now: float,
    records: Mapping[str, NoteRecord] | None = None,
    names: Iterable[str] | None = None,
) -> dict[str, dict[str, object]]:
    """The seed's refcount.json, built from the database (the source of truth): keys are
    ``<tier>/<name>`` of the note's current place; ``timestamps`` every retrieval, ``7d``
    those of the last 7 days. One grouped query."""
    stamps: dict[str, list[int]] = {}
    if names is None:
        where, args = "memory_path >= ? AND memory_path < ?", [KEY_PREFIX, KEY_PREFIX[:-1] + "0"]
    else:
        only = sorted(set(names))
        keys = [hit_key(n) for n in only] + [hit_key(summary_name(n)) for n in only]
        where, args = f"memory_path IN ({','.join('?' * len(keys))})", keys
    rows = store.conn.execute(
        "SELECT memory_path, group_concat(CAST(ts AS INTEGER)) FROM "
        f"(SELECT memory_path, ts FROM hits WHERE {where} ORDER BY memory_path, ts) "
        "GROUP BY memory_path",
        args,
    )
    for key, joined in rows:
        note = note_of_key(key)
        if note is not None and joined:
            ts = [int(x) for x in joined.split(",")]
            if note in stamps:  # hits on the note and on its summary
                ts += stamps[note]
            ts.sort()  # group_concat promises no order
            stamps[note] = ts
    doc: dict[str, dict[str, object]] = {}
    week = now - 7 * DAY
    recs = load_records(store, names) if records is None else records
    for name in sorted(recs):
        rec = recs[name]
        if rec.tier not in TIERS:
            continue
        ts = stamps.get(name, [])
        doc[f"{rec.tier}/{name}"] = {
            "total": len(ts),
            "7d": len(ts) - bisect.bisect_left(ts, week),
            "timestamps": ts,
            "user_marked": rec.user_marked,
            "summarized": rec.summarized is not None,
            "created": int(rec.created),
            "promoted": rec.promoted,
        }
    return doc


def write_refcount(
    store: Store,
    root: Path,
    now: float,
    records: Mapping[str, NoteRecord] | None = None,
    *,
    only: Iterable[str] | None = None,
) -> bool:
    """Rewrite refcount.json from the database when its content changed; True if written.
    Organize rebuilds the whole file every run; a recall rebuilds only its notes' entries
    (``only``), keeping the others as the file has them, so recall stays fast."""
    import orjson

    path = refcount_path(root)
    try:  # (never through a symlink, never waiting on a FIFO put in its place)
        old: bytes | None = read_regular(path)[0]
    except OSError:
        old = None
    doc: dict[str, Any] | None = None
    if only is not None and old is not None:
        only = list(only)
        try:
            doc = orjson.loads(old)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict):
            for name in only:
                for tier in TIERS:
                    doc.pop(f"{tier}/{name}", None)
            doc.update(refcount_document(store, now, None, only))
        else:
            doc = None
    if doc is None:
        doc = refcount_document(store, now, records)
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    if old == data:
        return False
    write_atomic(path, data)
    return True


# --------------------------------------------------------------------------- promotion


def promote_inputs(root: Path, store: Store, now: float, tz: Any) -> list[tuple[Any, str]]:
    """(signals, text) of every note in the tier store but the deleted, for the promote
    rules: measured under its hit key ``tiers/<name>`` (its summary's hits count for it),
    with the text of its original, else of its summary."""
    from ..signals import file_signals, load_hits, read_text
    from ..workspace import MemoryFile

    placements = scan_store(root)
    if not placements:
        return []
    from ..pathmatch import merged_hits

    hits = load_hits(store.conn, now, since=None)
    note_of = {key: note for key in hits if (note := note_of_key(key)) is not None}
    # Hits under another spelling of a note's name are the note's (docs/paths.md), as a
    # summary's are: one per call, so hot/x.md and hot/x.gist.md in one search is one.
    owner = note_owner(root, placements, set(note_of.values()))
    to_note = {key: hit_key(owner.get(note, note)) for key, note in note_of.items()}
    by_key = merged_hits(hits, {key: to for key, to in to_note.items() if key != to})
    out: list[tuple[Any, str]] = []
    for name, place in placements.items():
        f = (place.originals or place.summaries)[0]
        note_hits = by_key.get(hit_key(name), [])
        sig = file_signals(MemoryFile(hit_key(name), f.size, f.mtime), note_hits, now, tz)
        out.append((sig, read_text(root, f.rel)))
    return out
