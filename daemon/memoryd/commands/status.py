"""``memoryd status``: is a daemon running; sources, hits, jobs at a glance.

Reads the state database (read-only), the lock and the daemon's health note, and works
whether or not a daemon runs; imports neither the daemon nor the scanner.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import clock
from ..hit_counts import CLOCK_SKEW, hits_since
from ..results import counted
from .context import Context
from .formats import human_bytes, json_dumps

if TYPE_CHECKING:
    from pathlib import Path

    from ..config import Config, Paths
    from ..store import Store


def collect_status(ctx: Context) -> dict[str, Any]:
    """Everything ``memoryd status`` shows, as plain data (also the --json document).

    Reads only, and imports neither the daemon nor the scanner: next runs come from
    :mod:`memoryd.timerules` (its pure cron reading, checked against the APScheduler
    trigger the daemon fires with), unread bytes from a stat per transcript.
    """
    from ..config import job_schedules, schedule_timezone
    from ..health import damage_of, read_health
    from ..locks import LOCK_NAME, lock_holder
    from ..store import Store, state_db_exists
    from ..store_errors import StoreError
    from ..timerules import SCHEDULED_JOBS, next_fire

    cfg, paths = ctx.cfg, ctx.paths
    now = clock.now()
    tz = schedule_timezone(cfg)
    schedules = job_schedules(cfg)
    pid = lock_holder(paths.memoryd_dir)
    note = read_health(paths.memoryd_dir)
    damage = damage_of(note, paths.db)
    if damage is not None:  # the daemon stopped on it: the same line, the same exit status
        raise StoreError(damage)
    failing = _daemon_trouble(note, pid, "scan_failing", ("reason", "unknown"), "attempts")
    stalled = _daemon_trouble(note, pid, "ingest_stalled", ("doing", "a scan"), "waiting")
    doc: dict[str, Any] = {
        "daemon": {
            "running": pid is not None,
            "pid": pid or None,
            "started": None,
            "lock": str(paths.memoryd_dir / LOCK_NAME),
            "scan_failing": failing,
            "ingest_stalled": stalled,
        },
        "state_db": str(paths.db),
        "now": clock.iso(now),
        "timezone": str(tz),
        "sources": {"followed": 0, "vanished": 0},
        "pending_bytes": 0,
        # Before any scan: what the first one will read; during the daemon's first: how far.
        "not_scanned": None,
        "first_scan": None,
        "hits": {"last_hour": 0, "last_day": 0, "total": 0},
        "malformed_lines": 0,
        "oversized_lines": 0,
        "memory_calls": {"direct": 0, "tool_call": 0, "code": 0},
        "unrecognised": {"count": 0, "example": None},
        "failed_sources": [],
        "jobs": {},
    }
    store = Store.open(paths.db, readonly=True) if state_db_exists(paths.db) else None
    try:
        if store is not None:
            _fill_from_store(doc, store, ctx, now)
        if store is None or (doc["sources"]["followed"] == 0 and doc["hits"]["total"] == 0):
            _fill_not_scanned(doc, ctx, store)
        if pid:
            from ..progress import FIRST_SCAN_NOTE, read_note

            doc["first_scan"] = read_note(paths.memoryd_dir / FIRST_SCAN_NOTE, pid)
        for name in SCHEDULED_JOBS:
            spec = schedules.get(name)  # None: switched off
            last = store.last_job(name) if store is not None else None
            # strictly after now, as the daemon's trigger
            nxt = next_fire(spec, now + 1e-3, tz) if spec is not None else None
            doc["jobs"][name] = {
                "schedule": getattr(cfg.schedule, name),
                "off": spec is None,
                "last_period": last[0] if last else None,
                "last_status": last[1] if last else None,
                "last_finished": clock.iso(last[2]) if last else None,
                "last_summary": _first_line(last[3]) if last else None,
                "next_run": clock.iso(nxt),
            }
        from .common import archive_searched

        doc["expire"] = _rails_status(cfg, store, archive_searched(ctx), paths.memoryd_dir)
        doc.update(_memory_at_a_glance(paths, store, cfg.archive.dir))
        from .plugin_state import plugin_state

        doc["plugin"] = plugin_state(paths.memoryd_dir, paths.openclaw)
    finally:
        if store is not None:
            store.close()
    return doc


def _daemon_trouble(
    note: dict[str, Any], pid: int | None, key: str, text: tuple[str, str], count: str
) -> dict[str, Any] | None:
    """The running daemon's failing scans or stalled ingest worker from its health note, as
    ``{since, <text>, <count>}`` (None when all is well). Only a note of the daemon holding
    the lock counts: one left by a daemon that died says nothing about the one running now."""
    trouble = note.get(key)
    if pid is None or not isinstance(trouble, dict) or (pid and note.get("pid") != pid):
        return None
    try:
        since = clock.iso(float(trouble["since"]))
    except (KeyError, TypeError, ValueError, OverflowError):
        since = None
    return {
        "since": since,
        text[0]: str(trouble.get(text[0]) or text[1]),
        count: int(trouble.get(count) or 0),
    }


_EVENT_KEYS = ("at", "outcome", "path", "archived", "query", "trigger", "score", "latency")


def _recent_event(e: dict[str, Any]) -> dict[str, Any]:
    """A restore on demand's recent event, as ``status`` shows it."""
    shown = {key: e.get(key) for key in _EVENT_KEYS}
    return {**shown, "at": clock.iso(e.get("at")), "trigger": e.get("trigger", "search")}


