"""The promote job: nominate much-used notes for long-term memory.

Writes ``promote_report.md`` (and ``.json``) under the state dir's ``reports/``
with each candidate's category and evidence (queries, days). It marks the
candidates promoted (so they are never nominated again) only when asked to
apply: ``memoryd promote --apply``; the daily scheduled run only reports.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..clock import iso
from ..config import Config, Paths
from ..policy import promote as promote_policy
from ..reports import hit_days, render_promote, write_report
from ..results import JobOutcome, counted
from ..signals import snapshot
from ..store import Store
from ..tierstore import promote_inputs


@dataclass(frozen=True)
class Candidate:
    """A note nominated for long-term memory, with its category and the evidence."""

    path: str
    category: str | None
    category_reason: str | None
    reason: str
    rules: list[str]
    numbers: dict[str, Any]
    queries: list[list[Any]]
    days: list[Any]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PromoteResult(JobOutcome):
    """The candidates of one promote run, whether they were marked, and the report."""

    generated: float
    applied: bool
    rules: dict[str, int]
    candidates: list[Candidate] = field(default_factory=list)
    report: Path | None = None  # None in a dry run

    @property
    def changed(self) -> bool:  # type: ignore[override]  # (JobOutcome's field, computed here)
        return self.applied

    @property
    def summary(self) -> str:  # type: ignore[override]  # (JobOutcome's field, computed here)
        by_cat: dict[str | None, int] = {}
        for c in self.candidates:
            by_cat[c.category] = by_cat.get(c.category, 0) + 1
        detail = ", ".join(f"{n} {k}" for k, n in sorted(by_cat.items()))
        text = f"promote: {counted(len(self.candidates), 'candidate')}" + (
            f" ({detail})" if detail else ""
        )
        return text + (", marked promoted" if self.applied else "")

    def document(self) -> dict[str, Any]:
        """What the report files hold."""
        return {
            "generated": iso(self.generated),
            "applied": self.applied,
            "rules": self.rules,
            "candidates": [c.as_dict() for c in self.candidates],
        }

    def as_dict(self) -> dict[str, Any]:
        doc = self.document()
        if self.report is not None:
            doc["report"] = str(self.report)
        return doc


def run(
    cfg: Config,
    paths: Paths,
    store: Store,
    now: float,
    *,
    dry_run: bool = False,
    apply: bool = False,
) -> PromoteResult:
    """Find the candidates; write the report unless ``dry_run``; mark them if ``apply``."""
    snap = snapshot(cfg, paths, store, now)
    candidates: list[Candidate] = []
    inputs = [(sig, snap.text(sig.path)) for sig in snap.signals]
    # Notes of the tier store, keyed tiers/<name>, follow the same rules.
    inputs += promote_inputs(paths.tiers_root, store, now, snap.tz)
    for sig, text in inputs:
        d = promote_policy.decide(
            sig,
            text,
            cfg.promote,
            marked=sig.path in snap.marked,
            promoted=sig.path in snap.promoted,
            mark_note=snap.mark_notes.get(sig.path),
        )
        if d.candidate:
            candidates.append(
                Candidate(
                    d.path,
                    d.category,
                    d.category_reason,
                    d.reason,
                    list(d.rules),
                    d.numbers,
                    [list(q) for q in d.queries],
                    hit_days(sig, snap.tz),
                )
            )
    applied = bool(apply and not dry_run and candidates)
    if applied:
        with store.transaction():
            for c in candidates:
                store.set_mark(c.path, "promoted", note=c.category)
    rules = {
        "hits_7d": cfg.promote.hits_7d,
        "hits_14d": cfg.promote.hits_14d,
        "hits_total": cfg.promote.hits_total,
    }
    result = PromoteResult(now, applied, rules, candidates)
    if not dry_run:
        doc = result.document()
        result.report = write_report(paths.reports_dir, "promote_report", render_promote(doc), doc)
    return result


# ---------------------------------------------------------------- carried out by a sub-session

KIND_PLACES = {
    promote_policy.SKILL: "skills/<skill>/docs/retrospect.md",
    promote_policy.PREFERENCE: "MEMORY.md",
}


def _workspace(paths: Paths, agent: str | None) -> tuple[str, Path]:
    if agent:
        for a in paths.agents:
            if a.id == agent:
                return a.id, a.workspace
        raise ValueError(f"no agent {agent!r} in openclaw.json")
    for a in paths.agents:
        if a.workspace == paths.workspace:
            return a.id, a.workspace
    return "main", paths.workspace


def _note_path(paths: Paths, ws: Path, key: str) -> str:
    """Where the sub-session reads a candidate: its workspace path, or the tier store's file."""
    if key.startswith("tiers/"):
        return str(paths.tiers_root / key.removeprefix("tiers/"))
    return key


