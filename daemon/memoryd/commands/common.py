"""What the workspace commands share: the output options, the catch-up scan, the path
a user names, printing one document or its lines, and recording a run by hand.

Used by ``expire``, ``reflect``/``promote``, ``search``, ``explain``, the marks and
``restore`` (one module each); nothing here is heavy to import.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from .. import clock
from ..cli import Context, UsageError, json_dumps


def add_output_options(p: argparse.ArgumentParser) -> None:
    """``--json`` and ``--no-scan``, which every command deciding on the hits takes."""
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument(
        "--no-scan",
        action="store_true",
        help="decide on the hits already counted (no catch-up scan)",
    )


def run_scan(ctx: Context) -> Any:
    """One catch-up pass; returns the ScanStats."""
    from ..ingest.scan import Scanner  # the scanner is not needed to parse arguments

    ctx.require_openclaw()
    return Scanner(ctx.cfg, ctx.paths, ctx.store()).scan()


def catch_up_scan(args: argparse.Namespace, ctx: Context) -> None:
    """Count new hits before deciding, so a decision never rests on stale counts.

    With the daemon running this is a no-op rescan (a stat per transcript). It
    writes hits only, never a memory file; ``--no-scan`` skips it (and keeps the
    database read-only for a dry run).
    """
    if getattr(args, "no_scan", False) or not ctx.paths.state_dir.is_dir():
        return
    run_scan(ctx)


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
    absolute = Path(os.path.abspath(p if p.is_absolute() else Path.cwd() / p))
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
    if p.is_absolute():
        raise UsageError(f"{raw}: not inside the workspace {ws}")
    norm = normalize(raw)
    if norm is None or norm.startswith(("../", "/")) or norm == "..":
        raise UsageError(f"{raw}: not a path inside the workspace")
    return norm


def emit(ctx: Context, args: argparse.Namespace, doc: Any, text: list[str]) -> None:
    """Print ``doc`` as the one JSON document (``--json``), else the lines of ``text``."""
    if getattr(args, "json", False):
        ctx.print(json_dumps(doc))
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
