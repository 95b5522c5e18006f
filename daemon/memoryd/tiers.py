"""The tier store of seed 004: layout, note records, and the pure decisions of organize.

Layout (``[tiers] root``, default ``<openclaw state dir>/memory_fs``)::

    hot/        < hot_hours by mtime       the original, complete (injected into sessions)
    warm/       < warm_days                the original, complete
    gist/       warm_days .. gist_days     a summary copy; warm/ keeps the original
    forgotten/  no retrieval for forget_after_days; deleted delete_after_days later

A *note* is one file name. Its original lives in exactly one of hot/, warm/,
forgotten/; its summary (when it has one) is ``gist/<name>``, or, when the
summary has to share a folder with the original (a gist hit brings both back to
hot/, forgetting takes both to forgotten/), ``<stem>.gist.md`` beside it. Names
ending in ``.gist.md`` are therefore reserved for summaries. Hits are keyed
``tiers/<name>`` whatever tier the file is in, so a note keeps its history.

The decisions are pure: :func:`plan_note` takes where a note's files are, its
record and its last retrieval, and returns the actions that bring it to the
tier the seed's rules give, each with its reason. Because the plan is computed
from the files on disk every time, organize is idempotent and a run killed
half-way is finished by the next one.

The state of each note (when it was created, entered its tier, was summarised,
marked or promoted) is in the ``tier_files`` table; ``refcount.json`` beside the
tier root is a read-only view of it for the seed's tools, rewritten atomically
after each change.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import stat
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .config import TiersConfig
from .mover import write_all
from .store import Store
from .workspace import is_utf8_name, shown_name

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


@dataclass(frozen=True)
class TierFile:
    tier: str
    filename: str
    mtime: float
    size: int

    @property
    def rel(self) -> str:
        return f"{self.tier}/{self.filename}"


@dataclass(frozen=True)
class Placement:
    """Where one note's files are: originals (normally one) and summaries (zero or one)."""

    name: str
    originals: tuple[TierFile, ...] = ()
    summaries: tuple[TierFile, ...] = ()

    @property
    def files(self) -> tuple[TierFile, ...]:
        return self.originals + self.summaries


def ensure_layout(root: Path) -> None:
    """Create the root and its four tier folders (never through a symlink)."""
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


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class NoteRecord:
    """A note's row in ``tier_files``."""

    name: str
    tier: str
    created: float
    entered: float
    summarized: float | None = None
    user_marked: bool = False
    promoted: bool = False


def load_records(store: Store, names: Iterable[str] | None = None) -> dict[str, NoteRecord]:
    """Every note's record (or only those of ``names``), user marks and promotions merged in."""
    sql = "SELECT name, tier, created, entered, summarized, user_marked, promoted FROM tier_files"
    if names is None:
        rows = store.conn.execute(sql)
    else:
        wanted = sorted(set(names))
        rows = store.conn.execute(f"{sql} WHERE name IN ({','.join('?' * len(wanted))})", wanted)
    marked = {n for k in store.marks("marked") if (n := note_of_key(k))}
    promoted = {n for k in store.marks("promoted") if (n := note_of_key(k))}
    return {
        r[0]: NoteRecord(
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            bool(r[5]) or r[0] in marked,
            bool(r[6]) or r[0] in promoted,
        )
        for r in rows
    }


def save_records(store: Store, records: Iterable[NoteRecord]) -> None:
    """Insert or update records (call inside a transaction)."""
    store.conn.executemany(
        "INSERT INTO tier_files(name, tier, created, entered, summarized, user_marked, promoted) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET tier = excluded.tier, "
        "created = excluded.created, entered = excluded.entered, "
        "summarized = excluded.summarized, user_marked = excluded.user_marked, "
        "promoted = excluded.promoted",
        [
            (
                r.name,
                r.tier,
                r.created,
                r.entered,
                r.summarized,
                int(r.user_marked),
                int(r.promoted),
            )
            for r in records
        ],
    )


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
    """Records brought in line with the disk: new notes get one, moved notes a new tier.

    Returns only the records that changed. A note found in a tier its record does
    not say (moved by hand, or a run killed between the move and the update)
    entered it *now*, the conservative reading: it never makes a deletion earlier.
    """
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


# --------------------------------------------------------------------------- policy


@dataclass(frozen=True)
class TierPolicy:
    """The seed's constants, in seconds."""

    hot: float = 3 * HOUR
    warm: float = 7 * DAY
    gist: float = 30 * DAY
    forget: float = 14 * DAY
    delete: float = 30 * DAY
    delete_enabled: bool = True

    @classmethod
    def from_config(cls, t: TiersConfig) -> TierPolicy:
        return cls(
            hot=t.hot_hours * HOUR,
            warm=t.warm_days * DAY,
            gist=t.gist_days * DAY,
            forget=t.forget_after_days * DAY,
            delete=t.delete_after_days * DAY,
            delete_enabled=t.delete_enabled,
        )


