"""The user's own history as the replay reads it, and what ``likely`` learns from it.

Imperative shell around :mod:`memoryd.policy.replay` and
:mod:`memoryd.policy.calibration`: it reads the workspace's files, the files memoryd
archived (from the journal), the hits with their strength and the search queries
(:func:`gather`, what ``memoryd simulate`` replays), and replays the configured
``likely`` over the past runs of the expire schedule to get the calibration and cut it
has learned by now (:func:`learned_policy`, what ``expire``, ``explain``, ``status``
and the monthly job decide and print with). Computed from the state database, so the
monthly run always uses the verdicts whose 60 days have passed by then (or all but
``calibration.SHORT_BY`` of them, labelled with what had happened); what the run learned
is recorded in the database and what a dry run, ``explain`` or ``reflect`` learned in
:data:`LEARNED_FILE`, each reused until learning again would know more. Reads the
database only.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from dataclasses import replace
from datetime import tzinfo
from pathlib import Path
from typing import Any, NamedTuple


def fire_times(expr: str, tz: tzinfo, start: float, end: float) -> list[float]:
    """Every fire time of the cron ``expr`` in ``tz`` within [start, end] (epoch seconds).

    ``"off"`` (the job is switched off) replays the default expire schedule. Read with
    :mod:`memoryd.timerules`, the parser configuration validation and ``status`` use, which a
    property test holds to the APScheduler trigger the daemon fires with.
    """
    from .timerules import next_fire

    spec = _replayed_schedule(expr)
    out: list[float] = []
    t = start
    while (fire := next_fire(spec, t, tz)) is not None and fire <= end:
        out.append(fire)
        t = fire + 1
    return out


def _replayed_schedule(expr: str) -> Any:
    """The expire schedule a replay runs (the default one for ``"off"``), parsed."""
    from .config import ScheduleConfig
    from .timerules import parse, schedule_is_off

    if not expr.strip() or schedule_is_off(expr):
        expr = ScheduleConfig().expire
    return parse(expr)


def archived_files(paths: Any, store: Any) -> list[tuple[str, Path]]:
    """(original workspace-relative path, where it is now) of each file expire archived
    that is still in the archive (the journal says where it came from)."""
    from .move_journal import EXPIRE_BATCH, archived_moves
    from .workspace import relative_to_workspace

    ws = paths.workspace
    out: dict[str, Path] = {}
    for move in archived_moves(store, EXPIRE_BATCH):
        src, dst = move.src, move.dst
        key = relative_to_workspace(ws, src)
        if key is not None and dst and os.path.isfile(dst) and not os.path.islink(dst):
            out[key] = Path(dst)  # the latest archive of that path wins
    return sorted(out.items())


def gather(cfg: Any, paths: Any, store: Any, now: float, *, texts: bool = True) -> dict[str, Any]:
    """Plain values for the replay: files, hits with strength, calls, texts."""
    from .config import schedule_timezone
    from .policy import matches_any
    from .policy.expire import USER_PROFILE
    from .policy.replay import Call, ReplayFile
    from .signals import created_time, file_kind, read_text
    from .strength import load_hit_rows
    from .workspace import archive_excludes, list_memory_files

    ws = paths.workspace
    tz = schedule_timezone(cfg)
    agents = paths.agents_counted(ws)
    present = {
        f.rel: (f.size, f.mtime)
        for f in list_memory_files(ws, archive_excludes(ws, cfg.archive.dir))
    }
    on_disk = list(present)
    with_texts = texts
    text_of = {rel: read_text(ws, rel) for rel in present} if with_texts else {}
    for rel, where in archived_files(paths, store):
        if rel in present:
            continue  # re-created (or back) at its old path: today's file counts
        st = where.stat()
        present[rel] = (st.st_size, st.st_mtime)
        if with_texts:
            text_of[rel] = read_text(where.parent, where.name)
    # Hits and marks under another spelling of a file (a Mac's case- and normalization-
    # insensitive names) are that file's, as in every plan (docs/paths.md).
    from .pathmatch import attribution_for, canonical_rows

    marks = store.marks("marked")
    kept = kept_replay(store.conn, agents, present, now)
    if kept is not None:
        recorded = set(kept.first_hit)
        owner = attribution_for(ws, list(present), recorded | marks, probe=on_disk).owner
        if owner:  # (renamed and merged rows rank otherwise than the kept strength says)
            kept = None
    first_hit: dict[str, float] = {}
    if kept is not None:
        hits, asked = kept.hits, kept.calls
        first_hit = {p: ts for p, ts in kept.first_hit.items() if ts is not None and p in present}
    else:
        rows = load_hit_rows(store.conn, agents=agents)
        owner = attribution_for(
            ws, list(present), {r.path for r in rows} | marks, probe=on_disk
        ).owner
        rows = canonical_rows(rows, owner)
        hits, seen_calls = replay_hits_ranked(rows, present, now)
        for h in hits:
            if h.ts < first_hit.get(h.path, math.inf):
                first_hit[h.path] = h.ts
        queries = dict(
            ((a, c), q)
            for a, c, q in store.conn.execute(
                "SELECT agent, call_id, query FROM calls WHERE query IS NOT NULL"
            )
        )
        asked = [(ts, queries.get(key)) for key, ts in seen_calls.items()]
    marked = {owner.get(m, m) for m in marks}
    pins = (*cfg.expire.pinned, *store.marks("pinned"))
    files = []
    for rel, (size, mtime) in sorted(present.items()):
        created, source = created_time(rel, mtime, tz)
        if source == "mtime" and rel in first_hit:
            created = min(created, first_hit[rel])
        protected = (
            rel == USER_PROFILE  # (never archived: expire.decide)
            or bool(matches_any(rel, cfg.expire.protect))
            or rel in marked
            or bool(matches_any(rel, pins))
        )
        files.append(ReplayFile(rel, created, size, protected, file_kind(rel)))
    calls = [Call(ts, q) for ts, q in asked if q and not q.startswith("__dreaming")]
    return {
        "files": files,
        "hits": hits,
        "calls": calls,
        "texts": text_of,
        "first_hit": min(first_hit.values(), default=None),
        "tz": tz,
    }


class KeptReplay(NamedTuple):
    """What :func:`kept_replay` reads: the replay's hits of the files asked for, the search
    calls (the time of its first hit and its query, None when not recorded; first seen
    first), each recorded path's first hit up to now (None: none by then)."""

    hits: list[Any]
    calls: list[tuple[float, str | None]]
    first_hit: dict[str, float | None]


