"""Replay expire policies over a hit history (``memoryd simulate``): the pure core.

The policies themselves are in :mod:`memoryd.policy.candidates`; this module is the
protocol that scores them (inputs, run times, outcome counts, calibration).

Everything here is a function of plain values (files, hits, run times, a policy): no clock,
no database, no file system, so the same code scores a user's own history, a generated one
and the tests'. The protocol (what a run sees, false archives, cold coverage) is
``docs/simulate.md``'s, kept exactly. The same outcome counts are also taken against a series
of "need" events when one is given; the come-back state always follows the hits.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import attrgetter, itemgetter
from typing import NamedTuple

from . import calibration as cb
from .candidates import DAY, HORIZON_DAYS, FileView, Likely, Policy, episodes

RUN_LEAD_DAYS = 30.0  # runs start this long after the first hit
_TS = attrgetter("ts")  # a hit's time, taken in C
_READ_AT = itemgetter(4)  # (ReplayHit.read_at)


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class ReplayFile:
    """A memory file as the replay needs it."""

    path: str
    created: float
    size: int = 0
    protected: bool = False
    kind: str = "topic"  # long-term | daily | topic (memoryd.signals.file_kind)


def is_strong(kind: str, rank: int | None, read_at: float | None, t: float) -> bool:
    """A get; a search hit retrieved first, of unknown rank, or read by ``t``."""
    if kind != "search" or rank is None or rank == 1:
        return True
    return read_at is not None and read_at <= t


class ReplayHit(NamedTuple):
    """One hit: ``rank`` among its call's results (1 = first; None = unknown or a get),
    ``read_at`` the time the agent then read the file in the same session (None: never).
    A tuple: a replay makes one per hit of the history."""

    path: str
    ts: float
    kind: str = "search"  # search | get
    rank: int | None = None
    read_at: float | None = None

    def strong_at(self, t: float) -> bool:
        """What this hit said about need, as known at ``t``: read, or retrieved first. An
        unknown rank counts as strong: nothing says it merely came along."""
        return is_strong(self.kind, self.rank, self.read_at, t)

    @property
    def strong(self) -> bool:
        return self.strong_at(math.inf)


@dataclass(frozen=True)
class Call:
    """A search call: when, and the words the agent asked (for restore on demand)."""

    ts: float
    query: str
    needed: str | None = None  # generated histories: the note the search was for


# --------------------------------------------------------------------------- the replay


def run_times(
    fire_times: Iterable[float], first_hit: float | None, now: float, horizon_days: float
) -> list[float]:
    """The runs: fire times t with first hit + 30 days <= t <= now - horizon."""
    if first_hit is None:
        return []
    lo, hi = first_hit + RUN_LEAD_DAYS * DAY, now - horizon_days * DAY
    return sorted(t for t in fire_times if lo <= t <= hi)


@dataclass
class Outcome:
    """Outcome counts of one policy against one event series (hits, or needs)."""

    false_archives: int = 0
    strong_false_archives: int = 0
    cold_archived: int = 0
    cold_total: int = 0
    lost: Counter[str] = field(default_factory=Counter)

    @property
    def cold_coverage(self) -> float:
        return self.cold_archived / self.cold_total if self.cold_total else 0.0


@dataclass
class PolicyResult:
    name: str
    params: dict[str, float | int | str]
    decisions: list[tuple[float, list[str]]]
    archived: int
    bytes_out_avg: float
    hits: Outcome
    need: Outcome | None
    # (predicted, strong hit within the horizon, any hit, need within it or None) per
    # verdict with a probability
    calibration: list[tuple[float, bool, bool, bool | None]]
    restores: int = 0
    restores_caught: int = 0
    restores_needless: int = 0
    # generated histories: restores of the note the search was for, of a note not needed
    # within the horizon, and archive episodes some search was for
    restores_right: int = 0
    restores_unneeded: int = 0
    restores_wanted: int = 0
    # per run, the calibration a learning policy decided with (None: the generic chance)
    calibrations: list[tuple[float, cb.Calibration | None]] = field(default_factory=list)
    # which entries of ``calibration`` were printed by a calibrated chance
    calibrated_flags: list[bool] = field(default_factory=list)
    # the learning policy's own verdicts with their outcome (what it calibrates on)
    samples: list[cb.Sample] = field(default_factory=list)

    @property
    def false_archive_rate(self) -> float:
        return self.hits.false_archives / self.archived if self.archived else 0.0

    @property
    def strong_false_archive_rate(self) -> float:
        """Archives followed by a strong hit: the first number ``simulate`` prints."""
        return self.hits.strong_false_archives / self.archived if self.archived else 0.0

    @property
    def need_false_archive_rate(self) -> float:
        if self.need is None or not self.archived:
            return 0.0
        return self.need.false_archives / self.archived


class _Series:
    """Sorted event times per path, with "is there one in (a, b]" in O(log n)."""

    def __init__(self, times: Mapping[str, Sequence[float]], *, ordered: bool = False):
        """``ordered``: each path's times are sorted already (taken as they are)."""
        self.times = dict(times) if ordered else {p: sorted(ts) for p, ts in times.items()}

    def any_in(self, path: str, a: float, b: float) -> bool:
        ts = self.times.get(path)
        if not ts:
            return False
        i = bisect.bisect_right(ts, a)
        return i < len(ts) and ts[i] <= b

    def any_from(self, path: str, a: float, b: float) -> bool:
        """Whether there is one in ``[a, b]`` (``a`` itself counts)."""
        ts = self.times.get(path)
        if not ts:
            return False
        i = bisect.bisect_left(ts, a)
        return i < len(ts) and ts[i] <= b

    def first_after(self, path: str, a: float) -> float | None:
        ts = self.times.get(path)
        if not ts:
            return None
        i = bisect.bisect_right(ts, a)
        return ts[i] if i < len(ts) else None


