"""``memoryd sections FILE``: hits per Markdown section of one memory file, and where OpenClaw's
bootstrap cut falls in it (read-only)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import clock
from .common import add_output_options, emit, ready_to_decide, to_relpath
from .context import Context, UsageError

# Past this a memory file is not read whole (a 1 MB MEMORY.md is far inside it).
READ_MAX = 64 * 1024 * 1024


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sections",
        help="hits per section of a memory file, and what OpenClaw's bootstrap cut drops",
    )
    p.add_argument("path", help="workspace-relative (MEMORY.md, memory/x.md) or absolute path")
    p.add_argument(
        "--agent", help="only this agent's hits, on its workspace's file (default: the "
        "workspace's agents')"
    )
    add_output_options(p)
    p.set_defaults(func=cmd_sections)


def _read_text(path: Path) -> str | None:
    """The file's text, or None when it is no regular file. A symlink is followed, as
    OpenClaw follows it for the bootstrap and for memory_get (only read, never written)."""
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(READ_MAX)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def bootstrap_cut_of(ctx: Context, workspace: Path, rel: str) -> Any:
    """The bootstrap cut of ``rel`` in a new main session (None: not a bootstrap file), with
    the limits it was computed from."""
    from ..bootstrap import session_cuts
    from ..bootstrap_cut import FILE_ORDER

    if rel not in FILE_ORDER:
        return None, None
    got = session_cuts(ctx.paths.openclaw, ctx.paths.agent_of(workspace), workspace)
    return got.cuts.get(rel), (got.file_max, got.total_max)


def _limit_faults(ctx: Context, workspace: Path) -> list[str]:
    from ..bootstrap import limit_faults

    return limit_faults(ctx.paths.openclaw, ctx.paths.agent_of(workspace))


def _hit_groups(ctx: Context, rel: str, agents: list[str] | None, now: float) -> list[Any]:
    """The file's hits grouped by what places them, counted by SQLite (``agents``: theirs
    only; None: every agent's)."""
    from ..section_report import load_section_groups

    try:
        return load_section_groups(ctx.read_store().conn, rel, agents, now)
    except Exception as exc:  # an empty in-memory store of a new install has the column
        raise UsageError(f"cannot read the hits of {rel}: {exc}") from exc


def _owners(text: str, sections: Any) -> list[str | None]:
    """Whose each section's entries are, by their markers: memoryd's promotion (the note it was
    filed for), dreaming's, or None (the user's, as far as the text says)."""
    from ..policy.promote_settle import markers_in
    from ..policy.retire_plan import DREAMING_HEADINGS, dreaming_marked

    lines = text.split("\n")
    out: list[str | None] = []
    for u in sections:
        body = "\n".join(lines[u.section.first - 1 : u.section.last])
        promoted = sorted({source for _, source in markers_in(body)})
        if promoted:
            out.append("promoted by memoryd from " + ", ".join(promoted))
        elif u.section.heading in DREAMING_HEADINGS or dreaming_marked(body):
            out.append("dreaming's")
        else:
            out.append(None)
    return out


def _when(ts: float | None) -> str:
    return "never" if ts is None else (clock.iso(ts) or "")[:16].replace("T", " ")