def kept_replay(conn: Any, agents: Any, present: Any, now: float) -> KeptReplay | None:
    """The replay's hits of the files in ``present`` with the strength the database keeps
    with each (``hits.strong_from``: :mod:`memoryd.kept_strength`), in the order recorded,
    what :func:`replay_hits_ranked` gives from every row ranked again: no call ranked in
    Python, each hit made by SQLite as the replay takes it. None when the kept strength
    cannot stand for ranking every call again: the column is missing or its fill pending,
    or the workspace is one of several (its agents' rows are read as
    :func:`memoryd.strength.load_hit_rows` reads them).

    The kept strength says from when a hit is strong (a get, or a search result retrieved
    first or of unknown rank: at its own time; one read later: at that read; never: NULL),
    not its rank; the replay asks no more of a hit than that
    (:func:`memoryd.policy.replay.is_strong` at a time not before it). So a hit strong at
    its own time is replayed as a first result (rank 1), another as one ranked lower
    (rank 2) read at its ``strong_from``, or never read. A replay allows no clock skew
    (:func:`memoryd.hit_counts.hit_counts` with skew=0): a hit dated after now has not
    happened yet, as at each run t only hits with ts <= t count."""
    from itertools import compress
    from operator import itemgetter

    from .kept_strength import strengths_kept
    from .policy.replay import ReplayHit

    if agents is not None or not strengths_kept(conn):
        return None
    rows = conn.execute(
        "SELECT memory_path, ts, kind,"
        " CASE WHEN kind != 'search' THEN NULL WHEN strong_from = ts THEN 1 ELSE 2 END,"
        " CASE WHEN kind = 'search' AND strong_from IS NOT ts THEN strong_from END"
        " FROM hits WHERE ts <= ? ORDER BY id",
        (now,),
    ).fetchall()
    wanted = compress(rows, map(present.__contains__, map(itemgetter(0), rows)))
    hits = list(map(functools.partial(tuple.__new__, ReplayHit), wanted))
    # each call at its first hit in the order recorded (the row of the least id: SQLite
    # takes a bare column from the row min() picks), with its query (None: not recorded)
    calls = conn.execute(
        "SELECT h.ts, c.query FROM (SELECT agent, call_id, ts, min(id) AS first FROM hits"
        " WHERE kind = 'search' AND ts <= ? GROUP BY agent, call_id) AS h"
        " LEFT JOIN calls AS c ON c.agent = h.agent AND c.call_id = h.call_id"
        " ORDER BY h.first",
        (now,),
    ).fetchall()
    first_hit = dict(
        conn.execute(
            "SELECT memory_path, min(CASE WHEN ts <= ? THEN ts END) FROM hits"
            " GROUP BY memory_path",
            (now,),
        ).fetchall()
    )
    return KeptReplay(hits, calls, first_hit)