class _StrongAfter:
    """Per path, when its first hit after ``t`` became strong: at the hit for a get or a
    search retrieved first (or of unknown rank), at the read for one read later, never for
    one never read. A label cut at a time counts only hits strong by then."""

    def __init__(self, hits_by_path: Mapping[str, Sequence[ReplayHit]]):
        # per path: the times of its hits strong at their own time; those strong from a
        # read, and from each on the earliest the later of read and hit (suffix minima)
        self.own: dict[str, list[float]] = {}
        self.read_ts: dict[str, list[float]] = {}
        self.read_first: dict[str, list[float]] = {}
        for path, lst in hits_by_path.items():  # each sorted by ts
            self.add(path, tuple(map(_TS, lst)), _became_strong(lst))

    def add(self, path: str, ts: Sequence[float], became: Sequence[float]) -> None:
        """One path's hits: their sorted times and :func:`_became_strong` of them, split (in
        C) into those strong at their own time and those strong from a read (few: their
        suffix minima)."""
        inf = math.inf
        self.own[path] = list(compress(ts, map(operator.eq, became, repeat(-inf))))
        read = list(map(operator.and_, map(operator.gt, became, repeat(-inf)),
                        map(operator.lt, became, repeat(inf))))  # fmt: skip
        read_ts = list(compress(ts, read))
        suffix = list(itertools.accumulate(
            reversed(list(map(max, compress(became, read), read_ts))), min))  # fmt: skip
        suffix.reverse()
        suffix.append(inf)
        self.read_ts[path] = read_ts
        self.read_first[path] = suffix

    def after(self, path: str, t: float) -> float:
        own = self.own.get(path)
        if own is None:
            return math.inf
        i = bisect.bisect_right(own, t)
        first = own[i] if i < len(own) else math.inf
        return min(first, self.read_first[path][bisect.bisect_right(self.read_ts[path], t)])


def _became_strong(hits: Sequence[ReplayHit]) -> list[float]:
    """Per hit, from when it counts as strong (:func:`is_strong`): always (-inf) for a get,
    a search retrieved first or of unknown rank; at its read for one read later; never
    (inf) for one never read. (is_strong written out: a call a hit is too many.)"""
    return [
        -math.inf if kind != "search" or rank is None or rank == 1
        else (read_at if read_at is not None else math.inf)
        for _p, _ts, kind, rank, read_at in hits
    ]  # fmt: skip