@dataclass(frozen=True)
class Action:
    """One step of a plan. Paths are relative to the tier root (``warm/x.md``)."""

    op: str  # move | gist | delete | conflict
    note: str
    src: str
    dst: str | None
    reason: str
    step: int  # 0 retrieval (back up), then the seed's 1 layering, 2 forgetting, 3 clean-up

    def as_dict(self) -> dict[str, object]:
        return {
            "op": self.op,
            "note": self.note,
            "src": self.src,
            "dst": self.dst,
            "reason": self.reason,
            "step": self.step,
        }


def _age(seconds: float) -> str:
    if seconds < 2 * DAY:
        return f"{seconds / HOUR:.1f} h"
    return f"{seconds / DAY:.1f} d"


def _limit(seconds: float) -> str:
    if seconds < 2 * DAY:
        return f"{seconds / HOUR:g} h"
    return f"{seconds / DAY:g} d"


def plan_note(
    place: Placement,
    rec: NoteRecord | None,
    last_hit: float | None,
    now: float,
    pol: TierPolicy,
) -> list[Action]:
    """The actions organize takes for one note, in order, each with the numbers behind it.

    Step 0: a note retrieved since it entered its tier goes back up (warm → hot,
    gist → summary and original to hot, forgotten → warm, marked by the caller).
    Step 1 (mtime): an original in hot/ older than ``hot`` moves to warm/; a warm
    original older than ``warm`` without a summary gets one in gist/ (a copy: the
    original stays). Step 2: a note in warm/ or gist/ whose last retrieval (or
    creation, if never retrieved) is older than ``forget`` goes to forgotten/
    with its summary; so does one never retrieved at all once older than ``gist``.
    Step 3: files that have been in forgotten/ longer than ``delete`` are deleted,
    never those of a user-marked note.

    The plan is a fixpoint: applied, planning again gives nothing. A note with its
    original in two tiers at once is a conflict: reported, never touched.
    """
    name = place.name
    if len(place.originals) > 1 or len(place.summaries) > 1:
        where = ", ".join(f.rel for f in place.files)
        return [
            Action(
                "conflict",
                name,
                where,
                None,
                "the note is in more than one place; resolve by hand (memoryd never overwrites)",
                0,
            )
        ]
    orig = place.originals[0] if place.originals else None
    summ = place.summaries[0] if place.summaries else None
    o_tier = orig.tier if orig else None
    s_tier = summ.tier if summ else None
    actions: list[Action] = []

    def move_summary(to_tier: str, reason: str, step: int) -> None:
        nonlocal s_tier
        assert s_tier is not None
        actions.append(
            Action(
                "move", name, summary_rel(name, s_tier), summary_rel(name, to_tier), reason, step
            )
        )
        s_tier = to_tier

    o_mtime = orig.mtime if orig else 0.0
    s_mtime = summ.mtime if summ else 0.0
    rotated = False  # moved back up by a retrieval in this plan: its decay starts over

    # Step 0: a retrieval since the note entered its tier moves it back up (the seed's
    # reverse rotation), whether it came from `memoryd recall` or from the agent's own
    # memory_search / memory_get: being read is being needed. A moved file is
    # "touched" (its decay starts over), so the steps below see it as new.
    # (A retrieval already older than ``forget`` would be undone by step 2 at once.)
    if (
        rec is not None
        and last_hit is not None
        and last_hit > rec.entered
        and now - last_hit <= pol.forget
    ):
        hit_tier = o_tier or s_tier
        if hit_tier in ("warm", "gist", "forgotten"):
            when = f"retrieved {_age(now - last_hit)} ago"
            for src, dst, why in rotation(place, hit_tier):
                rotated = True
                actions.append(Action("move", name, src, dst, f"{why} ({when})", 0))
                if orig is not None and src == orig.rel:
                    o_tier, o_mtime = dst.split("/", 1)[0], now
                else:
                    s_tier, s_mtime = dst.split("/", 1)[0], now

    # Step 1: layering by mtime.
    if orig is not None and o_tier == "hot" and now - o_mtime > pol.hot:
        actions.append(
            Action(
                "move",
                name,
                original_rel(name, "hot"),
                original_rel(name, "warm"),
                f"mtime {_age(now - o_mtime)} old > {_limit(pol.hot)}",
                1,
            )
        )
        o_tier = "warm"
    if summ is not None and s_tier == "hot" and o_tier != "hot":
        if o_tier is not None:
            move_summary("gist", f"summary follows its note out of hot/ (note in {o_tier}/)", 1)
        elif now - s_mtime > pol.hot:
            move_summary("gist", f"mtime {_age(now - s_mtime)} old > {_limit(pol.hot)}", 1)
    if summ is not None and s_tier == "warm":
        move_summary("gist", "a summary belongs in gist/", 1)
    if summ is not None and s_tier == "forgotten" and o_tier in ("hot", "warm"):
        move_summary("gist", f"summary follows its note out of forgotten/ (note in {o_tier}/)", 1)
    if orig is not None and o_tier == "warm" and summ is None and now - o_mtime > pol.warm:
        actions.append(
            Action(
                "gist",
                name,
                original_rel(name, "warm"),
                summary_rel(name, "gist"),
                f"mtime {_age(now - o_mtime)} old > {_limit(pol.warm)}: "
                "summary copy, original kept in warm/",
                1,
            )
        )
        s_tier = "gist"

    # Step 2: forgetting.
    in_warm_or_gist = o_tier == "warm" or (o_tier is None and s_tier == "gist")
    if in_warm_or_gist and not rotated:
        created = rec.created if rec else min(f.mtime for f in place.files)
        last_used = max(created, last_hit) if last_hit is not None else created
        reason = None
        if now - last_used > pol.forget:
            what = "last retrieval" if last_hit is not None and last_hit >= created else "created"
            reason = f"{what} {_age(now - last_used)} ago > {_limit(pol.forget)}"
        elif last_hit is None and now - created > pol.gist:
            reason = f"never retrieved, created {_age(now - created)} ago > {_limit(pol.gist)}"
        if reason is not None:
            if o_tier == "warm":
                actions.append(
                    Action(
                        "move",
                        name,
                        original_rel(name, "warm"),
                        original_rel(name, "forgotten"),
                        reason,
                        2,
                    )
                )
                o_tier = "forgotten"
            if s_tier is not None and s_tier != "forgotten":
                move_summary(
                    "forgotten",
                    reason if o_tier is None else "summary follows its note to forgotten/",
                    2,
                )
            return actions  # just entered forgotten/: its clock starts now
    if o_tier == "forgotten" and s_tier is not None and s_tier != "forgotten":
        move_summary("forgotten", "summary follows its note to forgotten/", 2)

    # Step 3: clean-up of forgotten/.
    in_forgotten = o_tier == "forgotten" or (o_tier is None and s_tier == "forgotten")
    if in_forgotten and pol.delete_enabled:
        entered = rec.entered if rec is not None and rec.tier == "forgotten" else now
        if now - entered > pol.delete and not (rec is not None and rec.user_marked):
            reason = f"in forgotten/ for {_age(now - entered)} > {_limit(pol.delete)}"
            if o_tier == "forgotten":
                actions.append(
                    Action("delete", name, original_rel(name, "forgotten"), None, reason, 3)
                )
            if s_tier == "forgotten":
                actions.append(
                    Action("delete", name, summary_rel(name, "forgotten"), None, reason, 3)
                )
    return actions


