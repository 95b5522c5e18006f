"""Organize, carried out: read the store, bring the records in line, plan, apply.

The shell around the pure plan (:mod:`memoryd.tierstore.plan`), carried out through the
journaled :class:`~memoryd.mover.Mover` one note at a time; a note whose move fails keeps the
rest of its plan for the next run. A deletion happens only once its copy is safely in this
month's graveyard. It survives ``kill -9``: moves are journaled and atomic, gists staged and
then moved in, and the plan is recomputed from the files every run.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import faults
from ..config import Config, Paths
from ..fsutil import NOT_A_NOTE_COUNTER, read_note, take_not_notes, write_new
from ..move_files import MoveError, read_regular_file
from ..move_journal import organize_batch
from ..mover import Mover, mover_for
from ..results import JobOutcome
from ..store import Store
from ..workspace import report_skipped_names
from .gist import document_frequencies, make_gist
from .graveyard import BuriedFile, bury, expired_archives, graveyard_dir
from .layout import (
    Placement,
    check_layout,
    clean_staging,
    ensure_layout,
    scan_store,
    staging_dir,
    tiers_lock,
)
from .plan import Action, TierPolicy, plan_store
from .records import (
    NoteRecord,
    last_retrievals,
    load_records,
    mark_rescued,
    note_owner,
    notes_with_mark,
    reconcile,
    refcount_path,
    save_records,
    write_refcount,
)

log = logging.getLogger("memoryd.organize")

DF_SAMPLE = 200  # notes read to learn which words are common (for distinctive tags)
OPS = ("move", "gist", "delete", "conflict")


# --------------------------------------------------------------------------- results


@dataclass
class ActionOutcome:
    """One planned action and what became of it (no status in a dry run)."""

    action: Action
    status: str | None = None  # done | failed | skipped | pending (while deletions wait)
    error: str | None = None
    method: str | None = None  # how a gist was made (summarizer_command, extractive)
    sha256: str | None = None  # of a deleted file's bytes, as the graveyard keeps them
    graveyard: str | None = None  # <archive>:<entry> of a deleted file

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = self.action.as_dict()
        for key in ("method", "status", "error", "sha256", "graveyard"):
            value = getattr(self, key)
            if value is not None:
                d[key] = value
        return d


@dataclass
class OrganizeResult(JobOutcome):
    """What one organize run planned (dry run) or did."""

    root: Path
    dry_run: bool
    notes: int
    actions: list[ActionOutcome] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    graveyard_expired: list[str] = field(default_factory=list)
    missing: bool = False  # no tier store at root: nothing done, nothing created
    skipped_names: list[str] = field(default_factory=list)
    refcount: Path | None = None  # refcount.json, when this run rewrote it
    changed: bool = False

    @property
    def counts(self) -> dict[str, int]:
        """Actions by kind (done ones, or all planned in a dry run), and failures."""
        counts = dict.fromkeys(OPS, 0) | {"failed": 0}
        for a in self.actions:
            if a.status == "failed":
                counts["failed"] += 1
            elif self.dry_run or a.status == "done" or a.action.op == "conflict":
                counts[a.action.op] += 1
        return counts

    @property
    def failed(self) -> int:
        return self.counts["failed"]

    @property
    def summary(self) -> str:  # type: ignore[override]  # (JobOutcome's field, computed here)
        if self.missing:
            return f"organize: no tier store at {self.root} (create that folder to start one)"
        c = self.counts
        if self.dry_run:
            parts = [
                f"{c['move']} to move",
                f"{c['gist']} to summarise",
                f"{c['delete']} to delete",
            ]
        else:
            parts = [f"{c['move']} moved", f"{c['gist']} summarised", f"{c['delete']} deleted"]
        if c["conflict"]:
            parts.append(f"{c['conflict']} conflicts")
        if c["failed"]:
            parts.append(f"{c['failed']} failed")
        head = f"organize{' (dry run)' if self.dry_run else ''}: {self.notes} notes; "
        return head + ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "root": str(self.root),
            "dry_run": self.dry_run,
            "notes": self.notes,
            "counts": self.counts,
            "actions": [a.as_dict() for a in self.actions],
            "repaired": self.repaired,
            "graveyard_expired": self.graveyard_expired,
        }
        if self.missing:
            d["missing"] = True
        elif not self.dry_run:
            if self.skipped_names:
                d["skipped_names"] = self.skipped_names
            d["refcount"] = None if self.refcount is None else str(self.refcount)
        return d


# --------------------------------------------------------------------------- applying a plan


# A gist is made of a note's beginning: its title, its first lines and the terms of its first
# mebibyte say what it is about; a 50 MB note is not read whole to find them.
GIST_READ_BYTES = 1 << 20


def _sample_texts(root: Path, placements: dict[str, Placement]) -> Iterator[str]:
    names = list(placements)
    step = max(1, len(names) // DF_SAMPLE)
    for name in names[::step][:DF_SAMPLE]:
        place = placements[name]
        for f in place.originals[:1] or place.summaries[:1]:
            got = read_note(root / f.rel, GIST_READ_BYTES)
            if got is not None:
                yield got[0].decode("utf-8", errors="replace")


class _Executor:
    """Carries out a plan through the mover; records what happened to each action."""

    def __init__(
        self, cfg: Config, paths: Paths, store: Store, mover: Mover, batch: str, now: float
    ) -> None:
        self.cfg, self.paths, self.store, self.mover, self.batch = cfg, paths, store, mover, batch
        self.now = now
        self.root = paths.tiers_root
        self.df: Any = None
        self.n_docs = 0
        self.fallbacks = 0

    def gist(self, action: Action, placements: dict[str, Placement]) -> str:
        if self.df is None:
            self.df, self.n_docs = document_frequencies(_sample_texts(self.root, placements))
        src = self.root / action.src
        self.mover.check_path(src)
        got = read_note(src, GIST_READ_BYTES)
        if got is None:
            raise MoveError(f"{src}: not a note (not a regular file, or unreadable); left alone")
        text = got[0].decode("utf-8", errors="replace")
        t = self.cfg.tiers
        outcome = make_gist(
            text,
            action.note,
            command=t.summarizer_command,
            timeout=t.summarizer_timeout,
            df=self.df,
            n_docs=self.n_docs,
        )
        if outcome.error:
            self.fallbacks += 1
            log.warning(
                "summarizer_command failed for %s (%s); used the extractive gist",
                action.note,
                outcome.error,
            )
        assert action.dst is not None, action  # (a gist step always names where it goes)
        staged = staging_dir(self.root) / action.note
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged)
        write_new(staged, outcome.text.encode("utf-8"))
        os.utime(staged, (self.now, self.now))  # made "now" on memoryd's clock
        faults.point("organize.gist_staged")
        try:
            self.mover.move(
                staged, self.root / action.dst, reason=f"gist: {action.reason}", batch=self.batch
            )
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staged)
        return outcome.method

    def run(self, actions: list[Action], placements: dict[str, Placement]) -> list[ActionOutcome]:
        results: list[ActionOutcome] = []
        failed_notes: set[str] = set()
        deletions: list[ActionOutcome] = []
        for a in actions:
            row = ActionOutcome(a)
            results.append(row)
            if a.op == "conflict":
                row.status = "skipped"
                continue
            if a.note in failed_notes:
                row.status, row.error = "skipped", "an earlier step for this note failed"
                continue
            if a.op == "delete":
                deletions.append(row)
                row.status = "pending"
                continue
            try:
                if a.op == "move":
                    assert a.dst is not None
                    self.mover.move(
                        self.root / a.src, self.root / a.dst, reason=a.reason, batch=self.batch
                    )
                    if a.step == 0:  # back up after a retrieval: "touch", decay starts over
                        with contextlib.suppress(OSError):
                            os.utime(self.root / a.dst, (self.now, self.now))
                elif a.op == "gist":
                    row.method = self.gist(a, placements)
                row.status = "done"
                faults.point("organize.step")
            except (MoveError, OSError) as exc:
                row.status, row.error = "failed", str(exc)
                failed_notes.add(a.note)
        self._delete([d for d in deletions if d.action.note not in failed_notes])
        for row in results:
            if row.status == "pending":
                row.status, row.error = "skipped", "an earlier step for this note failed"
        return results

    def _delete(self, deletions: list[ActionOutcome]) -> None:
        buried: list[tuple[ActionOutcome, BuriedFile]] = []
        for row in deletions:
            a = row.action
            path = self.root / a.src
            try:
                self.mover.check_path(path)
                data, st = read_regular_file(path)  # one read: the hash names the bytes kept
                sha = hashlib.sha256(data).hexdigest()
                buried.append((row, BuriedFile(a.src, sha, data, st.st_mtime)))
            except (MoveError, OSError) as exc:
                row.status, row.error = "failed", str(exc)
        if not buried:
            return
        try:
            archive = bury(graveyard_dir(self.paths), self.now, [b for _, b in buried])
        except OSError as exc:  # no copy, no deletion
            for row, _ in buried:
                row.status, row.error = "failed", f"graveyard: {exc}"
            return
        faults.point("organize.buried")
        for row, b in buried:
            a = row.action
            try:
                # Only the bytes the graveyard holds: an edit made since stays, reported.
                move_id = self.mover.delete(
                    self.root / a.src, reason=a.reason, batch=self.batch, expect_sha256=b.sha256
                )
                rec = self.mover.get(move_id)
                row.status = "done"
                row.sha256 = rec.sha256 if rec else b.sha256
                row.graveyard = f"{archive.name}:{b.entry}"
            except (MoveError, OSError) as exc:
                row.status, row.error = "failed", str(exc)


# --------------------------------------------------------------------------- one run


def organize(
    cfg: Config, paths: Paths, store: Store, now: float, *, dry_run: bool = False
) -> OrganizeResult:
    """Organize the tier store once; with ``dry_run`` only the plan, nothing touched."""
    root = paths.tiers_root
    if not root.is_dir():
        # The tier store is opt-in: the hourly job must not create folders (and a
        # refcount.json) in the user's OpenClaw directory for a store nobody asked for.
        return OrganizeResult(root, dry_run, 0, missing=True)
    check_layout(root)  # (a dry run said "nothing to do" where the run refused)
    if dry_run:
        return _plan_only(cfg, paths, store, now)
    with tiers_lock(paths):
        return _apply(cfg, paths, store, now)


def _retrievals(store: Store, root: Path, placements: dict[str, Placement]) -> dict[str, float]:
    """note → its last retrieval, hits recorded under another spelling of its name included
    (docs/paths.md): a note read every day is never forgotten for how it was spelled."""
    from ..pathmatch import attribute_max

    times = last_retrievals(store)
    return attribute_max(times, note_owner(root, placements, times))


def _with_folded_marks(
    store: Store, root: Path, placements: dict[str, Placement], records: dict[str, NoteRecord]
) -> dict[str, NoteRecord]:
    """``records`` with a mark given under another spelling of a note's name (``memoryd
    mark tiers/warm/Plan.md`` on a Mac) on that note: it protects it from deletion."""
    marked = notes_with_mark(store, "marked")
    for note in set(note_owner(root, placements, marked).values()):
        rec = records.get(note)
        if rec is not None and not rec.user_marked:
            records[note] = replace(rec, user_marked=True)
    return records


def _scan_and_plan(
    cfg: Config, store: Store, root: Path, now: float, *, save: bool
) -> tuple[dict[str, Placement], list[str], dict[str, NoteRecord], list[Action]]:
    """(placements, names skipped, records brought in line with the disk, the plan); with
    ``save``, the records that changed are saved first."""
    skipped: list[str] = []
    placements = scan_store(root, skipped)
    report_skipped_names(skipped)
    records = _with_folded_marks(store, root, placements, load_records(store))
    changed_records = reconcile(placements, records, now)
    if save and changed_records:
        with store.transaction():
            save_records(store, changed_records.values())
    records.update(changed_records)
    pol = TierPolicy.from_config(cfg.tiers)
    actions = plan_store(placements, records, _retrievals(store, root, placements), now, pol)
    return placements, skipped, records, actions


def _plan_only(cfg: Config, paths: Paths, store: Store, now: float) -> OrganizeResult:
    root = paths.tiers_root
    placements, _, _, actions = _scan_and_plan(cfg, store, root, now, save=False)
    expired = expired_archives(graveyard_dir(paths), now, cfg.tiers.graveyard_days)
    return OrganizeResult(
        root,
        True,
        len(placements),
        [ActionOutcome(a) for a in actions],
        graveyard_expired=[p.name for p in expired],
    )


def _apply(cfg: Config, paths: Paths, store: Store, now: float) -> OrganizeResult:
    root = paths.tiers_root
    ensure_layout(root)
    mover = mover_for(store, paths)
    repaired = mover.repair()
    clean_staging(root)
    placements, skipped, records, actions = _scan_and_plan(cfg, store, root, now, save=True)
    batch = organize_batch(now)
    ex = _Executor(cfg, paths, store, mover, batch, now)
    results = ex.run(actions, placements)
    expired = _drop_expired_archives(cfg, paths, mover, now, batch)

    # The disk is the truth: re-read it (when anything moved) and record where
    # every note now is.
    touched = any(r.status in ("done", "failed") for r in results)
    after = scan_store(root) if touched or repaired else placements
    updated = reconcile(after, records, now) if after is not placements else {}
    done = [r.action for r in results if r.status == "done"]
    for name in {a.note for a in done if a.op == "delete"}:
        if name not in after and name in updated:
            updated[name] = replace(updated[name], tier="deleted")
    # The seed: a note retrieved from forgotten/ comes back to warm/ *and* user-marked.
    rescued = {a.note for a in done if a.step == 0 and a.src.startswith("forgotten/")}
    with store.transaction():
        if updated:
            save_records(store, updated.values())
        if rescued:
            merged: dict[str, NoteRecord] = {**records, **updated}
            mark_rescued(store, merged, sorted(rescued), "organize")
            updated.update({n: merged[n] for n in rescued if n in merged})
        if ex.fallbacks:
            store.bump("tiers_summarizer_failed", ex.fallbacks)
        if skipped:
            store.bump("skipped_names", len(skipped))
        store.bump(NOT_A_NOTE_COUNTER, take_not_notes())
        conflicts = sum(1 for a in actions if a.op == "conflict")
        if conflicts:
            store.bump("tiers_conflicts", conflicts)
    records.update(updated)
    refcount = write_refcount(store, root, now, records)
    return OrganizeResult(
        root,
        False,
        len(after),
        results,
        repaired=repaired,
        graveyard_expired=expired,
        skipped_names=skipped,
        refcount=refcount_path(root) if refcount else None,
        changed=bool(done) or bool(expired),
    )


def _drop_expired_archives(
    cfg: Config, paths: Paths, mover: Mover, now: float, batch: str
) -> list[str]:
    """Delete (journaled) the graveyard archives older than ``graveyard_days``; their names."""
    dropped: list[str] = []
    days = cfg.tiers.graveyard_days
    for archive in expired_archives(graveyard_dir(paths), now, days):
        try:
            mover.delete(archive, reason=f"graveyard copies older than {days} d", batch=batch)
            dropped.append(archive.name)
        except (MoveError, OSError) as exc:
            log.warning("cannot drop graveyard archive %s: %s", archive, exc)
    return dropped