class PathHits:
    """One file's hits as every run of a replay looks at them, worked out once: sorted times,
    from when each is strong, those strong at all, and the bursts of both. A run at ``t``
    sees prefixes of these, unless a hit up to ``t`` is read only after ``t`` (``late``):
    then the strong ones are picked one by one."""

    __slots__ = (
        "became",
        "bursts",
        "late_ts",
        "late_until",
        "strong",
        "strong_bursts",
        "strong_hits",
        "ts",
    )  # fmt: skip

    def __init__(self, lst: Sequence[ReplayHit]):  # (sorted by ts)
        self.ts: tuple[float, ...] = tuple(map(_TS, lst))
        self.became = _became_strong(lst)
        if math.inf in map(_READ_AT, lst):  # (read "at infinity": strong, but never known)
            flags = [h.strong for h in lst]
        else:  # (strong at all: known from some time on)
            flags = list(map(operator.lt, self.became, repeat(math.inf)))
        self.strong_hits = list(compress(lst, flags))  # (those ReplayHit.strong says)
        self.strong: tuple[float, ...] = tuple(compress(self.ts, flags))
        self.bursts = episodes(self.ts)
        self.strong_bursts = episodes(self.strong)
        late = list(map(operator.and_, map(operator.lt, self.ts, self.became),
                        map(operator.lt, self.became, repeat(math.inf))))  # fmt: skip
        self.late_ts = list(compress(self.ts, late))
        self.late_until = list(itertools.accumulate(compress(self.became, late), max))

    def view(self, f: ReplayFile, t: float) -> FileView:
        """What a run at ``t`` shows a policy of the file ``f`` (these are its hits)."""
        ts = self.ts
        n = bisect.bisect_right(ts, t)
        seen = ts[:n]
        bursts = self.bursts[: bisect.bisect_right(self.bursts, t)]
        k = bisect.bisect_right(self.late_ts, t)
        if k and self.late_until[k - 1] > t:  # a hit seen is read only later: one by one
            strong = tuple(compress(seen, map(t.__ge__, self.became[:n])))
            return FileView(f.path, f.kind, f.created, t, seen, strong, bursts)
        strong = self.strong[: bisect.bisect_right(self.strong, t)]
        sb = self.strong_bursts[: bisect.bisect_right(self.strong_bursts, t)]
        return FileView(f.path, f.kind, f.created, t, seen, strong, bursts, sb)


def _views(files: Sequence[ReplayFile], prepared: Mapping[str, PathHits], t: float
           ) -> dict[str, FileView]:  # fmt: skip
    """What each file taking part at ``t`` shows a policy, by slices of its :class:`PathHits`
    (a Python step per file, none per hit)."""
    out = {}
    for f in files:
        if f.created > t:
            continue
        p = prepared.get(f.path)
        if p is not None and p.ts:
            out[f.path] = p.view(f, t)
        else:
            out[f.path] = FileView(f.path, f.kind, f.created, t, (), (), (), ())
    return out


def by_path(hits: Iterable[ReplayHit]) -> dict[str, list[ReplayHit]]:
    """Each path's hits, by time (a stable sort: ties as recorded). Pure."""
    out: dict[str, list[ReplayHit]] = {}
    for h in hits:
        out.setdefault(h.path, []).append(h)
    for lst in out.values():
        lst.sort(key=_TS)
    return out


def prepare(grouped: Mapping[str, Sequence[ReplayHit]]) -> dict[str, PathHits]:
    """Each path's :class:`PathHits`, from its hits by time (:func:`by_path`). Pure."""
    return {p: PathHits(lst) for p, lst in grouped.items()}


