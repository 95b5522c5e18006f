"""Replay expire policies over a hit history (``memoryd simulate``): the pure core.

Everything here is a function of plain values: the files (created time, size,
protected or not), the hits (path, time, kind, and what says how strong each
one was), the run times and a policy. No clock, no database, no file system, so
the same code scores a user's own history, a generated one with a known need
behind every search, and the hand-made histories of the tests.

Protocol (``docs/simulate.md``; kept exactly):

* A file takes part in the runs ``t >= created``. Protected files (``protect``
  globs, marks, pins) take part but are never archived and are left out of cold
  coverage.
* At run ``t`` a policy sees the hits with ``ts <= t`` (strictly: no clock-skew
  allowance), and their strength *as it was known at t*: a search hit is strong
  when it was the call's first result or when the agent read the file
  (``memory_get`` of it later in the same session) by ``t``.
* A file archived at ``t`` is a **false archive** when it has a hit of any kind
  in ``(t, t + horizon]``. An archived file comes back at its first hit after it
  left; later runs may archive it again, and every archive is one decision.
* **Cold coverage**: Σ over runs of the files taking part at ``t``, unprotected,
  without a hit in ``(t, t + horizon]``, that are archived after run ``t``,
  divided by Σ of such files.

The same outcome counts are also taken against a second series of "need"
events when one is given (generated histories know why each search happened);
the come-back state always follows the hits, as it does on a real install.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

DAY = 86400.0
HORIZON_DAYS = 60
MIN_AGE_DAYS = 30.0  # no policy but `none` and `cut30`'s own rule looks younger than this
RUN_LEAD_DAYS = 30.0  # runs start this long after the first hit


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


@dataclass(frozen=True)
class ReplayHit:
    """One hit: ``rank`` among its call's results (1 = first; None = unknown or a get),
    ``read_at`` the time the agent then read the file in the same session (None: never)."""

    path: str
    ts: float
    kind: str = "search"  # search | get
    rank: int | None = None
    read_at: float | None = None

    def strong_at(self, t: float) -> bool:
        """What this hit said about need, as known at ``t``: read, or retrieved first.

        A search hit whose rank is unknown (its call's scores are missing) counts as
        strong: without a rank nothing says it merely came along, and a policy must not
        let go of a file in daily use only because the transcripts carry no scores.
        """
        return is_strong(self.kind, self.rank, self.read_at, t)

    @property
    def strong(self) -> bool:
        return self.strong_at(math.inf)


@dataclass(frozen=True)
class Call:
    """A search call: when, and the words the agent asked (for restore on demand)."""

    ts: float
    query: str


# --------------------------------------------------------------------------- policies


@dataclass(frozen=True)
class FileView:
    """What a policy sees of one file at run time ``t``."""

    path: str
    kind: str
    created: float
    t: float
    times: tuple[float, ...]  # hit times <= t, sorted
    strong: tuple[float, ...]  # times of the hits strong as known at t, sorted

    @property
    def age_days(self) -> float:
        return (self.t - self.created) / DAY

    def within(self, days: float, strong_only: bool = False) -> int:
        src = self.strong if strong_only else self.times
        return len(src) - bisect.bisect_left(src, self.t - days * DAY)


@dataclass(frozen=True)
class Verdict:
    archive: bool
    rule: str
    reason: str
    p_need: float | None = None  # chance of a hit in the next HORIZON_DAYS, when the policy says


class Policy:
    """An expire policy: a name, its numbers, and a verdict per file."""

    name = "policy"
    gives_probability = False

    def params(self) -> dict[str, float | int | str]:
        return {}

    def decide(self, v: FileView) -> Verdict:  # pragma: no cover - interface
        raise NotImplementedError

    def same_as(self, other: Policy) -> bool:
        return type(self) is type(other) and self.params() == other.params()


class Seed(Policy):
    """Seed 000: older than ``min_age_days`` and at most ``max_hits`` hits in ``window_days``."""

    name = "seed"

    def __init__(self, min_age_days: float = 30, window_days: float = 30, max_hits: int = 2):
        self.min_age_days, self.window_days, self.max_hits = min_age_days, window_days, max_hits

    def params(self) -> dict[str, float | int | str]:
        return {"min_age_days": self.min_age_days, "window_days": self.window_days,
                "max_hits": self.max_hits}  # fmt: skip

    def decide(self, v: FileView) -> Verdict:
        if v.age_days <= self.min_age_days:
            return Verdict(False, "young", f"{v.age_days:.1f} days old")
        recent = v.within(self.window_days)
        if recent > self.max_hits:
            return Verdict(False, "active", f"{recent} hits in the last {self.window_days} days")
        return Verdict(
            True,
            "expired",
            f"{v.age_days:.0f} days old and {recent} hit{'s' if recent != 1 else ''} in the "
            f"last {self.window_days} days (at most {self.max_hits})",
        )


class Cut(Policy):
    """Everything older than ``days`` (the coverage ceiling of a rule with an age floor)."""

    name = "cut30"

    def __init__(self, days: float = 30):
        self.days = days

    def params(self) -> dict[str, float | int | str]:
        return {"days": self.days}

    def decide(self, v: FileView) -> Verdict:
        if v.age_days <= self.days:
            return Verdict(False, "young", f"{v.age_days:.1f} days old")
        return Verdict(True, "old", f"{v.age_days:.0f} days old (more than {self.days})")


class Never(Policy):
    """Archive nothing (the false-archive floor)."""

    name = "none"

    def decide(self, v: FileView) -> Verdict:
        return Verdict(False, "none", "policy none archives nothing")


def episodes(times: Sequence[float], gap: float = DAY) -> list[float]:
    """Start times of bursts: hits less than ``gap`` after the previous one join its burst."""
    out: list[float] = []
    last = -math.inf
    for ts in times:
        if ts - last >= gap:
            out.append(ts)
        last = ts
    return out


class Rhythm(Policy):
    """Per-file renewal: archive when the silence is long against the file's own rhythm.

    The rhythm is the longest silence the file has already come back from (between
    bursts of hits, a burst being hits less than a day apart). A file is archived
    when it is older than ``min_age_days`` and has been silent for more than
    ``factor`` × that gap and more than ``base_days``. A note read every six weeks
    thus keeps for three months of silence; a project used daily and then dropped
    goes after ``base_days``; a note never hit goes after ``base_days`` of age.
    With ``strong_only`` only hits that were read or retrieved first count.
    """

    name = "rhythm"

    def __init__(
        self,
        base_days: float = 45,
        factor: float = 1.5,
        min_age_days: float = 30,
        strong_only: bool = False,
        name: str | None = None,
    ):
        self.base_days, self.factor = base_days, factor
        self.min_age_days, self.strong_only = min_age_days, strong_only
        if name:
            self.name = name

    def params(self) -> dict[str, float | int | str]:
        return {
            "base_days": self.base_days,
            "factor": self.factor,
            "min_age_days": self.min_age_days,
            "strong_only": int(self.strong_only),
        }

    def decide(self, v: FileView) -> Verdict:
        if v.age_days <= self.min_age_days:
            return Verdict(False, "young", f"{v.age_days:.1f} days old")
        bursts = episodes(v.strong if self.strong_only else v.times)
        last = bursts[-1] if bursts else v.created
        silent = (v.t - last) / DAY
        gaps = [(b - a) / DAY for a, b in itertools.pairwise(bursts)]
        longest = max(gaps, default=0.0)
        limit = max(self.base_days, self.factor * longest)
        if silent <= limit:
            return Verdict(
                False,
                "in rhythm",
                f"silent {silent:.0f} days; it came back after {longest:.0f} before "
                f"(keeps up to {limit:.0f})",
            )
        return Verdict(
            True,
            "silent",
            f"silent {silent:.0f} days, more than {limit:.0f} "
            f"({'no gap seen' if not gaps else f'{self.factor:g} × its longest gap {longest:.0f}'}"
            f"; at least {self.base_days:g})",
        )


class Activation(Policy):
    """ACT-R base-level activation ``ln Σ t^-0.5`` (t in days since each hit) below a threshold."""

    name = "actr"

    def __init__(self, threshold: float = -2.0, min_age_days: float = 30):
        self.threshold, self.min_age_days = threshold, min_age_days

    def params(self) -> dict[str, float | int | str]:
        return {"threshold": self.threshold, "min_age_days": self.min_age_days}

    def decide(self, v: FileView) -> Verdict:
        if v.age_days <= self.min_age_days:
            return Verdict(False, "young", f"{v.age_days:.1f} days old")
        total = sum(max((v.t - ts) / DAY, 1 / 24) ** -0.5 for ts in v.times)
        b = math.log(total) if total > 0 else -math.inf
        if b >= self.threshold:
            return Verdict(False, "active", f"activation {b:.2f} ≥ {self.threshold}")
        return Verdict(True, "faded", f"activation {b:.2f} below {self.threshold}")


class KindAware(Policy):
    """Daily notes by the seed's window; every other note by its own rhythm."""

    name = "kind"

    def __init__(self, daily: Policy | None = None, other: Policy | None = None):
        self.daily = daily or Seed()
        self.other = other or Rhythm(60, 1.5, strong_only=True)

    def params(self) -> dict[str, float | int | str]:
        return {**{f"daily.{k}": x for k, x in self.daily.params().items()},
                **{f"other.{k}": x for k, x in self.other.params().items()}}  # fmt: skip

    def decide(self, v: FileView) -> Verdict:
        return (self.daily if v.kind == "daily" else self.other).decide(v)


class Renewal(Policy):
    """The chance of a hit in the next ``horizon`` days from the file's own gaps, and a cut.

    Gaps between bursts of hits (plus the current silence, which has not ended)
    estimate when the file comes back: P(next burst within s + H | silent s) is
    counted over the file's own gaps that outlasted ``s``, mixed with a prior
    (``prior_weight`` pseudo-gaps): with chance ``dead`` a note never comes back,
    else its gap is log-uniform between a day and a year. The file is archived
    when that chance is below ``threshold``. The number is what ``expire --dry-run``
    prints and what ``simulate``'s calibration table checks.
    """

    name = "renewal"
    gives_probability = True

    def __init__(
        self,
        threshold: float = 0.2,
        horizon_days: float = HORIZON_DAYS,
        prior_weight: float = 2.0,
        dead: float = 0.5,
        min_age_days: float = 30,
    ):
        self.threshold, self.horizon_days = threshold, horizon_days
        self.prior_weight, self.dead, self.min_age_days = prior_weight, dead, min_age_days

    def params(self) -> dict[str, float | int | str]:
        return {"threshold": self.threshold, "prior_weight": self.prior_weight,
                "dead": self.dead, "min_age_days": self.min_age_days}  # fmt: skip

    def _prior_survival(self, s: float) -> float:
        """P(gap > s) under the prior: dead + (1-dead) × log-uniform [1, 365] days."""
        lo, hi = 0.0, math.log(365.0)
        x = min(max(math.log(max(s, 1.0)), lo), hi)
        return self.dead + (1 - self.dead) * (hi - x) / (hi - lo)

    def probability(self, v: FileView) -> float:
        bursts = episodes(v.times)
        last = bursts[-1] if bursts else v.created
        s = max((v.t - last) / DAY, 0.0)
        h = self.horizon_days
        gaps = [(b - a) / DAY for a, b in itertools.pairwise(bursts)]
        if bursts and bursts[0] - v.created > DAY:
            gaps.append((bursts[0] - v.created) / DAY)
        longer = [g for g in gaps if g > s]
        back = sum(1 for g in longer if g <= s + h)
        w = self.prior_weight
        ps, psh = self._prior_survival(s), self._prior_survival(s + h)
        num = back + w * (ps - psh)
        den = len(longer) + w * ps
        return num / den if den > 0 else 0.0

    def decide(self, v: FileView) -> Verdict:
        p = self.probability(v)
        if v.age_days <= self.min_age_days:
            return Verdict(False, "young", f"{v.age_days:.1f} days old", p)
        if p >= self.threshold:
            return Verdict(
                False, "likely", f"{p:.0%} chance of a hit in {self.horizon_days:g} days", p
            )
        return Verdict(
            True,
            "unlikely",
            f"{p:.0%} chance of a hit in {self.horizon_days:g} days (below {self.threshold:.0%})",
            p,
        )


# Logistic weights of :class:`Likely`, fitted by ``bench/bench_policies.py --fit`` on
# generated histories (seeds 0-11, default and sampled parameters) against the known need.
LIKELY_WEIGHTS: tuple[float, ...] = (
    1.9975,  # intercept
    -1.2879,  # ln(1 + days since the last strong hit, or since created)
    -0.1885,  # ln(1 + days since the last hit of any kind)
    -0.7665,  # ln(1 + the longest silence between strong bursts it came back from)
    1.026,  # ln(1 + strong hits in the last 60 days)
    -0.7886,  # ln(1 + hits of any kind in the last 60 days)
    0.0619,  # ln(1 + strong bursts ever)
    -1.6503,  # a daily note
    0.471,  # ln(1 + age in days)
    0.2136,  # longest gap × silence (both as above): a long rhythm forgives a long silence
)


def likely_features(v: FileView) -> list[float]:
    """The numbers :data:`LIKELY_WEIGHTS` weigh (the comments there say which is which)."""
    strong, every = episodes(v.strong), episodes(v.times)
    silent_strong = (v.t - (strong[-1] if strong else v.created)) / DAY
    silent_any = (v.t - (every[-1] if every else v.created)) / DAY
    gap = max(((b - a) / DAY for a, b in itertools.pairwise(strong)), default=0.0)
    return [
        1.0,
        math.log1p(max(silent_strong, 0.0)),
        math.log1p(max(silent_any, 0.0)),
        math.log1p(gap),
        math.log1p(v.within(HORIZON_DAYS, strong_only=True)),
        math.log1p(v.within(HORIZON_DAYS)),
        math.log1p(len(strong)),
        1.0 if v.kind == "daily" else 0.0,
        math.log1p(max(v.age_days, 0.0)),
        math.log1p(gap) * math.log1p(max(silent_strong, 0.0)),
    ]


class Likely(Policy):
    """Archive when the chance of being needed in the next 60 days is below ``threshold``.

    The chance is a logistic model of the file's own history (silence since the
    last strong hit and since any hit, its longest strong rhythm, recent strong
    and came-along hits, daily or not, age), fitted on generated histories with a
    known need. ``simulate`` prints how well it is calibrated on the user's hits.
    """

    name = "likely"
    gives_probability = True

    def __init__(self, threshold: float = 0.1, min_age_days: float = 30,
                 weights: Sequence[float] = LIKELY_WEIGHTS):  # fmt: skip
        self.threshold, self.min_age_days, self.weights = threshold, min_age_days, tuple(weights)

    def params(self) -> dict[str, float | int | str]:
        return {"threshold": self.threshold, "min_age_days": self.min_age_days}

    def probability(self, v: FileView) -> float:
        z = sum(w * x for w, x in zip(self.weights, likely_features(v), strict=True))
        return 1.0 / (1.0 + math.exp(-max(min(z, 30.0), -30.0)))

    def decide(self, v: FileView) -> Verdict:
        p = self.probability(v)
        if v.age_days <= self.min_age_days:
            return Verdict(False, "young", f"{v.age_days:.1f} days old", p)
        # (the chance itself is printed next to the file: ExpireDecision.numbers["p_need"])
        if p >= self.threshold:
            why = f"may be needed within {HORIZON_DAYS} days (chance at least "
            return Verdict(False, "likely", f"{why}{self.threshold:.0%})", p)
        why = f"unlikely to be needed within {HORIZON_DAYS} days (chance below "
        return Verdict(True, "unlikely", f"{why}{self.threshold:.0%})", p)


# The policies ``[expire] policy`` and ``simulate --policy`` know by name.
def named_policies() -> dict[str, Policy]:
    return {
        "seed": Seed(),
        "cut30": Cut(30),
        "none": Never(),
        "rhythm": Rhythm(),
        "rhythm-strong": Rhythm(strong_only=True, name="rhythm-strong"),
        "actr": Activation(),
        "kind": KindAware(),
        "renewal": Renewal(),
        "likely": Likely(),
    }


DEFAULT_POLICY = "likely"  # chosen by replay: bench/bench_policies.py, docs/decisions.md
POLICY_NAMES = tuple(named_policies())


def policy_named(name: str) -> Policy:
    try:
        return named_policies()[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r} (known: {', '.join(POLICY_NAMES)})") from None


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

    @property
    def false_archive_rate(self) -> float:
        return self.hits.false_archives / self.archived if self.archived else 0.0

    @property
    def need_false_archive_rate(self) -> float:
        if self.need is None or not self.archived:
            return 0.0
        return self.need.false_archives / self.archived


class _Series:
    """Sorted event times per path, with "is there one in (a, b]" in O(log n)."""

    def __init__(self, times: Mapping[str, Sequence[float]]):
        self.times = {p: sorted(ts) for p, ts in times.items()}

    def any_in(self, path: str, a: float, b: float) -> bool:
        ts = self.times.get(path)
        if not ts:
            return False
        i = bisect.bisect_right(ts, a)
        return i < len(ts) and ts[i] <= b

    def first_after(self, path: str, a: float) -> float | None:
        ts = self.times.get(path)
        if not ts:
            return None
        i = bisect.bisect_right(ts, a)
        return ts[i] if i < len(ts) else None


def _views(
    files: Sequence[ReplayFile],
    hits_by_path: Mapping[str, Sequence[ReplayHit]],
    times_by_path: Mapping[str, Sequence[float]],
    t: float,
) -> dict[str, FileView]:
    out = {}
    for f in files:
        if f.created > t:
            continue
        hs = hits_by_path.get(f.path, ())
        n = bisect.bisect_right(times_by_path[f.path], t) if hs else 0  # hs sorted by ts
        seen = hs[:n]
        out[f.path] = FileView(
            f.path,
            f.kind,
            f.created,
            t,
            tuple(h.ts for h in seen),
            tuple(h.ts for h in seen if h.strong_at(t)),
        )
    return out


def replay(
    files: Sequence[ReplayFile],
    hits: Iterable[ReplayHit],
    runs: Sequence[float],
    policies: Sequence[Policy],
    horizon_days: float = HORIZON_DAYS,
    *,
    needs: Mapping[str, Sequence[float]] | None = None,
    calls: Sequence[Call] = (),
    restore_candidates: Callable[[int], Sequence[tuple[str, float]]] | None = None,
) -> list[PolicyResult]:
    """Replay each policy over the runs; decisions and metrics per policy.

    ``needs`` (path → times the file was truly needed) adds need-based outcome
    counts. ``calls`` and ``restore_candidates`` (call index → (path, score) of the
    files its query matches above the restore threshold, best first) add what
    restore on demand would have done: a restore is the best-matching file that is
    archived at the call; it *catches* a false archive when it comes before the
    file's first hit after it left, and is *needless* when the file has no hit in
    ``[restore, restore + horizon]``. Restores never change the archived state.
    """
    horizon = horizon_days * DAY
    hits_by_path: dict[str, list[ReplayHit]] = {}
    for h in hits:
        hits_by_path.setdefault(h.path, []).append(h)
    for lst in hits_by_path.values():
        lst.sort(key=lambda h: h.ts)
    hit_series = _Series({p: [h.ts for h in lst] for p, lst in hits_by_path.items()})
    strong_series = _Series({p: [h.ts for h in lst if h.strong] for p, lst in hits_by_path.items()})
    need_series = _Series(needs) if needs is not None else None
    runs = sorted(runs)
    views = [_views(files, hits_by_path, hit_series.times, t) for t in runs]
    protected = {f.path for f in files if f.protected}
    size = {f.path: f.size for f in files}
    results = []
    for policy in policies:
        archived_at: dict[str, float] = {}  # path → when it left (while in the archived state)
        episodes_: list[tuple[str, float, float | None]] = []  # (path, left, back)
        decisions: list[tuple[float, list[str]]] = []
        out_hits, out_need = Outcome(), Outcome() if need_series else None
        calibration: list[tuple[float, bool, bool, bool | None]] = []
        bytes_total = 0.0
        for t, vs in zip(runs, views, strict=True):
            for path, left in list(archived_at.items()):
                back = hit_series.first_after(path, left)
                if back is not None and back <= t:
                    del archived_at[path]
            chosen = []
            for path, v in vs.items():
                if path in archived_at or path in protected:
                    continue
                verdict = policy.decide(v)
                if verdict.p_need is not None:
                    calibration.append((
                        verdict.p_need,
                        strong_series.any_in(path, t, t + horizon),
                        hit_series.any_in(path, t, t + horizon),
                        need_series.any_in(path, t, t + horizon) if need_series else None,
                    ))  # fmt: skip
                if verdict.archive:
                    chosen.append(path)
            chosen.sort()
            decisions.append((t, chosen))
            for path in chosen:
                archived_at[path] = t
                episodes_.append((path, t, hit_series.first_after(path, t)))
                for out, series in ((out_hits, hit_series), (out_need, need_series)):
                    if (
                        out is not None
                        and series is not None
                        and series.any_in(path, t, t + horizon)
                    ):
                        out.false_archives += 1
                        out.lost[path] += 1
                if strong_series.any_in(path, t, t + horizon):
                    out_hits.strong_false_archives += 1
            for out, series in ((out_hits, hit_series), (out_need, need_series)):
                if out is None or series is None:
                    continue
                for path in vs:
                    if path in protected or series.any_in(path, t, t + horizon):
                        continue
                    out.cold_total += 1
                    out.cold_archived += path in archived_at
            bytes_total += sum(size.get(p, 0) for p in archived_at)
        res = PolicyResult(
            policy.name,
            policy.params(),
            decisions,
            sum(len(a) for _, a in decisions),
            bytes_total / len(runs) if runs else 0.0,
            out_hits,
            out_need,
            calibration,
        )
        if calls and restore_candidates is not None:
            _restores(res, episodes_, calls, restore_candidates, hit_series, horizon)
        results.append(res)
    return results


def _restores(
    res: PolicyResult,
    eps: Sequence[tuple[str, float, float | None]],
    calls: Sequence[Call],
    candidates: Callable[[int], Sequence[tuple[str, float]]],
    hit_series: _Series,
    horizon: float,
) -> None:
    """Count what restore on demand would have done for one policy's archive episodes."""
    if not eps:
        return
    order = sorted(range(len(calls)), key=lambda i: calls[i].ts)
    by_path: dict[str, list[tuple[float, float]]] = {}
    for path, left, back in eps:
        by_path.setdefault(path, []).append((left, back if back is not None else math.inf))
    restored: set[tuple[str, float]] = set()  # episodes already restored
    for i in order:
        ts = calls[i].ts
        for path, _score in candidates(i):
            ep = next((e for e in by_path.get(path, ()) if e[0] < ts <= e[1]), None)
            if ep is None:
                continue  # not archived at this call: the next-best archived match
            if (path, ep[0]) not in restored:
                restored.add((path, ep[0]))
                res.restores += 1
                if hit_series.any_in(path, ep[0], ep[0] + horizon) and ep[1] >= ts:
                    res.restores_caught += 1
                if not hit_series.any_in(path, ts - 1e-9, ts + horizon):
                    res.restores_needless += 1
            break


def calibration_bins(
    pairs: Sequence[tuple[float, bool, bool, bool | None]], bins: int = 10
) -> list[dict[str, float | int | str]]:
    """Predicted vs observed in equal-width bins of the predicted chance (empty bins left out).

    Hits cannot tell need from came-along, so two observed shares bracket it: a strong
    hit (read, or retrieved first) within the horizon, and a hit of any kind. On
    generated histories, ``observed_need`` is the share truly needed.
    """
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


def result_document(res: PolicyResult, iso: Callable[[float], str]) -> dict[str, object]:
    """One policy's JSON entry (``simulate --json``)."""
    doc: dict[str, object] = {
        "name": res.name,
        "params": res.params,
        "archived": res.archived,
        "false_archives": res.hits.false_archives,
        "false_archive_rate": round(res.false_archive_rate, 4),
        "strong_false_archives": res.hits.strong_false_archives,
        "cold_coverage": round(res.hits.cold_coverage, 4),
        "bytes_out_avg": round(res.bytes_out_avg, 1),
        "restores": res.restores,
        "restores_caught": res.restores_caught,
        "restores_needless": res.restores_needless,
        "lost_most": [{"path": p, "times": n} for p, n in res.hits.lost.most_common(5)],
        "decisions": [{"at": iso(t), "archive": a} for t, a in res.decisions],
    }
    if res.calibration:
        doc["calibration"] = calibration_bins(res.calibration)
    return doc