def replay_hits_ranked(
    rows: Any, present: Any, now: float
) -> tuple[list[Any], dict[tuple[str, str], float]]:
    """:func:`replay_hits_from_kept`'s values from hit rows (``HitRow``), every call ranked
    again (:func:`memoryd.strength.strength_pairs`). Pure."""
    from .policy.replay import ReplayHit
    from .strength import strength_pairs

    hits = []
    calls: dict[tuple[str, str], float] = {}
    for r, (rank, read_at) in zip(rows, strength_pairs(rows), strict=True):
        if r.ts > now:
            continue
        if r.kind == "search" and (r.agent, r.call_id) not in calls:
            calls[(r.agent, r.call_id)] = r.ts
        if r.path in present:
            hits.append(
                ReplayHit(r.path, r.ts, r.kind, rank, read_at if r.kind == "search" else None)
            )
    return hits, calls


def learned_policy(cfg: Any, paths: Any, store: Any, now: float, *, fresh: bool = False) -> Any:
    """The configured policy as it decides now: ``likely`` with the calibration and cut
    learned from the user's past verdicts whose 60 days have (nearly) passed (its
    ``calibration`` None when there are too few: the generic chance); any other policy
    as named. Never raises on a damaged history: a failure leaves the generic model.

    Learning replays the whole history (seconds on years of hits), so the expire job
    (``fresh``) learns and records it (:func:`record_calibration`), and a dry run,
    ``explain`` or ``reflect`` reuse the record while it is still what learning would
    give: no run of the schedule has come within ``SHORT_BY`` of its 60 days, nor had them
    all pass (its track record), since it was made. When no run has recorded one (or
    its record is out of date), what they learn is kept in :data:`LEARNED_FILE` under the
    same rule, so only the first of them pays for the replay until new verdicts are due."""
    from .policy import candidates as pc

    policy = configured_policy(cfg)
    if not (isinstance(policy, pc.Likely) and policy.learn):
        return policy
    if not fresh:
        stored = reusable_learned(cfg, paths, store, now, policy)
        if stored is not False:
            return policy.calibrated(stored)
    try:
        cal = calibration_now(cfg, paths, store, now, policy)
    except (OSError, ValueError, ArithmeticError) as exc:  # a clear line, then generic
        from .log import get_logger

        get_logger("memoryd.calibration").warning("calibration.failed", error=str(exc))
        return policy.calibrated(None)
    learned = policy.calibrated(cal)
    if not fresh:
        save_calibration(cfg, paths, learned, now)
    return learned