def _rails_status(
    cfg: Config, store: Store | None, searched: bool = False, memoryd_dir: Path | None = None
) -> dict[str, Any]:
    """The scheduled expire's rails and restore on demand, as ``status`` shows them
    (``searched``: OpenClaw searches the archive itself; ``memoryd_dir``: where a dry run
    kept what it learned, shown before any run recorded its own)."""
    from ..ondemand_outcomes import recent_events
    from ..policy import rails

    recorded = None
    calibration = None
    events: list[dict[str, Any]] = []
    counters: dict[str, int] = {}
    if store is not None:
        try:
            recorded = store.get_meta(rails.CONSENT_META)
            calibration = store.get_meta("expire.calibration")  # own_history.CALIBRATION_META
            events = recent_events(store)
            counters = store.counters()
        except sqlite3.Error:
            pass
    consent = rails.consent_of(cfg.expire.auto, recorded)
    learned = _learned_by_a_command(cfg, memoryd_dir) if calibration is None else None
    return {
        "consent": {
            "given": consent.given,
            "by": consent.by,
            "at": clock.iso(consent.at),
            "text": consent.describe(),
        },
        "max_fraction_per_run": cfg.expire.max_fraction_per_run,
        "chance": _chance_status(cfg, calibration, learned, history=store is not None),
        "archive_searched_by_openclaw": searched,
        "restore_on_demand": {
            "enabled": cfg.expire.restore_on_demand,
            "restored": int(counters.get("restored_on_demand", 0)),
            "left_alone": int(counters.get("restore_on_demand_conflicts", 0)),
            "failed": int(counters.get("restore_on_demand_failures", 0)),
            "recent": [_recent_event(e) for e in events[-5:]],
        },
    }


