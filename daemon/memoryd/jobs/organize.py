"""The organize job (seed 004's organize.py): layer by mtime, forget, clean up.

Thin shell around :mod:`memoryd.tiers`: finish any interrupted move, read the
store from disk, bring the records in line, plan (pure), then carry the plan out
through the journaled :class:`~memoryd.mover.Mover`, one note at a time. A note
whose move fails keeps the rest of its plan for the next run; other notes go on.
Files due for deletion are first written to this month's graveyard archive; a
deletion happens only once its copy is safely on disk.

Why it survives ``kill -9``: each move is journaled and atomic (repair finishes or
rolls back the one in flight), gists are written to a staging folder and then
moved into place, and the plan is recomputed from the files every run. So a run
killed anywhere is completed by the next, with no note lost or in two tiers.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import faults
from ..clock import iso
from ..config import Config, Paths
from ..gist import document_frequencies, make_gist
from ..mover import MoveError, Mover, mover_for, read_regular_file, write_all
from ..service.lock import held as held_lock
from ..store import Store
from ..tiers import (
    STAGING,
    Action,
    BuriedFile,
    TierPolicy,
    bury,
    ensure_layout,
    expired_archives,
    last_retrievals,
    load_records,
    plan_store,
    reconcile,
    refcount_path,
    save_records,
    scan_store,
    write_refcount,
)
from ..workspace import report_skipped_names
from . import JobResult

log = logging.getLogger("memoryd.organize")

DF_SAMPLE = 200  # notes read to learn which words are common (for distinctive tags)


def graveyard_dir(paths: Paths) -> Path:
    return paths.memoryd_dir / "graveyard"


def tiers_lock(paths: Paths) -> contextlib.AbstractContextManager[None]:
    """One organize or recall at a time on a store (the daemon and a person may race)."""
    return held_lock(paths.memoryd_dir / "tiers.lock")


def staging_dir(root: Path) -> Path:
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


def read_text(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read().decode("utf-8", errors="replace")


def _sample_texts(root: Path, placements: dict[str, Any]) -> Iterator[str]:
    names = list(placements)
    step = max(1, len(names) // DF_SAMPLE)
    for name in names[::step][:DF_SAMPLE]:
        place = placements[name]
        for f in place.originals[:1] or place.summaries[:1]:
            with contextlib.suppress(OSError):
                yield read_text(root / f.rel)


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

    def gist(self, action: Action, placements: dict[str, Any]) -> str:
        if self.df is None:
            self.df, self.n_docs = document_frequencies(_sample_texts(self.root, placements))
        src = self.root / action.src
        self.mover.check_path(src)
        text = read_text(src)
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
        staged = staging_dir(self.root) / action.note
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged)
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            write_all(fd, outcome.text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
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

    def run(self, actions: list[Action], placements: dict[str, Any]) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = []
        failed_notes: set[str] = set()
        deletions: list[Action] = []
        for a in actions:
            row = a.as_dict()
            results.append(row)
            if a.op == "conflict":
                row["status"] = "skipped"
                continue
            if a.note in failed_notes:
                row["status"] = "skipped"
                row["error"] = "an earlier step for this note failed"
                continue
            if a.op == "delete":
                deletions.append(a)
                row["status"] = "pending"
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
                    row["method"] = self.gist(a, placements)
                row["status"] = "done"
                faults.point("organize.step")
            except (MoveError, OSError) as exc:
                row["status"] = "failed"
                row["error"] = str(exc)
                failed_notes.add(a.note)
        self._delete([d for d in deletions if d.note not in failed_notes], results)
        for row in results:
            if row.get("status") == "pending":
                row["status"] = "skipped"
                row["error"] = "an earlier step for this note failed"
        return results

    def _delete(self, deletions: list[Action], results: list[dict[str, Any]]) -> None:
        if not deletions:
            return
        by_src = {row["src"]: row for row in results if row["op"] == "delete"}
        buried: list[tuple[Action, BuriedFile]] = []
        for a in deletions:
            path = self.root / a.src
            try:
                self.mover.check_path(path)
                data, st = read_regular_file(path)  # one read: the hash names the bytes kept
                sha = hashlib.sha256(data).hexdigest()
                buried.append((a, BuriedFile(a.src, sha, data, st.st_mtime)))
            except (MoveError, OSError) as exc:
                by_src[a.src].update(status="failed", error=str(exc))
        if not buried:
            return
        try:
            archive = bury(graveyard_dir(self.paths), self.now, [b for _, b in buried])
        except OSError as exc:  # no copy, no deletion
            for a, _ in buried:
                by_src[a.src].update(status="failed", error=f"graveyard: {exc}")
            return
        faults.point("organize.buried")
        for a, b in buried:
            row = by_src[a.src]
            try:
                # Only the bytes the graveyard holds: an edit made since stays, reported.
                move_id = self.mover.delete(
                    self.root / a.src, reason=a.reason, batch=self.batch, expect_sha256=b.sha256
                )
                rec = self.mover.get(move_id)
                row.update(
                    status="done",
                    sha256=rec.sha256 if rec else b.sha256,
                    graveyard=f"{archive.name}:{b.entry}",
                )
            except (MoveError, OSError) as exc:
                row.update(status="failed", error=str(exc))


def run(cfg: Config, paths: Paths, store: Store, now: float, *, dry_run: bool = False) -> JobResult:
    """Organize the tier store once; with ``dry_run`` only the plan, nothing touched."""
    root = paths.tiers_root
    pol = TierPolicy.from_config(cfg.tiers)
    if not root.is_dir():
        # The tier store is opt-in: the hourly job must not create folders (and a
        # refcount.json) in the user's OpenClaw directory for a store nobody asked for.
        data = _data(root, [], [], [], 0, dry_run)
        data["missing"] = True
        return JobResult(
            f"organize: no tier store at {root} (create that folder to start one)", data
        )
    skipped: list[str] = []
    if dry_run:
        placements = scan_store(root, skipped)
        report_skipped_names(skipped)
        records = load_records(store)
        records.update(reconcile(placements, records, now))
        actions = plan_store(placements, records, last_retrievals(store), now, pol)
        expired = [
            p.name for p in expired_archives(graveyard_dir(paths), now, cfg.tiers.graveyard_days)
        ]
        data = _data(root, [a.as_dict() for a in actions], [], expired, len(placements), True)
        return JobResult(_summary(data), data, changed=False)

    with tiers_lock(paths):
        ensure_layout(root)
        mover = mover_for(store, paths)
        repaired = mover.repair()
        clean_staging(root)
        placements = scan_store(root, skipped)
        report_skipped_names(skipped)
        records = load_records(store)
        changed_records = reconcile(placements, records, now)
        if changed_records:
            with store.transaction():
                save_records(store, changed_records.values())
            records.update(changed_records)
        actions = plan_store(placements, records, last_retrievals(store), now, pol)
        batch = f"organize:{iso(now)}:{uuid.uuid4().hex[:8]}"
        ex = _Executor(cfg, paths, store, mover, batch, now)
        results = ex.run(actions, placements)

        expired: list[str] = []
        for archive in expired_archives(graveyard_dir(paths), now, cfg.tiers.graveyard_days):
            try:
                mover.delete(
                    archive,
                    reason=f"graveyard copies older than {cfg.tiers.graveyard_days} d",
                    batch=batch,
                )
                expired.append(archive.name)
            except (MoveError, OSError) as exc:
                log.warning("cannot drop graveyard archive %s: %s", archive, exc)

        # The disk is the truth: re-read it (when anything moved) and record where
        # every note now is.
        touched = any(r.get("status") in ("done", "failed") for r in results)
        after = scan_store(root) if touched or repaired else placements
        updated = reconcile(after, records, now) if after is not placements else {}
        deleted = {r["note"] for r in results if r["op"] == "delete" and r.get("status") == "done"}
        for name in deleted:
            if name not in after and name in updated:
                updated[name] = replace(updated[name], tier="deleted")
        # The seed: a note retrieved from forgotten/ comes back to warm/ *and* user-marked.
        rescued = {
            r["note"]
            for r in results
            if r["step"] == 0 and r.get("status") == "done" and r["src"].startswith("forgotten/")
        }
        for name in rescued:
            rec = updated.get(name) or records.get(name)
            if rec is not None and not rec.user_marked:
                updated[name] = replace(rec, user_marked=True)
        with store.transaction():
            if updated:
                save_records(store, updated.values())
            if ex.fallbacks:
                store.bump("tiers_summarizer_failed", ex.fallbacks)
            if skipped:
                store.bump("skipped_names", len(skipped))
            conflicts = sum(1 for a in actions if a.op == "conflict")
            if conflicts:
                store.bump("tiers_conflicts", conflicts)
        records.update(updated)
        did = any(r.get("status") == "done" for r in results) or bool(expired)
        refcount = write_refcount(store, root, now, records)
        data = _data(root, results, repaired, expired, len(after), False)
        if skipped:
            data["skipped_names"] = skipped
        data["refcount"] = str(refcount_path(root)) if refcount else None
        return JobResult(_summary(data), data, changed=did)


def _data(
    root: Path,
    actions: list[dict[str, Any]],
    repaired: list[str],
    expired: list[str],
    notes: int,
    dry_run: bool,
) -> dict[str, Any]:
    counts = {"move": 0, "gist": 0, "delete": 0, "conflict": 0, "failed": 0}
    for a in actions:
        if a.get("status") == "failed":
            counts["failed"] += 1
        elif dry_run or a.get("status") == "done" or a["op"] == "conflict":
            counts[a["op"]] += 1
    return {
        "root": str(root),
        "dry_run": dry_run,
        "notes": notes,
        "counts": counts,
        "actions": actions,
        "repaired": repaired,
        "graveyard_expired": expired,
    }


def _summary(data: dict[str, Any]) -> str:
    c = data["counts"]
    verb = "would be" if data["dry_run"] else ""
    parts = [
        f"{c['move']} moved",
        f"{c['gist']} summarised",
        f"{c['delete']} deleted",
    ]
    if c["conflict"]:
        parts.append(f"{c['conflict']} conflicts")
    if c["failed"]:
        parts.append(f"{c['failed']} failed")
    head = f"organize{' (dry run)' if data['dry_run'] else ''}: {data['notes']} notes; "
    text = head + ", ".join(parts)
    if verb:
        text = text.replace(" moved", " to move").replace(" summarised", " to summarise")
        text = text.replace(" deleted", " to delete")
    return text