def task_text(run: str, items: list[dict[str, Any]], skills: list[str], room: int) -> str:
    """The sub-session's instructions: what to file where, the markers, the reply wanted."""
    from ..policy.promote_settle import RETROSPECT_HEADING as RETRO_HEADING

    known = ", ".join(skills) if skills else "none yet"
    lines = [
        f"memoryd promotion run {run}. The notes below are looked up often enough to keep for "
        "good. For each one: read it, then file it by its kind:",
        "- a procedure (kind skill): one entry in skills/<skill>/docs/retrospect.md, <skill> "
        f"being the skill it belongs to (skills now: {known}; or a short new name);",
        "- a preference or a fact: one entry in MEMORY.md, written like the entries already "
        f"there; MEMORY.md has room for {room} more characters: if the entry would not fit, "
        "write nothing and say so;",
        "- if you are unsure where it belongs, or it is already there: write nothing and say so.",
        "Put each entry you write between its two markers, exactly as given: the opening "
        "marker at the start of the entry's first line (or on its own line just before it), "
        "the closing marker at the end of its last line (or on its own line just after it). "
        "An entry without both is not counted. A retrospect that does not exist yet starts "
        f"with the line `{RETRO_HEADING}`. Change nothing else in those files. Then reply with "
        "one line per note: where it went, or why not.",
        "",
    ]
    for n, i in enumerate(items, 1):
        lines.append(f"{n}. {i['read']} (kind: {i['kind']}) marker: {i['marker']} "
                     f"closing: {i['closing']}")  # fmt: skip
    return "\n".join(lines)


