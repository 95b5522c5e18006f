"""Hit tracking commands: ``scan``, ``hits``, ``export hits-jsonl``, ``demo``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from .. import clock
from ..results import counted
from ..store import Store
from ..workspace import (
    MemoryFile,
    archive_excludes,
    archive_folder_of,
    list_memory_files,
    relative_to_workspace,
    report_skipped_names,
)
from .common import (
    catch_up,
    extra_paths_of,
    failed_summary,
    require_workspace,
    run_scan,
    with_catch_up,
)
from .context import Context, UsageError
from .formats import human_bytes, json_dumps, positive_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scan", help="read new transcript lines once and count memory hits")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_scan)

    p = sub.add_parser("hits", help="hits per memory file, most hit first, and files never hit")
    window = p.add_mutually_exclusive_group()
    window.add_argument(
        "--days", type=positive_int, default=30, metavar="N", help="window (default 30)"
    )
    window.add_argument("--all", action="store_true", help="all time")
    p.add_argument("--top", type=positive_int, metavar="N", help="show only the N most hit files")
    p.add_argument("--agent", help="only this agent's hits (default: every agent of the workspace)")
    p.add_argument("--no-scan", action="store_true", help="report without reading new lines first")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_hits)

    p = sub.add_parser("export", help="export data for other tools")
    what = p.add_subparsers(dest="what", metavar="WHAT")
    what.required = True
    e = what.add_parser("hits-jsonl", help="append new hits to a hit_counts.jsonl file")
    e.add_argument(
        "path", nargs="?", help="target file (default <state>/hit_counts.jsonl; - = stdout)"
    )
    e.set_defaults(func=cmd_export_hits)

    p = sub.add_parser("demo", help="build a small OpenClaw install, scan it, show the report")
    p.add_argument(
        "dir", nargs="?", help="a new or empty folder to build it in (default: a temporary one)"
    )
    p.add_argument(
        "--size",
        type=positive_int,
        metavar="MB",
        help="a heavy user's year instead: about MB megabytes of transcripts (1000: the 600 "
        "transcripts of a 1 GB install; minutes to build and scan)",
    )
    p.set_defaults(func=cmd_demo, needs_openclaw=False)


# --------------------------------------------------------------------------- scan


def cmd_scan(args: argparse.Namespace, ctx: Context) -> int:
    """Exit 0 when every source was read; 1, with a one-line summary, when some failed."""
    stats = run_scan(ctx)
    # Everything is committed now, and the database is closed before the process ends:
    # Python's teardown (freeing every parsed line's objects one by one) adds nothing.
    ctx.exit_at_once = True
    failed = stats.failed_sources
    if not args.json:
        _scan_lines(ctx, stats)
    else:
        ctx.print(json_dumps(stats.as_dict()))
    if failed:
        print(f"memoryd: {failed_summary(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _scan_lines(ctx: Context, stats: Any) -> None:
    ctx.print(
        f"scanned {counted(stats.files_seen, 'transcript')} ({stats.files_read} read, "
        f"{human_bytes(stats.bytes_read)}): {counted(stats.new_hits, 'new hit')}, "
        f"{counted(stats.new_calls, 'new memory call')}, "
        f"{counted(stats.malformed, 'malformed line')}, "
        f"{counted(stats.oversized, 'oversized line')} in {stats.elapsed:.2f} s"
    )
    if stats.resets or stats.renamed:
        ctx.print(f"  {stats.renamed} renamed, {stats.resets} truncated or replaced (re-read)")
    if stats.helper_files:
        ctx.print(f"  {stats.helper_files} of them were read by a helper process, in parallel")
    routes = stats.calls_by_route()
    if routes["tool_call"] or routes["code"]:
        ctx.print(
            f"  memory calls by route: {routes['direct']} direct, {routes['tool_call']} "
            f"tool_call, {routes['code']} code (Tool Search)"
        )
    if stats.unrecognised:
        example = stats.unrecognised_example or ""
        ctx.print(f"  unrecognised: {stats.unrecognised}, e.g. {example}")
    for f in stats.failed_sources:
        ctx.print(f"  not read: {f['source']}: {f['reason']}")


# --------------------------------------------------------------------------- hits


class FileHits(NamedTuple):
    path: str
    hits: int
    last_hit: float | None
    archived: bool = False  # a note expire archived (``--all`` keeps its history)


def hits_report(
    files: Iterable[MemoryFile],
    window: dict[str, tuple[int, float | None]],
    all_time: dict[str, tuple[int, float | None]],
    top: int | None = None,
    archived: Iterable[str] = (),
) -> tuple[list[FileHits], list[str]]:
    """Files ever hit (window count, last hit ever), most hit first; and files never hit.

    Pure. Every file given appears in exactly one of the two lists; ``top`` keeps
    the first N of each (the never-hit ones in path order). ``archived``: the names of
    notes expire archived (no longer listed): those ever hit are shown too, marked, so that
    their history does not look lost next to the total ``status`` counts.
    """
    hit: list[FileHits] = []
    never: list[str] = []
    listed = set()
    for f in files:
        listed.add(f.rel)
        if f.rel in all_time:
            hit.append(FileHits(f.rel, window.get(f.rel, (0, 0.0))[0], all_time[f.rel][1]))
        else:
            never.append(f.rel)
    for rel in sorted(set(archived) - listed):
        if rel in all_time:
            hit.append(FileHits(rel, window.get(rel, (0, 0.0))[0], all_time[rel][1], True))
    hit.sort(key=lambda h: (-h.hits, -(h.last_hit or 0.0), h.path))
    if top:
        return hit[:top], never[:top]
    return hit, never


def _workspace_agents(ctx: Context, only: str | None) -> tuple[list[str], Path]:
    """The agents whose hits are shown, and the workspace whose files they are counted on:
    the primary workspace's agents, or ``--agent``'s own workspace (an agent of another
    workspace has notes of its own under the same names)."""
    ws = ctx.paths.workspace
    ids = [a.id for a in ctx.paths.agents if a.workspace == ws]
    if only is not None:
        from ..config import normalize_agent_id

        named = (only, normalize_agent_id(only))  # ``Work`` is OpenClaw's agent ``work``
        agent = next((a for w in named for a in ctx.paths.agents if a.id == w), None)
        if agent is None:
            followed = ", ".join(a.id for a in ctx.paths.agents) or "none"
            raise UsageError(f"--agent: no agent {only!r} (followed: {followed})")
        return [agent.id], agent.workspace
    return ids, ws


def cmd_hits(args: argparse.Namespace, ctx: Context) -> int:
    # A workspace path that leads nowhere is the user's to fix (exit 2, naming the key),
    # not "0 hits on 0 of 0 files", which reads as an agent that never looked anything up.
    ctx.require_openclaw()
    require_workspace(ctx)
    if args.no_scan:
        ctx.exit_at_once = True  # a read: nothing for Python's teardown to finish
    else:
        catch_up(ctx)
    store = ctx.store()
    agents, workspace = _workspace_agents(ctx, args.agent)
    days = None if args.all else args.days
    now = clock.now()
    # The one hit count (explain, reports and the policies read the same): the files ever
    # hit with their last hit, and the count in the window; a hit up to a day "in the
    # future" counts as now. A window needs no all-time count: older hits are not read.
    windows = () if days is None else (days,)
    tallies = store.hit_counts(now, windows, agents, total=days is None)
    exclude = archive_excludes(workspace, ctx.cfg.archive.dir)  # (an archive inside memory/)
    skipped: list[str] = []
    files = list_memory_files(workspace, exclude, skipped, extra_paths_of(ctx, workspace))
    report_skipped_names(skipped)
    files = _without_archived_copies(files, store, workspace, ctx.cfg.archive.dir)
    # Hits recorded under another spelling of a listed file (memory/Projects.md for
    # memory/projects.md on a Mac) are that file's (docs/paths.md).
    from ..hit_counts import CLOCK_SKEW
    from ..pathmatch import attributed_tallies, attribution_for

    attribution = attribution_for(workspace, [f.rel for f in files], tallies)
    tallies = attributed_tallies(
        store.conn, tallies, attribution, now, windows, agents, skew=CLOCK_SKEW, total=days is None
    )
    if days is None:
        all_time = {path: (t.total or 0, t.last) for path, t in tallies.items()}
        window = all_time
    else:
        all_time = {path: (0, t.last) for path, t in tallies.items()}  # ever hit; count unused
        window = {path: (t.within[0], t.last) for path, t in tallies.items() if t.within[0]}
    archived = _archived_notes(store, workspace) if days is None else []
    shown, never = hits_report(files, window, all_time, args.top, archived)
    never_total = sum(1 for f in files if f.rel not in all_time)
    if args.json:
        doc = {
            "window_days": days,
            "files": [
                {
                    "path": h.path,
                    "hits": h.hits,
                    "last_hit": clock.iso(h.last_hit),
                    **({"archived": True} if h.archived else {}),
                }
                for h in shown
            ],
            "never_hit": never,
            "never_hit_total": never_total,
        }
        ctx.print(json_dumps(with_catch_up(ctx, doc)))
        return 0
    span = "all time" if days is None else f"last {days} days"
    on_disk = {f.rel for f in files}
    listed = on_disk | {h.path for h in shown if h.archived}
    total = sum(n for path, (n, _) in window.items() if path in listed)
    hit_files = sum(1 for path, (n, _) in window.items() if path in listed and n)
    ctx.print(f"memory hits, {span} — workspace {workspace}")
    if shown:
        ctx.print(f"{'hits':>6}  {'last hit (UTC)':<17}  file")
        for h in shown:
            last = (clock.iso(h.last_hit) or "")[:16].replace("T", " ")
            mark = "  (archived)" if h.archived else ""
            ctx.print(f"{h.hits:>6}  {last:<17}  {h.path}{mark}")
    ctx.print(
        f"{counted(total, 'hit')} on {hit_files} of {counted(len(files), 'file')} in the window"
    )
    if never:
        more = f"; the first {len(never)} shown" if len(never) < never_total else ""
        ctx.print(f"never hit ({never_total} of {counted(len(files), 'file')}{more}):")
        for path in never:
            ctx.print(f"        {path}")
    return 0


def _archived_notes(store: Store, workspace: Path) -> list[str]:
    """The workspace-relative names of the notes expire archived and nobody restored (the
    journal's moves whose archived copy is there)."""
    from ..ondemand import archived_files

    names = (relative_to_workspace(workspace, a.src) for a in archived_files(store))
    return [n for n in names if n is not None]


# --------------------------------------------------------------------------- export


def export_hits_jsonl(store: Store, target: Path) -> int:
    """Append to ``target`` every hit not yet in it; returns how many were written.

    Resumable: the id of the last complete record in the file says where to go
    on. A torn last line (a crash mid-write) is cut off first. One ``write`` per
    record on an ``O_APPEND`` descriptor keeps records whole.
    """
    last_id = _last_exported_id(target)
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    written = 0
    try:
        for line in hit_records(store, last_id):
            os.write(fd, line)
            written += 1
        if written:
            os.fsync(fd)
    finally:
        os.close(fd)
    return written


def hit_records(store: Store, after_id: int = 0) -> Iterator[bytes]:
    """Each hit after ``after_id`` as one JSON line: the export format, to a file or stdout."""
    import orjson

    rows = store.conn.execute(
        "SELECT id, ts, memory_path, kind, query, agent, session, call_id, score "
        "FROM hits WHERE id > ? ORDER BY id",
        (after_id,),
    )
    keys = ("id", "ts", "file", "kind", "query", "agent", "session", "call_id", "score")
    for row in rows:
        record = dict(zip(keys, row, strict=True))
        record["ts"] = clock.iso(record["ts"])
        yield orjson.dumps(record) + b"\n"


def _last_exported_id(target: Path) -> int:
    import orjson

    try:
        with open(target, "rb+") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size == 0:
                return 0
            back = min(size, 1 << 16)
            fh.seek(size - back)
            tail = fh.read(back)
            if not tail.endswith(b"\n"):  # torn last record: cut it
                cut = tail.rfind(b"\n") + 1
                fh.truncate(size - back + cut)
                tail = tail[:cut]
            lines = tail.splitlines()
    except FileNotFoundError:
        return 0
    for line in reversed(lines):
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("id"), int):
            return rec["id"]
    return 0