def replay(
    files: Sequence[ReplayFile],
    hits: Iterable[ReplayHit],
    runs: Sequence[float],
    policies: Sequence[Policy],
    horizon_days: float = HORIZON_DAYS,
    *,
    needs: Mapping[str, Sequence[float]] | None = None,
    calls: Sequence[Call] = (),
    restore_candidates: Callable[[int], Sequence[tuple[str, float] | tuple[str, float, bool]]]
    | None = None,
    restore_rule: str = "beats-workspace",
    prepared: Mapping[str, PathHits] | None = None,
) -> list[PolicyResult]:
    """Replay each policy over the runs; decisions and metrics per policy.

    ``needs`` (path → times the file was truly needed) adds need-based outcome counts.
    ``calls`` and ``restore_candidates`` (call index → (path, score[, named]) above the
    restore threshold, best first; ``named``: the query uses a distinctive word of the file)
    add what restore on demand would have done: a restore *catches* a false archive when it
    comes before the file's first hit after it left, and is *needless* when the file has no
    hit in ``[restore, restore + horizon]``; restores never change the archived state.
    ``restore_rule``: "beats-workspace" (the daemon's: the match must beat every file in the
    workspace) or "best-archived". ``prepared``: :func:`prepare` of ``hits``, if at hand.
    """
    horizon = horizon_days * DAY
    if prepared is None:
        prepared = prepare(by_path(hits))
    hit_series = _Series({p: ph.ts for p, ph in prepared.items()}, ordered=True)
    strong_series = _Series({p: ph.strong for p, ph in prepared.items()}, ordered=True)
    need_series = _Series(needs) if needs is not None else None
    strong_after = _StrongAfter({})
    for p, ph in prepared.items():
        strong_after.add(p, ph.ts, ph.became)
    runs = sorted(runs)
    views = [_views(files, prepared, t) for t in runs]
    by_time = sorted(range(len(calls)), key=lambda i: calls[i].ts)  # (restores: calls in order)
    protected = {f.path for f in files if f.protected}
    size = {f.path: f.size for f in files}
    results = []
    for policy in policies:
        learns = isinstance(policy, Likely) and policy.learn
        samples: list[cb.Sample] = []  # its own past verdicts, for its calibration
        per_run: list[cb.Calibration | None] = []
        archived_at: dict[str, float] = {}  # path → when it left (while in the archived state)
        episodes_: list[tuple[str, float, float | None]] = []  # (path, left, back)
        decisions: list[tuple[float, list[str]]] = []
        out_hits, out_need = Outcome(), Outcome() if need_series else None
        judged = [(out_hits, hit_series)]
        if out_need is not None and need_series is not None:
            judged.append((out_need, need_series))
        calibration: list[tuple[float, bool, bool, bool | None]] = []
        flags: list[bool] = []
        bytes_total = 0.0
        base_policy = policy
        for t, vs in zip(runs, views, strict=True):
            taking_part = sum(1 for p in vs if p not in protected)
            cal = None
            if learns:
                assert isinstance(base_policy, Likely)
                # only what was known at t: verdicts whose horizon has passed by then
                last = next((c for c in reversed(per_run) if c is not None), None)
                cal = cb.fit(cb.usable(samples, t, horizon), target=base_policy.target,
                             floor=base_policy.floor, size=taking_part, start=last)  # fmt: skip
                per_run.append(cal)
                policy = base_policy.calibrated(cal)
            for path, left in list(archived_at.items()):
                back = hit_series.first_after(path, left)
                if back is not None and back <= t:
                    del archived_at[path]
            chosen = []
            for path, v in vs.items():
                if path in archived_at or path in protected:
                    continue
                if learns:
                    assert isinstance(policy, Likely)
                    generic = policy.probability(v)  # the same for the verdict and the sample
                    verdict = policy.decide_from(v, generic)
                else:
                    verdict = policy.decide(v)
                if verdict.p_need is not None:
                    calibration.append((
                        verdict.p_need,
                        strong_series.any_in(path, t, t + horizon),
                        hit_series.any_in(path, t, t + horizon),
                        need_series.any_in(path, t, t + horizon) if need_series else None,
                    ))  # fmt: skip
                    flags.append(cal is not None)
                if learns:
                    assert isinstance(base_policy, Likely)
                    samples.append(cb.Sample(
                        t,
                        generic,
                        strong_series.any_in(path, t, t + horizon),
                        hit_series.any_in(path, t, t + horizon),
                        v.age_days > base_policy.min_age_days,
                        taking_part,
                        cb.group_of(path, v.kind),
                        strong_after.after(path, t),
                    ))  # fmt: skip
                if verdict.archive:
                    chosen.append(path)
            chosen.sort()
            decisions.append((t, chosen))
            for path in chosen:
                archived_at[path] = t
                episodes_.append((path, t, hit_series.first_after(path, t)))
                for out, series in judged:
                    if series.any_in(path, t, t + horizon):
                        out.false_archives += 1
                        out.lost[path] += 1
                if strong_series.any_in(path, t, t + horizon):
                    out_hits.strong_false_archives += 1
            for out, series in judged:
                for path in vs:
                    if path in protected or series.any_in(path, t, t + horizon):
                        continue
                    out.cold_total += 1
                    out.cold_archived += path in archived_at
            bytes_total += sum(size.get(p, 0) for p in archived_at)
        policy = base_policy
        res = PolicyResult(
            policy.name,
            policy.params(),
            decisions,
            sum(len(a) for _, a in decisions),
            bytes_total / len(runs) if runs else 0.0,
            out_hits,
            out_need,
            calibration,
            calibrations=list(zip(runs, per_run, strict=True)) if learns else [],
            calibrated_flags=flags,
            samples=samples,
        )
        if calls and restore_candidates is not None:
            _restores(res, episodes_, calls, restore_candidates, hit_series, horizon,
                      beat_workspace=restore_rule == "beats-workspace", order=by_time,
                      need_series=need_series)  # fmt: skip
        results.append(res)
    return results