def _memory_at_a_glance(paths: Paths, store: Store | None, archive_dir: str) -> dict[str, Any]:
    """The tier store's notes, the promotion candidates waiting, and memoryd's archive.

    What the OpenClaw plugin's ``/memoryd`` says in a chat, read without writing:
    the tiers are counted from the folders, the candidates come from the last promote
    report (the job that nominates them writes it), the archive from the journal.
    """
    import json

    root = paths.tiers_root
    tiers: dict[str, Any] = {"root": str(root), "present": root.is_dir(), "notes": {}, "hot": []}
    if tiers["present"]:
        # Counted with scandir as the tier store's scan_tier reads a tier (importing the tier
        # store would cost `status` its dataclasses).
        for tier in ("hot", "warm", "gist", "forgotten"):
            found: list[tuple[float, str]] = []
            try:
                if os.path.islink(root / tier):  # (organize refuses it: none of its notes)
                    raise NotADirectoryError(str(root / tier))
                with os.scandir(root / tier) as entries:
                    for e in entries:
                        note = e.name.endswith(".md") and not e.name.startswith(".")
                        if note and e.is_file(follow_symlinks=False):
                            found.append((e.stat(follow_symlinks=False).st_mtime, e.name))
            except OSError:
                pass
            tiers["notes"][tier] = len(found)
            if tier == "hot":
                tiers["hot"] = [name for _, name in sorted(found, key=lambda f: (-f[0], f[1]))]
    promotion: dict[str, Any] = {"pending": None, "generated": None, "report": None}
    report = paths.reports_dir / "promote_report.json"
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        promotion["pending"] = 0 if data.get("applied") else len(data.get("candidates") or [])
        promotion["generated"] = data.get("generated")
        promotion["report"] = str(report.with_suffix(".md"))
        promotion["candidates"] = [c.get("path") for c in data.get("candidates") or []][:10]
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    if store is not None:
        # The last run a sub-session carried out.
        try:
            row = store.conn.execute(
                "SELECT r.run, r.settled, r.state, (SELECT COUNT(DISTINCT e.source) FROM "
                "promote_entries e WHERE e.run = r.run AND e.state = 'promoted') FROM "
                "promote_runs r WHERE r.settled IS NOT NULL ORDER BY r.settled DESC LIMIT 1"
            ).fetchone()
        except sqlite3.Error:  # an older database
            row = None
        if row is not None:
            promotion["last_run"] = {"run": row[0], "settled": clock.iso(row[1]), "state": row[2],
                                     "promoted": int(row[3] or 0)}  # fmt: skip
    archive: dict[str, Any] = {"files": 0, "bytes": 0}
    if store is not None:
        from ..move_journal import EXPIRE_BATCH, archived_moves

        try:
            dsts = [move.dst for move in archived_moves(store, EXPIRE_BATCH) if move.dst]
        except sqlite3.Error:
            dsts = []
        for dst in dsts:
            try:
                archive["bytes"] += os.lstat(dst).st_size
            except OSError:
                continue
            archive["files"] += 1
        journaled = {os.path.realpath(dst) for dst in dsts}
    else:
        journaled = set()
    from ..workspace import unjournaled_in_archive

    archive["unjournaled"] = len(unjournaled_in_archive(paths.workspace, archive_dir, journaled))
    return {"tiers": tiers, "promotion": promotion, "archive": archive}


