"""The user's own history as the replay reads it, and what ``likely`` learns from it.

Imperative shell around :mod:`memoryd.policy.replay` and :mod:`memoryd.policy.calibration`:
:func:`gather` reads the files (present and archived), the hits with their strength and the
queries (what ``memoryd simulate`` replays); :func:`learned_policy` replays the configured
``likely`` over the past runs of the expire schedule for the calibration and cut it has
learned by now. What the expire run learned is recorded in the database, what a dry run,
``explain`` or ``reflect`` learned in :data:`LEARNED_FILE`, each reused until learning again
would know more. Reads the database only.
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

from .policy.chance_shown import LEARNED_FILE
from .policy.chance_shown import learned_key as _learned_key


def fire_times(expr: str, tz: tzinfo, start: float, end: float) -> list[float]:
    """Every fire time of the cron ``expr`` in ``tz`` within [start, end] (epoch seconds), by
    :mod:`memoryd.timerules`; ``"off"`` replays the default expire schedule."""
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
    text_of = {rel: read_text(ws, rel) for rel in present} if texts else {}
    for rel, where in archived_files(paths, store):
        if rel in present:
            continue  # re-created (or back) at its old path: today's file counts
        st = where.stat()
        present[rel] = (st.st_size, st.st_mtime)
        if texts:
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
    """The replay's hits of the files in ``present`` from the strength kept with each
    (``hits.strong_from``: :mod:`memoryd.kept_strength`), in the order recorded: what
    :func:`replay_hits_ranked` gives, with no call ranked in Python. None when the kept
    strength cannot stand for ranking again (missing, its fill pending, or the workspace one
    of several).

    The kept strength says from when a hit is strong, not its rank, and the replay asks no
    more (:func:`memoryd.policy.replay.is_strong`): a hit strong at its own time is replayed
    as rank 1, another as rank 2 read at its ``strong_from``, or never read. No clock skew:
    a hit dated after now has not happened yet."""
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
    # each call at its first hit (SQLite takes a bare column from the row min() picks),
    # with its query (None: not recorded)
    calls = conn.execute(
        "SELECT h.ts, c.query FROM (SELECT agent, call_id, ts, min(id) AS first FROM hits"
        " WHERE kind = 'search' AND ts <= ? GROUP BY agent, call_id) AS h"
        " LEFT JOIN calls AS c ON c.agent = h.agent AND c.call_id = h.call_id"
        " ORDER BY h.first",
        (now,),
    ).fetchall()
    first_hit = dict(
        conn.execute(
            "SELECT memory_path, min(CASE WHEN ts <= ? THEN ts END) FROM hits GROUP BY memory_path",
            (now,),
        ).fetchall()
    )
    return KeptReplay(hits, calls, first_hit)


def replay_hits_ranked(
    rows: Any, present: Any, now: float
) -> tuple[list[Any], dict[tuple[str, str], float]]:
    """:func:`kept_replay`'s hits and calls from hit rows (``HitRow``), every call ranked
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
    learned from the user's past verdicts whose 60 days have (nearly) passed (None: too
    few, the generic chance); any other policy as named. A failure leaves the generic model.

    Learning replays the whole history, so the expire job (``fresh``) learns afresh, and
    other commands reuse a record (the job's, else :data:`LEARNED_FILE`) while it is still
    what learning would give (:func:`calibration_stale_at`)."""
    from .policy import candidates as pc

    policy = configured_policy(cfg)
    if not (isinstance(policy, pc.Likely) and policy.learn):
        return policy
    if not fresh:
        stored = reusable_learned(cfg, paths, store, now, policy)
        if stored is not False:
            return policy.calibrated(stored)
    try:
        cal = learn(cfg, gather(cfg, paths, store, now, texts=False), now, policy)
    except (OSError, ValueError, ArithmeticError) as exc:  # a clear line, then generic
        from .log import get_logger

        get_logger("memoryd.calibration").warning("calibration.failed", error=str(exc))
        return policy.calibrated(None)
    learned = policy.calibrated(cal)
    if not fresh:
        save_calibration(cfg, paths, learned, now)
    return learned


def reusable_learned(cfg: Any, paths: Any, store: Any, now: float, policy: Any) -> Any:
    """What a learning ``likely`` learned before and would learn again now: the expire run's
    record, else the saved one (None: not yet calibrated); False when it must be learned."""
    stored = stored_calibration(cfg, store, now, policy)
    return saved_calibration(cfg, paths, now, policy) if stored is False else stored


LEARN_AGAIN_AFTER_FAILURE = 3600.0  # seconds: the daemon's next try when it kept none


def saved_calibration(cfg: Any, paths: Any, now: float, policy: Any) -> Any:
    """The calibration a command saved (:func:`save_calibration`), under the rule of
    :func:`stored_calibration`; False when there is none to reuse."""
    import json

    try:
        doc = json.loads((Path(paths.memoryd_dir) / LEARNED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(doc, dict) or doc.get("key") != _learned_key(cfg):
        return False
    return reusable_calibration(cfg, doc, now, policy)


def save_calibration(cfg: Any, paths: Any, policy: Any, now: float) -> None:
    """Keep what was just learned for the next command (:func:`saved_calibration`): only
    beside an existing state database, written whole or not at all; a folder that cannot be
    written only means the next command learns again."""
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
    """The expire run's recorded calibration (None: recorded as not yet calibrated) if
    learning now would give the same (:func:`reusable_calibration`); False when not."""
    import json

    try:
        doc = json.loads(store.get_meta(CALIBRATION_META) or "null")
    except (ValueError, TypeError):
        return False
    return reusable_calibration(cfg, doc, now, policy)


def calibration_stale_at(cfg: Any, at: float) -> float:
    """The first moment a calibration learned at ``at`` is no longer what learning would
    give (``math.inf``: never): a run of the expire schedule comes within ``SHORT_BY`` of
    its 60 days after ``at`` (learned from then), or has them all pass (its track record)."""
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
    """The daemon's part in :func:`learned_policy`: learn and save again when no record is
    reusable, so no command a person runs pays for the replay. (Whether it learned and kept
    one, the moment to look again: ``math.inf`` when the policy learns nothing,
    :data:`LEARN_AGAIN_AFTER_FAILURE` from now when none could be kept.)"""
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
    """When the record :func:`reusable_learned` would reuse now was made; None: none."""
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
    """The calibration a record (:func:`calibration_record`'s document) holds, if learning
    now would give the same (same target and floor, not stale); False when not."""
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
        # a record of another shape (an older memoryd's, or edited) is learned again
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


def learn(cfg: Any, data: dict[str, Any], now: float, policy: Any) -> Any:
    """What a learning ``likely`` has learned by ``now`` from :func:`gather`'s ``data``: its
    replayed verdicts at past runs whose 60 days have (nearly) passed, read at today's
    number of files, with its track record. None below the minimum."""
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
    # its track record: the chance printed at past calibrated runs whose 60 days are over
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
