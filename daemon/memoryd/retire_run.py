"""One retire run over a workspace: which notes are over their budget, each one's plan from
the evidence, and (unless a dry run) each plan applied by :mod:`memoryd.retirer`, planned
again when the note changed in between.

The notes: ``MEMORY.md``, whose budget is what OpenClaw 2026.9.6 gives it in a new session
(``bootstrapMaxChars``, and what ``bootstrapTotalMaxChars`` leaves after the files before it),
and every other memory file longer than ``retire.note_max_chars``. A file the user marked or
pinned (``memoryd mark`` / ``pin``) is left whole. Each note's retired sections go to one
archive file, ``<archive root>/retired/<its path>`` (``memory-archive/retired/MEMORY.md``).
While OpenClaw's dreaming sweep runs (a consolidation it planned may still be unapplied) or
holds its ``MEMORY.md`` write lock (:mod:`memoryd.dreaming_lock`), ``MEMORY.md`` is left whole
and the run says so.
"""

from __future__ import annotations

import errno
import os
import stat
from itertools import starmap
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from . import clock
from .bootstrap_cut import MIN_FILE_BUDGET
from .dreaming_lock import dreaming_at_work
from .fsutil import read_regular
from .move_files import MoveError
from .move_journal import retire_batch, undo_batch
from .policy import glob_matches
from .policy.retire_plan import (
    RetirePlan,
    Use,
    archive_entry,
    archive_header,
    pinned_headings,
    plan_retire,
    put_back,
)
from .retirer import Changed, Retirer
from .section_report import CUT, NOT_LOADED, HitRow, sections_report
from .workspace import retired_archive_of

if TYPE_CHECKING:
    from .config import Config, Paths
    from .store import Store

MEMORY = "MEMORY.md"
ATTEMPTS = 3  # plans made again for a note that keeps changing under a run
READ_MAX = 64 * 1024 * 1024


class NotePlan(NamedTuple):
    rel: str
    plan: RetirePlan
    archive_rel: str
    data: bytes  # the note's bytes the plan read


class RunResult(NamedTuple):
    plans: list[NotePlan]
    applied: list[dict[str, Any]]
    changed: list[dict[str, str]]  # notes that kept changing (or their archive did)
    skipped: list[dict[str, str]]
    repaired: list[str]
    batch: str | None


def archive_rel_of(cfg: Config, rel: str) -> str:
    return retired_archive_of(cfg.archive.dir, rel)


def _user_keeps(rel: str, marked: set[str], pins: list[str]) -> bool:
    return rel in marked or any("#" not in p and glob_matches(rel, p) for p in pins)


def _hit_rows(store: Store, rel: str, agents: list[str] | None) -> list[HitRow]:
    """The hits of ``rel`` by ``agents`` (None: every agent's)."""
    columns = {r[1] for r in store.conn.execute("PRAGMA table_info(hits)")}
    anchor = "anchor" if "anchor" in columns else "NULL"
    sql = f"SELECT ts, start_line, end_line, {anchor} FROM hits WHERE memory_path = ?"
    if agents is not None:  # (another workspace's agents hit their own file of the same name)
        sql += f" AND agent IN ({','.join('?' * len(agents))})"
    params = (rel, *(agents or ()))
    # (starmap builds the many rows at C speed: HitRow(*r) a row cost the dry run a tenth)
    return list(starmap(HitRow, store.conn.execute(sql, params).fetchall()))


def _memory_room(paths: Paths, workspace: Path) -> tuple[Any, int, int]:
    """MEMORY.md's cut in a new main session, ``bootstrapMaxChars``, and what
    ``bootstrapTotalMaxChars`` has left when OpenClaw meets MEMORY.md."""
    from .bootstrap import bootstrap_limits, openclaw_cuts, read_bootstrap

    file_max, total_max = bootstrap_limits(paths.openclaw, paths.agent_of(workspace))
    over: set[str] = set()
    present = read_bootstrap(workspace, over)
    rooms: dict[str, int] = {}  # (the files before it, a missing one's [MISSING] line too)
    cuts = openclaw_cuts(present, over, file_max, total_max, workspace, rooms)
    return cuts.get(MEMORY), file_max, rooms.get(MEMORY, total_max)


def memory_budget(paths: Paths, workspace: Path) -> tuple[Any, int]:
    """MEMORY.md's cut in a new main session and the characters it may have to load whole."""
    cut, file_max, room = _memory_room(paths, workspace)
    return cut, max(0, min(file_max, room))


def _injection(paths: Paths, workspace: Path) -> str:
    from .bootstrap import context_injection

    return context_injection(paths.openclaw, paths.agent_of(workspace))


def _limit_faults(paths: Paths, workspace: Path) -> list[str]:
    from .bootstrap import limit_faults

    return limit_faults(paths.openclaw, paths.agent_of(workspace))