def cmd_sections(args: argparse.Namespace, ctx: Context) -> int:
    from ..results import counted
    from ..section_report import CUT, NEVER_UNSEEN, NOT_LOADED, PARTLY, report_doc, report_of_groups
    from .hits import _workspace_agents

    now = ready_to_decide(args, ctx)
    rel = to_relpath(ctx, args.path)
    # (the workspace's own agents: another workspace's MEMORY.md is another file, whose hits
    # share this one's name; --agent: that agent's hits on its own workspace's file)
    named, ws = _workspace_agents(ctx, args.agent)
    agents = named if args.agent is not None else ctx.paths.agents_counted(ws)
    if rel.startswith(("tiers/", "../")):
        raise UsageError(f"{args.path}: sections covers the workspace's memory files")
    text = _read_text(ws / rel)
    if text is None:
        raise UsageError(f"{rel}: no such file in {ws}")
    cut, limits = bootstrap_cut_of(ctx, ws, rel)
    rep = report_of_groups(text, _hit_groups(ctx, rel, agents, now), cut)
    doc: dict[str, Any] = {"path": rel, "workspace": str(ws), **report_doc(rep, clock.iso)}
    owners = _owners(text, rep.sections)
    for row, owner in zip(doc["sections"], owners, strict=True):
        row["written_by"] = owner
    if limits is not None:
        from ..bootstrap_cut import OPENCLAW_VERSION

        doc["bootstrap"] = {
            **(doc["bootstrap"] or {}),
            "rules_of": f"OpenClaw {OPENCLAW_VERSION}",
            "bootstrapMaxChars": limits[0],
            "bootstrapTotalMaxChars": limits[1],
            "refused_by_openclaw": _limit_faults(ctx, ws),
        }
    t = rep.tally
    lines = [
        f"sections of {rel} — {counted(len(rep.sections), 'section')}, {rep.chars:,} "
        f"characters; {counted(t.hits_total, 'hit')}"
        + (f" ({t.unplaced_total} unplaced)" if t.unplaced_total else "")
        + (f", {counted(t.whole_file, 'read')} of the whole file" if t.whole_file else ""),
    ]
    if cut is not None and limits is not None:
        budget = f"bootstrapMaxChars {limits[0]:,}, bootstrapTotalMaxChars {limits[1]:,}"
        if cut.never:
            lines.append(
                f"bootstrap ({budget}): not loaded at all; contextInjection is \"never\": "
                "OpenClaw puts no bootstrap file into any session"
            )
        elif cut.unreadable:
            from ..bootstrap import OPENCLAW_READ_MAX, UNREADABLE

            lines.append(
                f"bootstrap ({budget}): not loaded at all; OpenClaw reads no bootstrap file over "
                f"{OPENCLAW_READ_MAX:,} bytes, a new session gets {UNREADABLE!r} instead"
            )
        elif not cut.loaded:
            lines.append(
                f"bootstrap ({budget}): not loaded at all; the files before it take the whole "
                "total budget"
            )
        elif cut.truncated:
            lines.append(
                f"bootstrap ({budget}): a new session gets the first {cut.head:,} and the last "
                f"{cut.tail:,} characters; {cut.dropped:,} in between are cut"
            )
        else:
            lines.append(f"bootstrap ({budget}): loaded whole in every new session")
        for fault in doc["bootstrap"]["refused_by_openclaw"]:
            lines.append(
                f"note: openclaw.json's {fault} is no whole number above 0: OpenClaw refuses "
                "the file (`openclaw config validate`): no session starts on it until it is "
                "fixed"
            )
    lines.append(
        f"  {'30d':>4} {'90d':>4}  {'last hit':16}  {'chars':>7}  "
        + (f"{'bootstrap':10}  " if cut is not None else "")
        + "section"
    )
    for n, u in enumerate(rep.sections):
        flag = f"   ← {u.label}" if u.label else ""
        if owners[n]:
            flag += f"   [{owners[n]}]"
        lines.append(
            f"  {u.hits_30d:>4} {u.hits_90d:>4}  {_when(u.last_hit):16}  {u.section.chars:>7,}  "
            + (f"{u.bootstrap or '':10}  " if cut is not None else "")
            + f"{u.section.title} (line {u.section.first}){flag}"
        )
    if t.unplaced_total:
        lines.append(
            f"  {t.unplaced_30d:>4} {t.unplaced_90d:>4}  {_when(t.last_unplaced):16}  "
            f"{'':>7}  " + (f"{'':10}  " if cut is not None else "")
            + "unplaced: hits whose text is no longer in the file"
        )
    if t.by_lines:
        lines.append(
            f"note: {t.by_lines} hits were placed by their line range alone (counted before "
            "memoryd kept a hit's text, or their text had no line to tell it by)"
        )
    if cut is not None:
        unseen = sum(1 for u in rep.sections if u.label == NEVER_UNSEEN)
        dropped = sum(1 for u in rep.sections if u.bootstrap in (CUT, NOT_LOADED))
        partly = sum(1 for u in rep.sections if u.bootstrap == PARTLY)
        lines.append(
            f"{counted(dropped, 'section')} {'is' if dropped == 1 else 'are'} wholly in the part "
            f"a session never gets ({unseen} of them never looked up: the agent has never seen "
            f"them), {partly} partly."
        )
        lines.append(
            "note: hits count lookups only. A section in the loaded part is in every new main "
            "session's context and may be used without any lookup."
        )
    emit(ctx, args, doc, lines)
    return 0