def cmd_export_hits(args: argparse.Namespace, ctx: Context) -> int:
    catch_up(ctx)
    store = ctx.store()
    if args.path == "-":
        for line in hit_records(store):
            sys.stdout.buffer.write(line)
        return 0
    target = Path(args.path) if args.path else ctx.paths.memoryd_dir / "hit_counts.jsonl"
    written = export_hits_jsonl(store, target)
    ctx.print(f"appended {counted(written, 'hit')} to {target}")
    return 0


# --------------------------------------------------------------------------- demo


def cmd_demo(args: argparse.Namespace, ctx: Context) -> int:
    import tempfile  # only the demo needs it

    from .. import demo_install, demo_notes

    cli_main = ctx.command_line().main

    if args.dir:
        # Absolute: the config written below names its folders, and must work from anywhere.
        root = Path(os.path.abspath(args.dir))
        _check_demo_target(root)
        root.mkdir(parents=True, exist_ok=True)
    else:
        root = Path(tempfile.mkdtemp(prefix="memoryd-demo-"))
    now = clock.now()
    if args.size:
        ctx.print(f"building about {args.size} MB of transcripts in {root} ...")
        ctx.out.flush()
    install = demo_install.build(root, now=now, size_mb=args.size)
    tiers_root = install.state_dir / "memory_fs"  # the default [tiers] root for this state dir
    demo_notes.write_tier_store(tiers_root, now=now)
    config = root / "memoryd.toml"
    config.write_text(
        "# written by `memoryd demo`\n"
        f"[openclaw]\nstate_dir = {str(install.state_dir)!r}\n"
        f"workspace = {str(install.workspace)!r}\n"
        f"[state]\ndir = {str(root / 'memoryd-state')!r}\n",
        encoding="utf-8",
    )
    ctx.print(f"built a demo OpenClaw install in {root}")
    ctx.print(f"  transcripts: {install.state_dir}/agents/main/sessions/")
    ctx.print(f"  workspace:   {install.workspace}")
    ctx.print("")
    import shlex  # (only the demo prints lines to paste)

    quoted = shlex.quote(str(config))  # a folder with a space in its name pastes whole
    ctx.print(f"$ memoryd --config {quoted} scan")
    ctx.out.flush()
    code = cli_main(["--config", str(config), "scan"])
    ctx.print("")
    ctx.print(f"$ memoryd --config {quoted} hits --top 10")
    ctx.out.flush()
    code = code or cli_main(["--config", str(config), "hits", "--top", "10", "--no-scan"])
    ctx.print("")
    ctx.print(f"A tier store of {len(demo_notes.DEMO_NOTES)} notes, 1 hour to 40 days old, is in")
    ctx.print(f"{tiers_root}/ (hot/ warm/ gist/ forgotten/). Try:")
    ctx.print(f"  memoryd --config {quoted} organize --dry-run   # what would move, and why")
    ctx.print(f"  memoryd --config {quoted} recall rate limits   # warm/ note back to hot/")
    ctx.print(f"  memoryd --config {quoted} inject               # the hot/ notes for a session")
    ctx.print("")
    ctx.print("To use memoryd on your own OpenClaw install, run `memoryd scan` and `memoryd hits`:")
    ctx.print("the state dir is found as OpenClaw finds it ($OPENCLAW_STATE_DIR, ~/.openclaw);")
    ctx.print("or point it elsewhere with [openclaw] state_dir / workspace in a config file")
    ctx.print("(see config/memoryd.toml) passed as --config FILE or $MEMORYD_CONFIG.")
    return code


def _check_demo_target(root: Path) -> None:
    """The demo builds in a new or empty folder only: never among someone's files."""
    if root.is_dir():
        try:
            with os.scandir(root) as it:
                crowded = any(True for _ in it)
        except OSError as exc:
            raise UsageError(f"{root}: cannot list it ({exc.strerror})") from None
        if crowded:
            raise UsageError(
                f"{root} is not empty: give a new or empty folder (or none, for a temporary one)"
            )
    elif os.path.lexists(root):
        raise UsageError(f"{root} exists and is not a folder: give a new or empty folder")


def _without_archived_copies(
    files: list[MemoryFile], store: Store, workspace: Path, archive_dir: str
) -> list[MemoryFile]:
    """``files`` without the copies expire archived (listed when OpenClaw searches the
    archive, ``memory.search.extraPaths``): their hits are their notes' (the ingest counts
    them so), and a user's own file in the archive folder stays listed."""
    if not any(archive_folder_of(f.rel, archive_dir) for f in files):
        return files
    from ..move_journal import EXPIRE_BATCH, archived_moves

    copies = {relative_to_workspace(workspace, m.dst) for m in archived_moves(store, EXPIRE_BATCH)}
    return [f for f in files if f.rel not in copies]