def plan_note(
    cfg: Config,
    paths: Paths,
    store: Store,
    rel: str,
    data: bytes,
    now: float,
    pins: list[str],
    room: tuple[Any, int, int] | None = None,
) -> RetirePlan:
    """The plan for one note's bytes as read (pure but for reading hits and OpenClaw's config;
    ``room``: MEMORY.md's :func:`_memory_room`, when the caller has it)."""
    text = data.decode("utf-8")
    ws = paths.workspace
    if rel == MEMORY:
        cut, file_max, left = room or _memory_room(paths, ws)
        budget = max(0, min(file_max, left))
    else:
        cut, budget = None, cfg.retire.note_max_chars
    rep = sections_report(text, _hit_rows(store, rel, paths.agents_counted(ws)), now, cut)
    uses = [
        Use(
            u.section,
            u.hits_30d,
            u.hits_90d,
            u.hits_total,
            u.last_hit,
            u.bootstrap in (CUT, NOT_LOADED),
        )
        for u in rep.sections
    ]
    return plan_retire(
        text,
        uses,
        budget,
        now,
        heading_pins=pinned_headings(rel, pins),
        min_idle_days=cfg.retire.min_idle_days,
    )


def _targets(cfg: Config, ws: Path) -> list[str]:
    from .workspace import archive_excludes, list_memory_files

    out = [MEMORY] if os.path.lexists(ws / MEMORY) else []
    limit = cfg.retire.note_max_chars
    if limit > 0:
        for m in list_memory_files(ws, archive_excludes(ws, cfg.archive.dir)):
            if m.rel != MEMORY and m.rel.lower() != "memory.md" and m.size > limit:
                out.append(m.rel)
    return out


def run(
    cfg: Config,
    paths: Paths,
    store: Store,
    retirer: Retirer | None,
    now: float,
    only: list[str] | None = None,
) -> RunResult:
    """Plan every note over its budget; apply the plans when ``retirer`` is given."""
    ws = paths.workspace
    repaired = retirer.repair() if retirer is not None else []
    pins = sorted(store.marks("pinned") | set(cfg.expire.pinned))
    marked = store.marks("marked")
    plans: list[NotePlan] = []
    applied: list[dict[str, Any]] = []
    changed: list[dict[str, str]] = []
    skipped: list[dict[str, str]] = []
    batch = retire_batch(now) if retirer is not None else None
    for rel in only if only is not None else _targets(cfg, ws):
        if rel != MEMORY and cfg.retire.note_max_chars <= 0:
            skipped.append({"path": rel, "why": "retire.note_max_chars = 0: only MEMORY.md"})
            continue
        if _user_keeps(rel, marked, pins):
            skipped.append({"path": rel, "why": "marked or pinned by you: left whole"})
            continue
        if rel == MEMORY and _injection(paths, ws) == "never":
            skipped.append({"path": rel, "why": (
                'contextInjection is "never": OpenClaw puts MEMORY.md into no session, so '
                "it has no bootstrap budget to fit")})  # fmt: skip
            continue
        if rel == MEMORY and (faults := _limit_faults(paths, ws)):
            skipped.append({"path": rel, "why": (
                f"openclaw.json's {faults[0]} is no whole number above 0 (OpenClaw refuses the "
                "file): MEMORY.md's budget is unknown; fix it, then retire")})  # fmt: skip
            continue
        if rel == MEMORY and retirer is not None and (why := dreaming_at_work(paths.state_dir, ws)):
            skipped.append({"path": rel, "why": f"{why}: left whole, retire again later"})
            continue
        for attempt in range(ATTEMPTS):
            try:
                data, st = read_regular(ws / rel, READ_MAX)
                if st.st_size > len(data):  # (the rewrite compares the whole file: never equal)
                    skipped.append({"path": rel, "why": f"over {READ_MAX >> 20} MB: left whole"})
                    break
                if not st.st_mode & stat.S_IWUSR:  # (a rename would rewrite it all the same)
                    skipped.append({"path": rel, "why": "read-only (chmod a-w): left whole"})
                    break
                room = _memory_room(paths, ws) if rel == MEMORY else None
                plan = plan_note(cfg, paths, store, rel, data, now, pins, room)
            except UnicodeDecodeError:
                skipped.append({"path": rel, "why": "not UTF-8 text"})
                break
            except OSError as exc:
                why = f"cannot read: {exc.strerror or exc}"
                if exc.errno == errno.ELOOP and os.path.islink(ws / rel):
                    why = ("a symbolic link (retire rewrites only a regular "
                           "file: it would put a file where the link is)")  # fmt: skip
                skipped.append({"path": rel, "why": why})
                break
            # (a bootstrapMaxChars under 64 still loads the file, cut: only the total's room
            # decides)
            if room is not None and (left := room[2]) < MIN_FILE_BUDGET:
                why = (f"not loaded at all: the bootstrap files before it leave it {left} "
                       "characters of bootstrapTotalMaxChars (OpenClaw loads no file with less "
                       f"than {MIN_FILE_BUDGET} left), so retiring would not bring it in")
                skipped.append({"path": rel, "why": why})
                break
            note = NotePlan(rel, plan, archive_rel_of(cfg, rel), data)
            if retirer is None or not plan.taken:
                plans.append(note)
                break
            if rel == MEMORY and (why := dreaming_at_work(paths.state_dir, ws)):
                skipped.append({"path": rel, "why": f"{why}: left whole, retire again later"})
                break
            try:
                applied.append(_apply(retirer, ws, note, now, batch or ""))
                plans.append(note)
                break
            except Changed as exc:
                if attempt == ATTEMPTS - 1:
                    changed.append({"path": rel, "why": str(exc)})
    return RunResult(plans, applied, changed, skipped, repaired, batch)