def plan_store(
    placements: Mapping[str, Placement],
    records: Mapping[str, NoteRecord],
    last_hits: Mapping[str, float],
    now: float,
    pol: TierPolicy,
) -> list[Action]:
    """:func:`plan_note` for every note, in name order."""
    out: list[Action] = []
    for name, place in placements.items():
        out.extend(plan_note(place, records.get(name), last_hits.get(name), now, pol))
    return out


# --------------------------------------------------------------------------- recall rotation


def rotation(place: Placement, hit_tier: str) -> list[tuple[str, str, str]]:
    """The seed's reverse rotation for a retrieval in ``hit_tier``: (src, dst, reason) moves.

    hot: nothing. warm: the original back to hot/. gist: the summary *and* the warm
    original back to hot/ (both, so the detail is at hand). forgotten: back to
    warm/ (the summary to gist/), to decay again from there; the caller marks it.
    A destination that is taken is left out (memoryd never overwrites).
    """
    name = place.name
    orig = place.originals[0] if len(place.originals) == 1 else None
    summ = place.summaries[0] if len(place.summaries) == 1 else None
    taken = {f.rel for f in place.files}
    moves: list[tuple[str, str, str]] = []

    def add(src: str, dst: str, reason: str) -> None:
        if src != dst and dst not in taken:
            moves.append((src, dst, reason))

    if hit_tier == "warm" and orig is not None and orig.tier == "warm":
        add(orig.rel, original_rel(name, "hot"), "retrieved in warm/: still relevant")
    elif hit_tier == "gist":
        if summ is not None and summ.tier == "gist":
            add(summ.rel, summary_rel(name, "hot"), "retrieved in gist/: summary back to hot/")
        if orig is not None and orig.tier == "warm":
            add(orig.rel, original_rel(name, "hot"), "retrieved in gist/: original back to hot/")
    elif hit_tier == "forgotten":
        if orig is not None and orig.tier == "forgotten":
            add(orig.rel, original_rel(name, "warm"), "retrieved in forgotten/: back to warm/")
        if summ is not None and summ.tier == "forgotten":
            add(summ.rel, summary_rel(name, "gist"), "retrieved in forgotten/: summary to gist/")
    return moves


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
    """The seed's refcount.json, built from the database (the source of truth).

    Keys are ``<tier>/<name>`` of the note's current place; ``timestamps`` are every
    retrieval (transcript hits and recalls), ``7d`` those of the last 7 days.
    SQLite groups the hits (one row per hit key), so 10,000 notes cost one query.
    """
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