def handoff(
    cfg: Config,
    paths: Paths,
    store: Store,
    now: float,
    *,
    auto: bool = False,
    agent: str | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Plan a run for a sub-session and snapshot its destinations; what the plugin hands over.
    ``auto``: asked by ``/refresh``, only with ``promote.auto`` on (checked first).
    ``timeout``: the sub-session's seconds; past them the run is settled as timed out by the
    next handoff or ``restore --last``. One run at a time."""
    if auto and not cfg.promote.auto:
        return {"handed": False,
                "why": "promote.auto is off: `/memoryd promote` files them by hand"}  # fmt: skip
    promoter = _promoter(store, paths)
    with promoter.locked():
        return _handoff(cfg, paths, store, promoter, now, agent, timeout)


def _promoter(store: Store, paths: Paths) -> Any:
    from ..mover import mover_for
    from ..promoter import Promoter

    return Promoter(store, mover_for(store, paths).check_path)


def settle_overdue(paths: Paths, promoter: Any) -> list[dict[str, Any]]:
    """Settle every run left handed over past its time, as timed out with what landed."""
    from ..promote_run import settle_overdue as settle_them
    from ..retire_run import memory_budget

    promoter.repair()
    return settle_them(promoter, lambda ws: memory_budget(paths, ws)[1])


def _handoff(
    cfg: Config,
    paths: Paths,
    store: Store,
    promoter: Any,
    now: float,
    agent: str | None,
    timeout: float | None,
) -> dict[str, Any]:
    import secrets
    import time as _time

    from ..dreaming_lock import dreaming_at_work
    from ..policy import promote_settle as ps
    from ..policy.retire_plan import measured
    from ..promote_run import DEFAULT_TIMEOUT, overdue, refusal, snapshot
    from ..promoter import REFUSED_COUNTER
    from ..retire_run import memory_budget

    timed_out = settle_overdue(paths, promoter)
    out = [r for r in promoter.pending() if not overdue(r)]
    if out:
        r = out[0]
        return {"handed": False, "out": r["run"], "timed_out": timed_out, "why": (
            f"run {r['run']} is still with its sub-session (handed over {iso(r['created'])}): "
            "one run at a time; it is settled when it ends, or as timed out once its "
            f"{int(float(r['plan'].get('timeout', DEFAULT_TIMEOUT)))} s are up")}  # fmt: skip
    result = run(cfg, paths, store, now)
    doc: dict[str, Any] = {"handed": False, "candidates": len(result.candidates),
                           "report": str(result.report) if result.report else None,
                           "timed_out": timed_out}  # fmt: skip
    agent_id, ws = _workspace(paths, agent)
    why = refusal(promoter, ws, ps.MEMORY)
    if why is not None:
        with store.transaction():
            store.bump(REFUSED_COUNTER)
        doc["why"] = f"{why}: memoryd does not hand a promotion over to write there"
        return doc
    busy = dreaming_at_work(paths.state_dir, ws)
    if busy:
        doc["why"] = f"{busy}: not now, so as not to get in its way; try again later"
        return doc
    budget = memory_budget(paths, ws)[1]
    memory = ws / ps.MEMORY
    size = measured(memory.read_text("utf-8", "replace")) if memory.is_file() else 0
    room = max(0, budget - size)
    run_id = _time.strftime("%Y%m%dT%H%M%S", _time.gmtime(now)) + "-" + secrets.token_hex(3)
    items: list[dict[str, Any]] = []
    left: list[dict[str, str]] = []
    declined: list[dict[str, str]] = []
    for c in result.candidates:
        if c.category not in KIND_PLACES:
            left.append({"source": c.path, "why": c.category_reason or "a person decides"})
            continue
        if c.category == promote_policy.PREFERENCE and room <= 0:
            declined.append({"source": c.path, "why": (
                f"MEMORY.md is at its bootstrap budget ({size} of {budget} characters): "
                "not handed over; `memoryd retire` makes room")})  # fmt: skip
            continue
        items.append({
            "source": c.path,
            "kind": "skill" if c.category == promote_policy.SKILL else "preference or fact",
            "place": KIND_PLACES[c.category],
            "read": _note_path(paths, ws, c.path),
            "marker": ps.marker(run_id, c.path),
            "closing": ps.closing(run_id, c.path),
        })  # fmt: skip
    doc.update(left_for_user=left, declined=declined)
    if not items:
        doc["why"] = "no candidate to file" + (" (the rest is left for you)" if left else "")
        return doc
    skills = sorted(p.name for p in (ws / "skills").glob("*") if p.is_dir()) if (
        ws / "skills").is_dir() else []  # fmt: skip
    plan = {"agent": agent_id, "workspace": str(ws), "items": items, "left": left,
            "declined": declined, "budget": budget,
            "timeout": DEFAULT_TIMEOUT if timeout is None else float(timeout)}  # fmt: skip
    promoter.hand_over(run_id, plan, snapshot(ws))
    doc.update(
        handed=True,
        run=run_id,
        agent=agent_id,
        workspace=str(ws),
        items=items,
        session_key=f"agent:{agent_id}:subagent:memoryd-promote-{run_id}",
        task=task_text(run_id, items, skills, room),
    )
    return doc


def settle(
    cfg: Config, paths: Paths, store: Store, run_id: str, status: str | None = None
) -> dict[str, Any]:
    """Check and record what run ``run_id``'s sub-session wrote (``status``: how it ended, as
    the gateway said; None: by hand). ``timeout`` / ``pending`` record nothing: the run stays
    handed over. Under the mover's lock, so two settles record it once. ValueError for a run
    memoryd never handed."""
    from ..promote_run import settle as settle_run
    from ..promoter import AlreadySettled
    from ..retire_run import memory_budget

    promoter = _promoter(store, paths)
    promoter.repair()
    with promoter.locked():
        row = promoter.run_row(run_id)
        if row is None:
            raise ValueError(f"no promotion run {run_id!r} (see `memoryd promote --handoff`)")
        if row["state"] == "handed" and status in ("timeout", "pending"):
            return {"run": run_id, "status": status, "settled": False,
                    "why": "the sub-session may still be writing: nothing recorded yet; "
                    f"`memoryd promote --settle {run_id}` once it has ended (the next "
                    "handoff or `restore --last` settles it as timed out once its time is "
                    "up)"}  # fmt: skip
        if row["state"] == "handed":
            ws = Path(row["plan"]["workspace"])
            budget = memory_budget(paths, ws)[1]
            try:
                out = settle_run(promoter, run_id, ws, budget, status or "by hand")
            except AlreadySettled:
                row = promoter.run_row(run_id) or row
            else:
                out["settled"] = True
                return out
        return {**(row["result"] or {}), "settled_before": True, "state": row["state"]}


def carried_out_lines(doc: dict[str, Any]) -> list[str]:
    """``--handoff`` / ``--settle`` said in lines (what the chat reply says too)."""
    if "handed" in doc:
        if not doc["handed"]:
            return [f"promote: not handed over: {doc.get('why', '')}"]
        lines = [f"promote: run {doc['run']} for a sub-session of agent {doc['agent']}:"]
        lines += [f"  {i['source']} → {i['place']}" for i in doc["items"]]
        lines += [f"  {d['source']}: {d['why']}" for d in doc.get("declined", [])]
        left = doc.get("left_for_user", [])
        lines += [f"  {d['source']}: left for you ({d['why']})" for d in left]
        return [*lines, "", doc["task"]]
    if not doc.get("settled", True) and "why" in doc:
        return [f"promote: run {doc['run']}: {doc['why']}"]
    lines = [f"promote: run {doc.get('run')} ({doc.get('status')})"
             + (" settled before" if doc.get("settled_before") else "")]  # fmt: skip
    lines += [f"  promoted {p['source']} → {p['dest']}" for p in doc.get("promoted", [])]
    lines += [f"  declined {d['source']}: {d['why']}" for d in doc.get("declined", [])]
    lines += [f"  not filed: {s} (still nominated)" for s in doc.get("not_landed", [])]
    lines += [f"  left for you: {d['source']}" for d in doc.get("left_for_user", [])]
    lines += [f"  error: {e}" for e in doc.get("errors", [])]
    return lines