def reusable_learned(cfg: Any, paths: Any, store: Any, now: float, policy: Any) -> Any:
    """What ``policy`` (a learning ``likely``) learned before and would learn again now:
    the expire run's record, else the saved calibration (None: not yet calibrated);
    False when it must be learned (:func:`learn`)."""
    stored = stored_calibration(cfg, store, now, policy)
    return saved_calibration(cfg, paths, now, policy) if stored is False else stored


LEARNED_FILE = "calibration-learned.json"  # in memoryd's state folder, beside the database
LEARN_AGAIN_AFTER_FAILURE = 3600.0  # seconds: the daemon's next try when it kept none


def _learned_key(cfg: Any) -> str:
    """What learning reads from the configuration besides the target and floor (the
    schedule it replays, its time zone, which files are protected): a saved calibration
    learned under another is learned again."""
    import json

    from .config import schedule_timezone

    e = cfg.expire
    return json.dumps([
        cfg.schedule.expire, str(schedule_timezone(cfg)), sorted(map(str, e.protect)),
        sorted(map(str, e.pinned)), str(cfg.archive.dir), getattr(e, "policy", None),
    ])  # fmt: skip


def saved_calibration(cfg: Any, paths: Any, now: float, policy: Any) -> Any:
    """The calibration a dry run, ``explain`` or ``reflect`` learned and saved
    (:func:`save_calibration`), read as :func:`stored_calibration` reads the expire
    run's record and under the same rule; False when there is none to reuse."""
    import json

    try:
        doc = json.loads((Path(paths.memoryd_dir) / LEARNED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(doc, dict) or doc.get("key") != _learned_key(cfg):
        return False
    return reusable_calibration(cfg, doc, now, policy)


def save_calibration(cfg: Any, paths: Any, policy: Any, now: float) -> None:
    """Keep what was just learned for the next command (:func:`saved_calibration`).

    Only beside an existing state database (a dry run on a new install creates no
    state); written whole or not at all; a folder that cannot be written (another
    user's install, a full disk) only means the next command learns again."""
    import json

    from .fsutil import write_atomic

    value = calibration_record(policy, now)
    folder = Path(paths.memoryd_dir)
    if value is None or not Path(paths.db).is_file():
        return
    doc = {**json.loads(value), "key": _learned_key(cfg)}
    with contextlib.suppress(OSError):
        write_atomic(folder / LEARNED_FILE, json.dumps(doc).encode())


def stored_calibration(cfg: Any, store: Any, now: float, policy: Any) -> Any:
    """The recorded calibration (None: recorded as not yet calibrated), read at the
    number of files it was recorded for, if learning now would give the same: recorded for the same
    target and floor, and no fire time of the schedule in (recorded − 60 d + ``SHORT_BY``,
    now − 60 d + ``SHORT_BY``] (no verdict has come within ``SHORT_BY`` of its 60 days
    since: learning would use it) nor in (recorded − 60 d, now − 60 d] (none has had all
    of them pass: its track record would count it). False when there is no such record."""
    import json

    try:
        doc = json.loads(store.get_meta(CALIBRATION_META) or "null")
    except (ValueError, TypeError):
        return False
    return reusable_calibration(cfg, doc, now, policy)


def calibration_stale_at(cfg: Any, at: float) -> float:
    """The first moment a calibration learned at ``at`` is no longer what learning would
    give (``math.inf``: never): a run of the expire schedule comes within ``SHORT_BY`` of
    its 60 days after ``at`` (a verdict is learned from then: ``cb.usable``), or has them
    all pass (it counts in the track record then)."""
    from .config import schedule_timezone
    from .policy import calibration as cb
    from .policy.candidates import DAY, HORIZON_DAYS
    from .timerules import next_fire

    tz = schedule_timezone(cfg)
    spec = _replayed_schedule(cfg.schedule.expire)
    stale = math.inf
    for lag in (HORIZON_DAYS * DAY - cb.SHORT_BY, HORIZON_DAYS * DAY):
        fire = next_fire(spec, at - lag + 1, tz)
        if fire is not None:
            stale = min(stale, fire + lag)
    return stale


def keep_learned(cfg: Any, paths: Any, store: Any, now: float) -> tuple[bool, float]:
    """The daemon's part in :func:`learned_policy`: learn the configured policy's
    calibration again, and save it, when what the expire job recorded or a command saved
    is no longer what learning would give, so that no command a person runs pays for the
    replay; (whether it learned and kept one, the moment to look again: when new verdicts
    are due, ``math.inf`` when the policy learns nothing, :data:`LEARN_AGAIN_AFTER_FAILURE`
    from now when none could be kept). Never raises on a damaged history
    (:func:`learned_policy`)."""
    from .policy import candidates as pc

    policy = configured_policy(cfg)
    if not (isinstance(policy, pc.Likely) and policy.learn):
        return False, math.inf
    at = _reused_record_at(cfg, paths, store, now, policy)
    if at is not None:
        return False, calibration_stale_at(cfg, at)
    learned_policy(cfg, paths, store, now)
    at = _reused_record_at(cfg, paths, store, now, policy)
    if at is None:  # not kept (learning failed, logged; a folder that cannot be written)
        return False, now + LEARN_AGAIN_AFTER_FAILURE
    return True, calibration_stale_at(cfg, at)


def _reused_record_at(cfg: Any, paths: Any, store: Any, now: float, policy: Any) -> float | None:
    """When the record a command would reuse now was made (the expire run's, else the
    saved one: :func:`reusable_learned`); None when there is none to reuse."""
    import json

    try:
        if stored_calibration(cfg, store, now, policy) is not False:
            return float(json.loads(store.get_meta(CALIBRATION_META) or "null")["at"])
        if saved_calibration(cfg, paths, now, policy) is not False:
            saved = Path(paths.memoryd_dir) / LEARNED_FILE
            return float(json.loads(saved.read_text(encoding="utf-8"))["at"])
    except (OSError, ValueError, KeyError, TypeError):  # (replaced meanwhile: learned again)
        pass
    return None


def reusable_calibration(cfg: Any, doc: Any, now: float, policy: Any) -> Any:
    """The calibration a record (:func:`calibration_record`'s document) holds, if
    learning now would give the same (:func:`stored_calibration`); False when not."""
    from .policy import calibration as cb

    if not isinstance(doc, dict) or not isinstance(doc.get("at"), (int, float)):
        return False
    at = float(doc["at"])
    if not (math.isfinite(at) and 0.0 <= at <= now):  # (damaged, or of a later time)
        return False
    if (doc.get("target"), doc.get("floor")) != (policy.target, policy.floor):
        return False
    if now >= calibration_stale_at(cfg, at):
        return False
    if not doc.get("calibrated"):
        return None
    try:
        model = doc["model"]
        cal = cb.Calibration(
            tuple(float(x) for x in model["coef"]), float(model["centre"]),
            max(int(model["size"]), 1),
            int(doc["verdicts"]), int(doc["runs"]), float(doc["cut"]), str(doc["rule"]),
            float(doc["strong_rate"]), float(doc["coverage"]),
            tuple(float(x) for x in model["knots_x"]), tuple(float(x) for x in model["knots_y"]),
            tuple(str(g) for g in model["groups"]), tuple(float(x) for x in model["group_coef"]),
            tuple(int(x) for x in doc.get("track") or ()),
        )  # fmt: skip
        if not isinstance(doc.get("track", []), list):
            return False
        # a record of another shape (another count of inputs, knots without their rates,
        # groups without their offsets: an older memoryd's, or edited) is learned again
        # rather than crash every reader
        if len(cal.knots_x) != len(cal.knots_y) or len(cal.groups) != len(cal.group_coef):
            return False
        if cal.track and not (len(cal.track) == 2 and 0 <= cal.track[0] <= cal.track[1]):
            return False
        cal.apply(0.5)
    except (KeyError, TypeError, ValueError, ArithmeticError):
        return False
    return cal


def configured_policy(cfg: Any) -> Any:
    """The policy ``[expire]`` selects: the configured seed numbers for ``seed``, the
    target and floor for ``likely``."""
    from .policy import candidates as pc

    name = getattr(cfg.expire, "policy", pc.DEFAULT_POLICY)
    if name == "seed":
        return pc.Seed(cfg.expire.min_age_days, cfg.expire.window_days, cfg.expire.max_hits)
    policy = pc.policy_named(name)
    if isinstance(policy, pc.Likely) and policy.learn:
        policy.target = cfg.expire.later_needed_target
        policy.floor = cfg.expire.archive_floor
    return policy


def calibration_now(cfg: Any, paths: Any, store: Any, now: float, policy: Any) -> Any:
    """The calibration ``policy`` (a learning ``likely``) has learned by ``now`` from the
    state database (:func:`learn` on :func:`gather`). None below the minimum."""
    return learn(cfg, gather(cfg, paths, store, now, texts=False), now, policy)


def learn(cfg: Any, data: dict[str, Any], now: float, policy: Any) -> Any:
    """What ``policy`` (a learning ``likely``) has learned by ``now`` from ``data`` (what
    :func:`gather` returns): its verdicts at every past run of the expire schedule,
    replayed as ``simulate`` does, whose 60 days have passed (or all but ``SHORT_BY``:
    :func:`memoryd.policy.calibration.usable`); read at today's number of files, with its
    track record. None below the minimum. The expire job and ``simulate`` both ask this."""
    from .policy import calibration as cb
    from .policy import replay as rp
    from .policy.candidates import DAY, HORIZON_DAYS

    if data["first_hit"] is None:
        return None
    lo = data["first_hit"] + rp.RUN_LEAD_DAYS * DAY
    runs = fire_times(cfg.schedule.expire, data["tz"], lo, now)
    if not runs:
        return None
    (res,) = rp.replay(data["files"], data["hits"], runs, [policy], HORIZON_DAYS)
    taking_part = sum(1 for f in data["files"] if not f.protected and f.created <= now)
    cal = cb.fit(
        cb.usable(res.samples, now, HORIZON_DAYS * DAY),
        target=policy.target,
        floor=policy.floor,
        size=max(taking_part, 1),
    )
    if cal is None:
        return None
    # its track record: the chance printed at the past calibrated runs whose 60 days are
    # over, against what followed (the table `simulate` prints, and its check)
    horizon = HORIZON_DAYS * DAY
    shown = [
        c
        for c, calibrated, s in zip(res.calibration, res.calibrated_flags, res.samples,
                                    strict=True)
        if calibrated and s.t + horizon <= now
    ]  # fmt: skip
    check = rp.calibration_check(rp.calibration_bins(shown))
    within, bins = check["within"], check["bins"]
    assert isinstance(within, int) and isinstance(bins, int)
    return replace(cal, track=(within, bins))


CALIBRATION_META = "expire.calibration"  # what the last expire run decided with (status)


def calibration_record(policy: Any, now: float) -> str | None:
    """The :data:`CALIBRATION_META` value for ``policy`` as it decided at ``now`` (JSON);
    None for a policy that gives no calibrated chance."""
    import json

    from .policy import calibration as cb
    from .policy import candidates as pc

    if not (isinstance(policy, pc.Likely) and policy.learn):
        return None
    cal = policy.calibration
    if cal is None:
        return json.dumps({"at": now, "calibrated": False, "text": cb.GENERIC,
                           "target": policy.target, "floor": policy.floor})  # fmt: skip
    return json.dumps({
        "at": now,
        "calibrated": True,
        "model": {"coef": list(cal.coef), "centre": cal.centre, "size": cal.size,
                  "knots_x": list(cal.knots_x), "knots_y": list(cal.knots_y),
                  "groups": list(cal.groups), "group_coef": list(cal.group_coef)},
        **cal.cut_report(),
        "track": list(cal.track),
        "target": policy.target,
        "floor": policy.floor,
        "text": cal.describe(),
    })  # fmt: skip


def record_calibration(store: Any, policy: Any, now: float) -> None:
    """Remember what the expire run decided with, for ``memoryd status``."""
    value = calibration_record(policy, now)
    if value is not None:
        with store.transaction():
            store.set_meta(CALIBRATION_META, value)