def write_atomic(path: Path, data: bytes) -> None:
    """temp file in the same folder, fsync, os.replace, fsync the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        with contextlib.suppress(OSError):
            os.fsync(dfd)
    finally:
        os.close(dfd)


def write_refcount(
    store: Store,
    root: Path,
    now: float,
    records: Mapping[str, NoteRecord] | None = None,
    *,
    only: Iterable[str] | None = None,
) -> bool:
    """Rewrite refcount.json from the database when its content changed; True if written.

    Transcript hits arrive without telling the tier store, so organize rebuilds the
    whole file every run (comparing first, so an idle run writes nothing). A recall
    changes a few notes: ``only`` rebuilds just their entries from the database and
    keeps the others as the file has them (their ``7d`` is then as of the last
    organize, at most an hour old), which keeps recall fast on a big store.
    """
    import orjson

    path = refcount_path(root)
    try:
        old: bytes | None = path.read_bytes()
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


# --------------------------------------------------------------------------- graveyard


@dataclass(frozen=True)
class BuriedFile:
    """A file about to be deleted: what goes into the month's graveyard archive."""

    rel: str  # forgotten/x.md
    sha256: str
    data: bytes
    mtime: float = field(default=0.0)

    @property
    def entry(self) -> str:
        return f"{self.sha256[:16]}/{self.rel}"


def graveyard_archive(graveyard: Path, now: float) -> Path:
    return graveyard / (datetime.fromtimestamp(now, UTC).strftime("%Y-%m") + ".zip")


def bury(graveyard: Path, now: float, files: list[BuriedFile]) -> Path:
    """Add ``files`` to this month's archive, crash-safely (copy, append, fsync, replace).

    An entry already there (same hash and path, from a run killed after burying)
    is not added twice.
    """
    import shutil

    archive = graveyard_archive(graveyard, now)
    graveyard.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(f".{archive.name}.{os.getpid()}.tmp")
    if archive.exists():
        shutil.copyfile(archive, tmp)
        mode = "a"
    else:
        mode = "w"
    try:
        with zipfile.ZipFile(tmp, mode, compression=zipfile.ZIP_DEFLATED) as zf:
            present = set(zf.namelist())
            for f in files:
                if f.entry in present:
                    continue
                stamp = datetime.fromtimestamp(max(f.mtime, 315532800), UTC).timetuple()[:6]
                info = zipfile.ZipInfo(f.entry, date_time=stamp)
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, f.data)
                present.add(f.entry)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, archive)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dfd = os.open(graveyard, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        with contextlib.suppress(OSError):
            os.fsync(dfd)
    finally:
        os.close(dfd)
    return archive


def expired_archives(graveyard: Path, now: float, keep_days: float) -> list[Path]:
    """Monthly archives whose month ended more than ``keep_days`` ago."""
    out: list[Path] = []
    try:
        names = sorted(os.listdir(graveyard))
    except OSError:
        return out
    for name in names:
        if not name.endswith(".zip") or len(name) != 11:
            continue
        try:
            year, month = int(name[:4]), int(name[5:7])
        except ValueError:
            continue
        nxt = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC).timestamp()
        if now - nxt > keep_days * DAY:
            out.append(graveyard / name)
    return out


# --------------------------------------------------------------------------- promotion


def promote_inputs(root: Path, store: Store, now: float, tz: Any) -> list[tuple[Any, str]]:
    """(signals, text) of every note in the tier store, for the promote rules (issue 3).

    Each note is measured under its hit key ``tiers/<name>`` (hits on its summary
    count for it), with the text of its original, else of its summary. Deleted
    notes are not nominated.
    """
    from .signals import file_signals, load_hits, read_text
    from .workspace import MemoryFile

    placements = scan_store(root)
    if not placements:
        return []
    hits = load_hits(store.conn, now, since=None)
    out: list[tuple[Any, str]] = []
    for name, place in placements.items():
        f = (place.originals or place.summaries)[0]
        note_hits = [*hits.get(hit_key(name), ()), *hits.get(hit_key(summary_name(name)), ())]
        sig = file_signals(MemoryFile(hit_key(name), f.size, f.mtime), note_hits, now, tz)
        out.append((sig, read_text(root, f.rel)))
    return out
