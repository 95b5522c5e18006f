"""What the workspace commands share: the output options, the catch-up scan, the path
a user names, printing one document or its lines, and recording a run by hand (nothing here
is heavy to import).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from .. import clock
from .context import Context, UsageError
from .formats import json_dumps


def add_output_options(p: argparse.ArgumentParser) -> None:
    """``--json`` and ``--no-scan``, which every command deciding on the hits takes."""
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument(
        "--no-scan",
        action="store_true",
        help="decide on the hits already counted (no catch-up scan)",
    )


def run_scan(ctx: Context) -> Any:
    """One catch-up pass; returns the ScanStats. On a terminal (and without ``--json``) a
    long scan shows its progress on stderr, wiped before the command's report."""
    from ..ingest.scan import Scanner  # the scanner is not needed to parse arguments

    ctx.require_openclaw()
    scanner = Scanner(ctx.cfg, ctx.paths, ctx.store())
    line = progress_line(ctx, "reading transcripts")
    try:
        return scanner.scan(progress=line)
    finally:
        if line is not None:
            line.close()


def progress_line(ctx: Context, what: str) -> Any:
    """A :mod:`memoryd.progress` line on stderr for a slow loop, or None (not a terminal,
    or ``--json``: a document's reader never sees it)."""
    if not ctx.show_progress:
        return None
    from ..progress import on_terminal

    return on_terminal(what)


def catch_up(ctx: Context) -> Any:
    """The scan a command that reports or decides on the hits runs first.

    Sources it could not read are said on stderr at once (the counts may miss their new
    hits) and kept in ``ctx.catch_up_failed`` for the command's ``--json`` document
    (:func:`with_catch_up`); the command itself goes on with what is counted.
    """
    stats = run_scan(ctx)
    ctx.catch_up_failed = list(stats.failed_sources)
    if ctx.catch_up_failed:
        print(
            f"memoryd: the catch-up scan did not read everything, the counts may miss new "
            f"hits: {failed_summary(ctx.catch_up_failed)}",
            file=sys.stderr,
        )
    return stats


def with_catch_up(ctx: Context, doc: Any) -> Any:
    """A command's JSON document, with the sources its catch-up scan could not read."""
    if ctx.catch_up_failed and isinstance(doc, dict):
        return {**doc, "catch_up_failed_sources": ctx.catch_up_failed}
    return doc


def failed_summary(failed: list[dict[str, str]]) -> str:
    """``N sources could not be read: <first>: <reason> (and M more)``."""
    first = failed[0]
    more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
    return (
        f"{len(failed)} source{'s' if len(failed) > 1 else ''} could not be read: "
        f"{first['source']}: {first['reason']}{more}"
    )


def catch_up_scan(args: argparse.Namespace, ctx: Context) -> None:
    """Count new hits before deciding, so a decision never rests on stale counts (a stat
    per transcript with the daemon running). ``--no-scan`` skips it (and keeps the database
    read-only for a dry run)."""
    if getattr(args, "no_scan", False) or not ctx.paths.state_dir.is_dir():
        return
    catch_up(ctx)


def ready_to_decide(args: argparse.Namespace, ctx: Context) -> float:
    """Check the workspace and count the new hits; the time the decision is made at."""
    require_workspace(ctx)
    catch_up_scan(args, ctx)
    return clock.now()


def require_workspace(ctx: Context) -> Path:
    """The workspace folder, or a usage error naming the key that points at it."""
    ws = ctx.paths.workspace
    if not ws.is_dir():
        raise UsageError(
            f"workspace {ws} is not a folder (set openclaw.workspace in the config, or check "
            "openclaw.json's agents.defaults.workspace)"
        )
    return ws


def to_relpath(ctx: Context, raw: str) -> str:
    """A user-given path as its key: workspace-relative (``memory/x.md``), or ``tiers/<note>``
    for a file of the tier store (``tiers/warm/x.md``, or its path on disk).
    """
    from ..tierstore import key_of_tier_path
    from ..workspace import normalize, relative_to_workspace

    ws = ctx.paths.workspace
    if raw.startswith("tiers/"):
        key = key_of_tier_path(raw)
        if key is None:
            raise UsageError(f"{raw}: not a note of the tier store (tiers/<tier>/<name>.md)")
        return key
    p = Path(raw).expanduser()
    try:
        here = Path.cwd()
    except FileNotFoundError:  # (run in a folder deleted since: a relative path is the workspace's)
        here = ws
    absolute = Path(os.path.abspath(p if p.is_absolute() else here / p))
    for root in {ctx.paths.tiers_root, Path(os.path.realpath(ctx.paths.tiers_root))}:
        try:
            in_store = absolute.relative_to(root)
        except ValueError:
            continue
        key = key_of_tier_path(in_store.as_posix())
        if key is not None:
            return key
    rel = relative_to_workspace(ws, absolute)
    if rel is not None and (p.is_absolute() or absolute.exists()):
        return rel
    extra = extra_paths_of(ctx, ws)
    if extra:  # a note of memory.search.extraPaths outside the workspace: OpenClaw's name
        from ..workspace import classify_result_path, roots_of

        spelled = tuple(r for e in extra for r in roots_of(e))
        key = classify_result_path(
            str(absolute) if p.is_absolute() else raw, roots_of(ws), None, spelled
        )
        if key is not None and key.startswith("../"):
            return key
    if p.is_absolute():
        raise UsageError(f"{raw}: not inside the workspace {ws}")
    norm = normalize(raw)
    if norm is None or norm.startswith(("../", "/")) or norm == "..":
        raise UsageError(f"{raw}: not a path inside the workspace")
    return norm


def emit(ctx: Context, args: argparse.Namespace, doc: Any, text: list[str]) -> None:
    """Print ``doc`` as the one JSON document (``--json``), else the lines of ``text``."""
    if getattr(args, "json", False):
        ctx.print(json_dumps(with_catch_up(ctx, doc)))
    else:
        for line in text:
            ctx.print(line)


def record_run(ctx: Context, job: str, now: float, summary: str) -> None:
    """Record a run by hand as the job's run of its period, as the daemon records its own."""
    from ..config import schedule_timezone
    from ..timerules import period_key

    store = ctx.store()
    with store.transaction():
        store.record_job(job, period_key(job, now, schedule_timezone(ctx.cfg)), "ok", now, summary)


def archive_searched(ctx: Context) -> bool:
    """Whether this install's OpenClaw searches the archive itself (inside ``memory/``, or
    in ``memory.search.extraPaths`` of an agent of the workspace): a search then finds an
    archived note there (``simulate`` replays it; ``status`` says it)."""
    from ..workspace import archive_is_searched

    ws = ctx.paths.workspace
    return archive_is_searched(ctx.cfg.archive.dir, ws, extra_paths_of(ctx, ws))


def extra_paths_of(ctx: Context, workspace: Path) -> tuple[Path, ...]:
    """The ``memory.search.extraPaths`` of the agents working in ``workspace``: their notes
    are counted and shown under the names OpenClaw reports (never moved)."""
    out: list[Path] = []
    for agent in ctx.paths.agents:
        if agent.workspace == workspace:
            out += [p for p in agent.extra_paths if p not in out]
    return tuple(out)