def _learned_by_a_command(cfg: Config, memoryd_dir: Path | None) -> dict[str, Any] | None:
    """What a dry run (``explain``, ``reflect``) learned and kept, under this configuration
    (:data:`memoryd.policy.chance_shown.LEARNED_FILE`); None when there is none."""
    import json

    from ..policy import chance_shown as cb

    if memoryd_dir is None:
        return None
    try:
        doc = json.loads((memoryd_dir / cb.LEARNED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != cb.learned_key(cfg):
        return None
    return doc


def _chance_status(
    cfg: Config,
    recorded: str | None,
    learned: dict[str, Any] | None = None,
    *,
    history: bool = False,
) -> dict[str, Any] | None:
    """What the last expire run decided with under ``likely``: the chance calibrated on how
    many of the user's verdicts, the cut chosen and its measured rates; or the generic
    model's. Before any run, what a dry run learned (``learned``, its time as
    ``learned_at``); with neither, only that nothing has decided yet (a ``history`` of hits
    may hold enough verdicts already: only learning tells; without one, the generic model's).
    None under another policy. A damaged record reads as none yet."""
    import json

    if cfg.expire.policy != "likely":
        return None
    try:
        doc = json.loads(recorded) if recorded else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict) and learned is not None:
        at = learned.get("at")
        doc = {k: v for k, v in learned.items() if k not in ("key", "model")}
        doc["learned_at"] = clock.iso(at) if isinstance(at, int | float) else None
    if not isinstance(doc, dict) and not history:
        doc = {"calibrated": False, "text": "no expire run has decided yet; the generic "
               "model's chance until 200 past verdicts over 3 runs are known"}  # fmt: skip
    if not isinstance(doc, dict):
        return {"calibrated": False, "text": "no expire run has decided yet; `memoryd expire` "
                "says what its chance is calibrated on (your own past verdicts once 200 over "
                "3 runs are known, else the generic model's)",
                "shown_as": "chances shown as a percent only where calibrated on your history "
                "and holding at your past runs, else as a band"}  # fmt: skip
    return {**doc, "shown_as": _chance_shown_as(doc)}


def _learned_words(ch: dict[str, Any]) -> str:
    """The end of the ``chance:`` line when a dry run learned it, before any run decided."""
    if "learned_at" not in ch:
        return ""
    return (f"; learned at {ch['learned_at']} by a dry run, explain or reflect: "
            "no expire run has decided yet")  # fmt: skip


def _chance_shown_as(doc: dict[str, Any]) -> str:
    """How ``expire`` and ``explain`` show a chance now: as a percent where the
    user's calibration holds at the past runs, else a band or "uncertain", and why."""
    from ..policy import chance_shown as cb

    calibrated = bool(doc.get("calibrated"))
    track = doc.get("track") if isinstance(doc.get("track"), list) else None
    precision = cb.chance_precision(track, calibrated)
    words = cb.precision_words(precision, track, calibrated)
    if precision == cb.PERCENT:
        return ("chances shown as a percent: at your past runs they came within 0.10 of what "
                f"followed in every one of {track[1] if track else 0} chance bins")  # fmt: skip
    return "chances " + words


def _first_line(text: str | None) -> str | None:
    return text.strip().splitlines()[-1] if text and text.strip() else None


def _failed_sources(conn: Any) -> list[dict[str, Any]]:
    """The sources the last scans could not read (none on a database from before them)."""
    try:
        rows = conn.execute(
            "SELECT source, kind, reason, at FROM source_failures ORDER BY source"
        ).fetchall()
    except sqlite3.OperationalError:  # no such table: a state database of an older memoryd
        return []
    return [{"source": s, "kind": k, "reason": r, "since": clock.iso(at)} for s, k, r, at in rows]


def _fill_from_store(doc: dict[str, Any], store: Any, ctx: Context, now: float) -> None:
    conn = store.conn
    try:
        followed, vanished = conn.execute(
            "SELECT COALESCE(SUM(vanished_at IS NULL), 0), "
            "COALESCE(SUM(vanished_at IS NOT NULL), 0) FROM sources"
        ).fetchone()
        doc["sources"] = {"followed": int(followed), "vanished": int(vanished)}
        # (stamped past now + the skew allowed: not counted yet, as hits and explain count)
        ahead = now + CLOCK_SKEW
        hour, day = hits_since(conn, now - 3600, ahead), hits_since(conn, now - 86400, ahead)
        doc["hits"] = {"last_hour": hour, "last_day": day, "total": hits_since(conn)}
        counters = store.counters()
        doc["malformed_lines"] = int(counters.get("malformed_lines", 0))
        doc["oversized_lines"] = int(counters.get("oversized_lines", 0))
        # By route: ingest.ledger_queue's ROUTE_COUNTERS (not imported: status does not load
        # the scanner); direct calls are all the others.
        (calls,) = conn.execute("SELECT COUNT(*) FROM calls WHERE tool != 'cell'").fetchone()
        routed = {r: int(counters.get(f"memory_calls_{r}", 0)) for r in ("tool_call", "code")}
        doc["memory_calls"] = {"direct": max(int(calls) - sum(routed.values()), 0), **routed}
        doc["unrecognised"] = {
            "count": int(counters.get("unrecognised_memory_calls", 0)),
            "example": store.get_meta("unrecognised.example"),
        }
        doc["failed_sources"] = _failed_sources(conn)
        started = store.get_meta("daemon.started")
        if doc["daemon"]["running"] and started:
            doc["daemon"]["started"] = clock.iso(float(started))
    except sqlite3.Error as exc:  # an old or foreign database: say so, show what we have
        _stop_if_unreadable(ctx, exc)
        doc["error"] = f"state database: {exc}"
        return
    try:
        from ..ingest.pending import pending_bytes

        doc["pending_bytes"] = pending_bytes(ctx.cfg, ctx.paths, conn)
    except (OSError, sqlite3.Error) as exc:
        _stop_if_unreadable(ctx, exc)
        doc["error"] = f"pending bytes: {exc}"


def _stop_if_unreadable(ctx: Context, exc: BaseException) -> None:
    """A damaged state database (a page that reads as garbage) is what every other command
    stops on with exit 1: ``status`` too, with the same line, not a warning under counts
    it could not read. So is one another process keeps locked past the wait: each read
    after it would wait as long again."""
    from ..store import BUSY_WAIT_S
    from ..store_errors import StoreDamaged, StoreError, is_busy, is_damage

    if is_damage(exc):
        raise StoreDamaged(ctx.paths.db, str(exc)) from exc
    if is_busy(exc):
        raise StoreError(
            f"{ctx.paths.db}: locked by another process for more than {BUSY_WAIT_S:g} s "
            f"({exc}); `memoryd status` again once it lets go"
        ) from exc


def _fill_not_scanned(doc: dict[str, Any], ctx: Context, store: Store | None) -> None:
    """No transcript read yet: what the first scan will read (a stat per transcript)."""
    from ..ingest.pending import backlog

    try:
        files, size = backlog(ctx.cfg, ctx.paths, store.conn if store is not None else None)
    except (OSError, sqlite3.Error) as exc:
        doc["error"] = f"pending bytes: {exc}"
        return
    doc["not_scanned"] = {"transcripts": files, "bytes": size}
    doc["pending_bytes"] = size


def sources_lines(doc: dict[str, Any]) -> list[str]:
    """The sources and unread lines of ``status``: before the first scan, what it will read;
    while the daemon's first scan runs, how far it is."""
    first, never = doc.get("first_scan"), doc.get("not_scanned")
    if first is not None:
        left = human_bytes(max(first["bytes_total"] - first["bytes_done"], 0))
        return [
            f"sources:     first scan: {first['done']} of {first['total']} transcripts, {left} left"
        ]
    if never is not None:
        n = never["transcripts"]
        return [
            f"sources:     not scanned yet: {n} transcript{'' if n == 1 else 's'}, "
            f"{human_bytes(never['bytes'])} (read by `memoryd scan`, any report, or the daemon)"
        ]
    src = doc["sources"]
    return [
        f"sources:     {src['followed']} followed ({src['vanished']} vanished)",
        f"unread:      {human_bytes(doc['pending_bytes'])}",
    ]


def cmd_status(args: argparse.Namespace, ctx: Context) -> int:
    from ..ondemand_outcomes import asked_words, outcome_words

    ctx.exit_at_once = True  # a read: nothing for Python's teardown to finish
    doc = collect_status(ctx)
    failing = doc["daemon"]["scan_failing"]
    stalled = doc["daemon"]["ingest_stalled"]
    code = 1 if failing or stalled else 0  # a script (or a monitor) learns of it from status
    if args.json:
        ctx.print(json_dumps(doc))
        return code
    d = doc["daemon"]
    if d["running"]:
        since = f" since {d['started']}" if d["started"] else ""
        ctx.print(f"daemon:      running (pid {d['pid'] or '?'}){since}")
    else:
        ctx.print("daemon:      not running")
    if failing:
        ctx.print(
            f"failing:     scans failing since {failing['since']}: {failing['reason']} "
            f"({failing['attempts']} attempts; retried at least once a minute, the hits are "
            "counted once it works)"
        )
    if stalled:
        ctx.print(
            f"stalled:     the ingest worker has made no progress since {stalled['since']} "
            f"({stalled['doing']}; {stalled['waiting']} transcripts wait): no hits are counted. "
            "Its log says where; restart the daemon (systemd's watchdog does)"
        )
    ctx.print(f"state:       {doc['state_db']}")
    for line in sources_lines(doc):
        ctx.print(line)
    h = doc["hits"]
    ctx.print(
        f"hits:        {h['last_hour']} last hour, {h['last_day']} last day, {h['total']} total"
    )
    ctx.print(f"malformed:   {doc['malformed_lines']} lines")
    ctx.print(
        f"oversized:   {doc['oversized_lines']} lines (longer than ingest.max_line_bytes: skipped)"
    )
    c = doc["memory_calls"]
    ctx.print(f"calls:       {c['direct']} direct, {c['tool_call']} tool_call, {c['code']} code")
    u = doc["unrecognised"]
    example = f", e.g. {u['example']}" if u["count"] and u["example"] else ""
    ctx.print(f"unrecognised: {u['count']}{example}")
    for f in doc["failed_sources"]:
        what = {"sqlite": "transcript store", "folder": "transcript folder"}.get(
            f["kind"], "transcript")
        ctx.print(f"not read:    {what} {f['source']}: {f['reason']}")
    ctx.print(f"jobs ({doc['timezone']}):")
    for name, j in doc["jobs"].items():
        last = "never"
        if j["last_period"]:
            last = f"{j['last_status']} {j['last_period']} at {j['last_finished']}"
        if j["off"]:
            ctx.print(f'  {name:<9} off (schedule.{name} = "off")  last: {last}')
            continue
        ctx.print(f"  {name:<9} [{j['schedule']}]  last: {last}  next: {j['next_run']}")
        if name == "expire" and j["last_summary"]:
            ctx.print(f"            {j['last_summary']}")
    ex = doc["expire"]
    ctx.print(f"archiving:   {ex['consent']['text']}")
    ctx.print(
        f"             a scheduled run moves at most {ex['max_fraction_per_run']:.0%} of the "
        "files (expire.max_fraction_per_run); `expire --force` by hand is not capped"
    )
    ch = ex.get("chance")
    if ch is not None:
        if ch.get("calibrated"):
            ctx.print(
                f"chance:      calibrated on {ch['verdicts']} of your past verdicts "
                f"({ch['runs']} runs); cut {ch['cut']:.0%} ({ch['rule']}): "
                f"{ch['strong_rate']:.0%} of such archives later read or retrieved first "
                f"(target {ch['target']:.0%}), {ch['coverage']:.0%} of the unneeded archived "
                f"(floor {ch['floor']:.0%})" + _learned_words(ch)
            )
        else:
            ctx.print(f"chance:      {ch.get('text', '')}" + _learned_words(ch))
        if ch.get("shown_as"):  # a percent only where it is known to hold
            ctx.print(f"             {ch['shown_as']}")
    rod = ex["restore_on_demand"]
    if not rod["enabled"]:
        ctx.print("restores:    restore on demand is off (expire.restore_on_demand = false)")
    else:
        ctx.print(
            f"restores:    {rod['restored']} on demand, {rod['left_alone']} left alone "
            f"(a file there again, or the archived copy edited), {rod['failed']} failed"
        )
        for e in rod["recent"]:
            ctx.print(
                f"  {e['at']}  {e['path']} {outcome_words(e['outcome'])}  ({asked_words(e)})"
            )
    from .common import extra_paths_of

    kept = [str(e) for e in extra_paths_of(ctx, ctx.paths.workspace)]
    ctx.print(archive_search_line(ex["archive_searched_by_openclaw"], ctx.cfg.archive.dir, kept))
    for line in glance_lines(doc):
        ctx.print(line)
    if "plugin" in doc:
        from .plugin_state import plugin_line

        ctx.print(plugin_line(doc["plugin"]))
    if "error" in doc:
        ctx.print(f"warning:     {doc['error']}")
    if failing:
        print(
            f"memoryd: scans failing since {failing['since']}: {failing['reason']}",
            file=sys.stderr,
        )
    return code


def archive_search_line(searched: bool, archive_dir: str, extra: Sequence[str] = ()) -> str:
    """Whether OpenClaw's own search finds archived notes, and how to let it (README, "Let
    OpenClaw search the archive too"): memoryd never writes OpenClaw's config. The command
    keeps the folders ``extra`` it already searches (``set`` replaces the list)."""
    if searched:
        return "indexed:     OpenClaw searches the archive too: a search finds archived notes"
    import json
    import shlex

    from ..workspace import archive_root

    wanted = json.dumps([*extra, archive_root(archive_dir) or "memory-archive"])
    return (
        "indexed:     OpenClaw does not search the archive; to let it: openclaw config set "
        f"memory.search.extraPaths {shlex.quote(wanted)} --strict-json"
    )


def glance_lines(doc: dict[str, Any]) -> list[str]:
    """The tier store, promotion and archive lines of ``status`` (also ``/memoryd``'s facts)."""
    out = []
    t = doc.get("tiers") or {}
    if t.get("present"):
        counts = ", ".join(f"{n} {tier}" for tier, n in t["notes"].items())
        out.append(f"tier store:  {counts}  ({t['root']})")
    else:
        out.append(f"tier store:  none (create {t.get('root')} to start one)")
    p = doc.get("promotion") or {}
    if p.get("pending") is None:
        out.append("promotion:   no promote report yet")
    else:
        out.append(
            f"promotion:   {counted(p['pending'], 'candidate')} pending, as of {p['generated']}"
        )
    last = p.get("last_run")
    if last:
        undone = ", undone since (restore --last)" if last["state"] == "undone" else ""
        out.append(f"             last filed by a sub-session: {last['promoted']} promoted "
                   f"(run {last['run']}, {last['settled']}){undone}")  # fmt: skip
    a = doc.get("archive") or {}
    out.append(
        f"archive:     {counted(a.get('files', 0), 'file')}, {counted(a.get('bytes', 0), 'byte')}"
    )
    if a.get("unjournaled"):
        out.append(f"             and {unjournaled_words(a['unjournaled'])}")
    return out


def unjournaled_words(n: int) -> str:
    """What ``status`` and ``restore --all`` say of archived notes the journal does not know."""
    return (
        f"{counted(n, 'file')} in the archive that memoryd's move journal does not know "
        "(archived before this state database began, or put there by hand): restore cannot "
        "take them back; move one back by hand to the path it keeps below its month's folder"
    )