def _restores(
    res: PolicyResult,
    eps: Sequence[tuple[str, float, float | None]],
    calls: Sequence[Call],
    candidates: Callable[[int], Sequence[tuple[str, float] | tuple[str, float, bool]]],
    hit_series: _Series,
    horizon: float,
    *,
    beat_workspace: bool = True,
    order: Sequence[int] | None = None,
    need_series: _Series | None = None,
) -> None:
    """Count what restore on demand would have done for one policy's archive episodes
    (``order``: the calls' indices by time, when the caller has them; ``need_series``: the
    notes' needs, on a generated history)."""
    if not eps:
        return
    if order is None:
        order = sorted(range(len(calls)), key=lambda i: calls[i].ts)
    by_path: dict[str, list[tuple[float, float]]] = {}
    for path, left, back in eps:
        by_path.setdefault(path, []).append((left, back if back is not None else math.inf))
    restored: set[tuple[str, float]] = set()  # episodes already restored
    wanted: set[tuple[str, float]] = set()  # episodes a search was for (generated histories)
    for i in order:
        ts = calls[i].ts
        needed = calls[i].needed
        if needed is not None:
            ep = next((e for e in by_path.get(needed, ()) if e[0] < ts <= e[1]), None)
            if ep is not None:
                wanted.add((needed, ep[0]))
        best_present = -1.0  # the best score of a file in the workspace at this call
        cands = candidates(i)
        if beat_workspace and len(cands) > 1 and cands[1][1] >= cands[0][1]:
            continue  # two notes match as well: no one best match (restore_match.best_match)
        for path, score, *named in cands:
            ep = next((e for e in by_path.get(path, ()) if e[0] < ts <= e[1]), None)
            if ep is None:
                best_present = max(best_present, score)
                if beat_workspace:  # (best first: no archived match after it beats it)
                    break
                continue  # not archived at this call: the next-best archived match
            if beat_workspace and (best_present >= score or named == [False]):
                break  # a note still in the workspace answers it as well, or not named
            if (path, ep[0]) not in restored:
                restored.add((path, ep[0]))
                res.restores += 1
                if hit_series.any_in(path, ep[0], ep[0] + horizon) and ep[1] >= ts:
                    res.restores_caught += 1
                if not hit_series.any_from(path, ts, ts + horizon):
                    res.restores_needless += 1
                if need_series is not None and not need_series.any_from(path, ts, ts + horizon):
                    res.restores_unneeded += 1
                res.restores_right += calls[i].needed == path
            break
    res.restores_wanted = len(wanted)