def scheduled_retire(cfg: Config, paths: Paths, store: Store, now: float) -> str | None:
    """The daily job's retire: nothing at all unless the user set ``retire.auto = true``;
    then what ``retire --force`` does, said in one line (None: nothing retired)."""
    if not cfg.retire.auto:
        return None
    from .mover import mover_for

    mover = mover_for(store, paths)
    result = run(cfg, paths, store, Retirer(store, mover.check_path), now)
    if not result.applied:
        return None
    n = sum(len(a["sections"]) for a in result.applied)
    from .results import counted

    notes = counted(len(result.applied), "note")
    return f"retired {counted(n, 'section')} from {notes} (undo: memoryd restore --last)"


def _apply(retirer: Retirer, ws: Path, note: NotePlan, now: float, batch: str) -> dict[str, Any]:
    plan = note.plan
    text = note.data.decode("utf-8")
    archive = ws / note.archive_rel
    try:
        old = read_regular(archive)[0]
    except FileNotFoundError:
        old = None
    when = (clock.iso(now) or "")[:19] + "Z"
    entry = archive_entry(note.rel, when, batch, text, plan.taken)
    head = old if old is not None else archive_header(note.rel).encode()
    if head and not head.endswith(b"\n"):
        head += b"\n"
    new_archive = head + entry.encode("utf-8")
    sections = [
        {
            "title": t.title,
            "first_line": t.first_line,
            "last_line": t.last_line,
            "begin": t.begin,
            "end": t.end,
            "chars": t.chars,
            "entry_bytes": len(entry),
        }
        for t in plan.taken
    ]
    row = retirer.swap(
        ws / note.rel,
        note.data,
        plan.new_text.encode("utf-8"),
        archive,
        old,
        new_archive,
        batch=batch,
        sections=[*sections, {"entry": entry}],
    )
    return {
        "path": note.rel,
        "archive": note.archive_rel,
        "row": row,
        "sections": [t.title for t in plan.taken],
        "chars_before": plan.chars_before,
        "chars_after": plan.chars_after,
    }


def undo_run(retirer: Retirer, batch: str) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Put back every note of ``batch`` (``restore --last``): byte for byte when the note is
    as the retire left it; else its sections go back beside their old neighbours and the
    edit made since stays. The archive file loses what the retire added when it holds it."""
    done: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    retirer.repair()
    for row in reversed(retirer.rows("batch = ? AND state = 'done' AND undo_of IS NULL", (batch,))):
        src, archive = Path(row.src), Path(row.archive)
        info = row.taken()
        entry = next((d["entry"] for d in info if "entry" in d), "")
        spans = [(d["begin"], d["end"]) for d in info if "begin" in d]
        try:
            now = read_regular(src)[0] if os.path.lexists(src) else b""
            from .retirer import sha

            if sha(now) == row.after_sha:
                target, how = row.before, "byte for byte"
            else:
                original = row.before.decode("utf-8")
                target = put_back(now.decode("utf-8"), original, spans).encode("utf-8")
                how = "edited since: sections put back beside their old neighbours"
            try:
                old_archive = read_regular(archive)[0]
            except FileNotFoundError:
                old_archive = None
            new_archive: bytes | None = old_archive
            if old_archive is not None and sha(old_archive) == row.archive_after_sha:
                new_archive = row.archive_before
            elif old_archive is not None and entry and entry.encode() in old_archive:
                new_archive = old_archive.replace(entry.encode(), b"", 1)
            if not os.path.lexists(src):
                errors.append(
                    {"path": row.src, "error": "the note is gone; its sections stay in the archive"}
                )
                continue
            retirer.swap(
                src,
                now,
                target,
                archive,
                old_archive,
                new_archive,
                batch=undo_batch(row.batch),
                sections=info,
                undo_of=row.id,
            )
            done.append(
                {
                    "path": row.src,
                    "archive": row.archive,
                    "how": how,
                    "sections": [d["title"] for d in info if "title" in d],
                }
            )
        except UnicodeDecodeError as exc:  # (an edit since saved bytes that are no UTF-8)
            errors.append({"path": row.src, "error": (
                f"the note is no UTF-8 text now (byte {exc.start}), so its sections cannot be "
                f"put back beside their neighbours: they stay in {row.archive}")})  # fmt: skip
        except (Changed, OSError, ValueError, MoveError) as exc:
            errors.append({"path": row.src, "error": str(exc)})
    return done, errors