def calibration_bins(
    pairs: Sequence[tuple[float, bool, bool, bool | None]], bins: int = 10
) -> list[dict[str, float | int | str]]:
    """Predicted vs observed in equal-width bins of the predicted chance (empty bins left out).
    Two observed shares bracket need: a strong hit within the horizon, and a hit of any kind;
    on generated histories ``observed_need`` is the share truly needed."""
    acc: list[list[float]] = [[0, 0.0, 0, 0, 0] for _ in range(bins)]
    with_need = any(need is not None for *_, need in pairs)
    for p, strong, anyhit, need in pairs:
        b = min(int(p * bins), bins - 1)
        acc[b][0] += 1
        acc[b][1] += p
        acc[b][2] += strong
        acc[b][3] += anyhit
        acc[b][4] += bool(need)
    out: list[dict[str, float | int | str]] = []
    for i, (n, psum, k_strong, k_any, k_need) in enumerate(acc):
        if n:
            row: dict[str, float | int | str] = {
                "bin": f"{i / bins:.1f}-{(i + 1) / bins:.1f}",
                "n": int(n),
                "predicted": round(psum / n, 3),
                "observed_strong": round(k_strong / n, 3),
                "observed_any": round(k_any / n, 3),
            }
            if with_need:
                row["observed_need"] = round(k_need / n, 3)
            out.append(row)
    return out


# How ``simulate`` judges its calibration table: a bin of at least CHECK_MIN_VERDICTS
# verdicts whose mean chance is within CHECK_TOLERANCE of its strong-hit rate.
CHECK_TOLERANCE = 0.10
CHECK_MIN_VERDICTS = 50


def sampling_range(p: float, n: int) -> float:
    """Two standard errors of an observed share over ``n`` verdicts if ``p`` is the truth:
    how far a right chance may still land from what followed, by chance alone."""
    return 2.0 * math.sqrt(max(p * (1.0 - p), 0.0) / n) if n else 1.0


def calibration_check(bins: Sequence[Mapping[str, float | int | str]]) -> dict[str, object]:
    """How many bins of :func:`calibration_bins` with enough verdicts the printed chance is
    within :data:`CHECK_TOLERANCE` of what followed in, and the largest miss."""
    big = [b for b in bins if int(b["n"]) >= CHECK_MIN_VERDICTS]
    errs = [abs(float(b["predicted"]) - float(b["observed_strong"])) for b in big]
    return {
        "bins": len(big),
        "within": sum(e <= CHECK_TOLERANCE for e in errs),
        "largest_error": round(max(errs, default=0.0), 3),
        "tolerance": CHECK_TOLERANCE,
        "min_verdicts": CHECK_MIN_VERDICTS,
    }


def result_document(res: PolicyResult, iso: Callable[[float], str | None]) -> dict[str, object]:
    """One policy's JSON entry (``simulate --json``)."""
    doc: dict[str, object] = {
        "name": res.name,
        "params": res.params,
        "archived": res.archived,
        "strong_false_archives": res.hits.strong_false_archives,
        "strong_false_archive_rate": round(res.strong_false_archive_rate, 4),
        "false_archives": res.hits.false_archives,
        "false_archive_rate": round(res.false_archive_rate, 4),
        "cold_coverage": round(res.hits.cold_coverage, 4),
        "bytes_out_avg": round(res.bytes_out_avg, 1),
        "restores": res.restores,
        "restores_caught": res.restores_caught,
        "restores_needless": res.restores_needless,
        "lost_most": [{"path": p, "times": n} for p, n in res.hits.lost.most_common(5)],
        "decisions": [{"at": iso(t), "archive": a} for t, a in res.decisions],
    }
    if res.calibrations:
        # runs calibrated on what was known then, apart from those with the generic chance
        own = [c for c, f in zip(res.calibration, res.calibrated_flags, strict=True) if f]
        generic = [c for c, f in zip(res.calibration, res.calibrated_flags, strict=True) if not f]
        if own:
            doc["calibration"] = calibration_bins(own)
            doc["calibration_check"] = calibration_check(doc["calibration"])  # type: ignore[arg-type]
        if generic:
            doc["calibration_generic"] = calibration_bins(generic)
        doc["runs_calibrated"] = [
            {"at": iso(t), "calibrated": False}
            if cal is None
            else {"at": iso(t), "calibrated": True, **cal.cut_report()}
            for t, cal in res.calibrations
        ]
    elif res.calibration:
        doc["calibration"] = calibration_bins(res.calibration)
    return doc
