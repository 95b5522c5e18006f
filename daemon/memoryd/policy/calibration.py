"""``likely``'s chance recalibrated on the user's own history, and the cut chosen on it.

The generic model (:data:`memoryd.policy.candidates.LIKELY_WEIGHTS`) was fitted on generated
histories and can be far off on another; memoryd holds the history that matters, the user's,
so once enough verdicts have their outcome it maps the generic chance onto what followed
(docs/decisions.md, "Decisions fitted to the user's own history"):

* **samples**: the policy's own past verdicts at each past run ``t`` (generic chance,
  workspace size, group) labelled by a *strong* hit in ``(t, t + horizon]``, usable once
  the horizon (all but :data:`SHORT_BY` of it) is past (:func:`usable`): never later.
* **calibration**: ridge logistic regression on the generic logit, the size and the group
  (:func:`_inputs`, :func:`group_of`; pure Python Newton steps), then histogram binning
  (:func:`binned`): the printed chance is its bin's observed rate.
* **cut**: the largest cut whose archives had a strong hit at most ``target`` of the time;
  when that archives less than ``floor`` of the samples without one, the smallest that does.

Below :data:`MIN_VERDICTS` usable samples over :data:`MIN_RUNS` runs, nothing is
calibrated and the generic chance and threshold are used (and said to be).
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

# the shown-chance rule, re-exported (it lives apart: light enough for ``status``)
from .chance_shown import BAND as BAND
from .chance_shown import PERCENT as PERCENT
from .chance_shown import UNCERTAIN as UNCERTAIN
from .chance_shown import chance_band as chance_band
from .chance_shown import chance_precision as chance_precision
from .chance_shown import precision_words as precision_words
from .chance_shown import shown_chance as shown_chance

# Enough of the user's own verdicts to recalibrate on (docs/decisions.md: measured with
# bench/bench_policies.py --minimum; three runs so one odd month does not make the map).
MIN_VERDICTS = 200
MIN_RUNS = 3
# The choices below were made on training seeds of the generated families (docs/decisions.md).
# How hard the weights are held towards their prior: a prior worth a few verdicts.
RIDGE = 10.0
# What the size weight is held towards: a larger workspace shares the first results among
# more notes, which the past (its sizes close together) holds too little of to learn.
SIZE_PRIOR = -0.5
# The second stage: equal-count bins mapped to their observed strong-hit rate (monotone),
# for the shape a logistic map cannot give (the floor of strong hits of notes nobody needs).
BINS = 5
# At most this many of the latest verdicts are fitted on: the expire job refits at every
# past run of the replay, in pure Python.
MAX_SAMPLES = 3000
# Groups with at least GROUP_MIN_VERDICTS verdicts, at most MAX_GROUPS of them (the most
# verdicts first), get their own offset; the others share the base.
GROUP_MIN_VERDICTS = 30
MAX_GROUPS = 20
DAILY_GROUP = "(daily notes)"
# A verdict is learned from once all but this much of its horizon is past (its label then
# what had happened so far): two monthly runs apart are 59 days across Feb, and waiting for
# the 60th day would learn from verdicts three months old.
SHORT_BY = 2 * 86400.0
# Cuts tried: 0.01 … 0.50. Never above one half, whatever the floor asks: a note more
# likely than not to be read again within 60 days is kept.
CUT_GRID = tuple(round(0.01 * i, 2) for i in range(1, 51))


@dataclass(frozen=True)
class Sample:
    """One past verdict: run time, the generic chance, and what followed within the horizon."""

    t: float
    p: float
    strong: bool
    any_hit: bool = False
    archivable: bool = True  # old enough to be archived (the cut is chosen on these)
    files: int = 1  # files taking part in that run (the workspace's size then)
    group: str = ""  # the note's group (:func:`group_of`)
    strong_at: float | None = None  # its first strong hit after t (inf: none; None: unknown)


def group_of(path: str, kind: str) -> str:
    """The group a note's fate is learned with: all daily notes together, any other note
    with the notes of its folder (workspace-relative; "" for the workspace's top)."""
    if kind == "daily":
        return DAILY_GROUP
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def _inputs(p: float, files: int, centre: float) -> tuple[float, ...]:
    """What the calibration weighs: 1, the generic chance's logit z, z²/10 (a bend), the
    workspace's size (ln files, centred on the samples'), and size × z."""
    z = _logit(p)
    size = math.log(max(files, 1)) - centre
    return (1.0, z, z * z / 10, size, size * z)


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(z, 30.0), -30.0)))


@dataclass(frozen=True)
class Calibration:
    """The map from the generic chance to the calibrated one, and the cut chosen with it.

    ``logit(calibrated) = a + b·z + c·z²/10 + d·s + e·s·z`` with ``z = logit(generic)`` and
    ``s = ln files − centre``; fitted on the past, read at today's size (``size``).
    """

    coef: tuple[float, ...]  # weights of _inputs (a, b, c, d, e)
    centre: float  # mean ln(files) of the samples
    size: int  # files taking part at the run it is read for
    verdicts: int  # samples it was fitted on
    runs: int  # distinct runs they came from
    cut: float  # archive when the calibrated chance is below this
    cut_rule: str  # "target" (strong FA at most the target) or "floor" (coverage floor)
    cut_strong_rate: float  # measured: share of the samples below the cut with a strong hit
    cut_coverage: float  # measured: share of the samples without a strong hit below the cut
    knots_x: tuple[float, ...] = ()  # second stage: the first's chance, binned (means) …
    knots_y: tuple[float, ...] = ()  # … against the observed strong-hit rate there
    groups: tuple[str, ...] = ()  # groups with an offset of their own …
    group_coef: tuple[float, ...] = ()  # … added to the logit (others: none)
    # how the chance printed at the past calibrated runs did against what followed, where
    # that is known: bins of >= 50 verdicts within 0.10, of how many (() when not measured)
    track: tuple[int, ...] = ()

    def apply(self, p: float, files: int | None = None, group: str | None = None) -> float:
        """The calibrated chance of a file whose generic chance is ``p`` (at ``size``), in
        ``group`` (:func:`group_of`; None or a group without an offset: the base)."""
        n = self.size if files is None else files
        x = _inputs(p, n, self.centre)
        z = sum(w * v for w, v in zip(self.coef, x, strict=True))
        if group is not None and group in self.groups:
            z += self.group_coef[self.groups.index(group)]
        q = _sigmoid(z)
        if not self.knots_x:
            return q
        xs, ys = self.knots_x, self.knots_y
        if q <= xs[0]:
            return ys[0]
        if q >= xs[-1]:
            return ys[-1]
        i = bisect.bisect_right(xs, q)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        return y0 + (y1 - y0) * (q - x0) / (x1 - x0) if x1 > x0 else y1

    def cut_report(self) -> dict[str, int | float | str]:
        """What it was fitted on and where it cuts, with the cut's measured rates: the
        fields ``simulate --json``, its per-run list and ``status`` all report."""
        return {
            "verdicts": self.verdicts,
            "runs": self.runs,
            "cut": self.cut,
            "rule": self.cut_rule,
            "strong_rate": round(self.cut_strong_rate, 4),
            "coverage": round(self.cut_coverage, 4),
        }

    def describe(self) -> str:
        """How ``expire --dry-run``, ``explain`` and ``simulate`` say where the chance is from."""
        folders = sum(g != DAILY_GROUP for g in self.groups)
        kinds = [f"{folders} folder{'s' if folders != 1 else ''}"] if folders else []
        if DAILY_GROUP in self.groups:
            kinds.insert(0, "daily notes")
        # one group alone may hold every note: then nothing was learned apart
        apart = f"; {' and '.join(kinds)} learned apart" if len(self.groups) > 1 else ""
        record = ""
        if len(self.track) == 2 and self.track[1]:
            record = (
                f"; at your past runs it was within 0.10 of what followed in {self.track[0]} "
                f"of {self.track[1]} chance bins"
            )
        return (
            f"calibrated on {self.verdicts} of your own past verdicts ({self.runs} runs{apart}); "
            f"archive below {self.cut:.0%}{record}"
        )


GENERIC = (
    "the generic model's chance, not yet calibrated on your history (needs "
    f"{MIN_VERDICTS} past verdicts over {MIN_RUNS} runs whose 60 days have passed)"
)


def policy_precision(calibration: Calibration | None, generic_cut: float) -> tuple[str, float]:
    """(precision, cut) of a ``likely`` deciding with ``calibration`` (None: the generic
    chance, cut at ``generic_cut``)."""
    if calibration is None:
        return BAND, generic_cut
    return chance_precision(calibration.track, True), calibration.cut


def binned(
    points: Sequence[tuple[float, float]], bins: int
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(x, label) in ``bins`` equal-count bins by x: each bin's mean x and mean label,
    pooled where the labels' means would fall (pool-adjacent-violators), so the map stays
    monotone."""
    pts = sorted(points)
    n = len(pts)
    blocks: list[list[float]] = []
    for b in range(bins):
        part = pts[b * n // bins : (b + 1) * n // bins]
        if not part:
            continue
        blocks.append([sum(x for x, _ in part), sum(y for _, y in part), float(len(part))])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            sx, sy, m = blocks.pop()
            blocks[-1][0] += sx
            blocks[-1][1] += sy
            blocks[-1][2] += m
    return tuple(b[0] / b[2] for b in blocks), tuple(b[1] / b[2] for b in blocks)


def logistic(
    rows: Sequence[tuple[Sequence[float], float]],
    ridge: float = 1.0,
    start: Sequence[float] | None = None,
    prior: Sequence[float] | None = None,
) -> list[float]:
    """Logistic regression by Newton steps, the first input the intercept (a ridge on the
    others, towards ``prior``, keeps it defined when an input does not vary). Rows with the
    same inputs are counted once with their weight; ``start`` (the last run's weights) saves
    most steps."""
    grouped: dict[tuple[float, ...], list[float]] = {}
    for x, y in rows:
        g = grouped.get(tuple(x))
        if g is None:
            grouped[tuple(x)] = [1.0, y]
        else:
            g[0] += 1.0
            g[1] += y
    # inputs (only the non-zero ones: a note's group is one of many), count, positives
    sparse = [([(i, v) for i, v in enumerate(x) if v], n, k) for x, (n, k) in grouped.items()]
    d = len(rows[0][0])
    w = list(start) if start is not None and len(start) == d else [0.0] * d
    mu = list(prior) if prior is not None else [0.0] * d
    for _ in range(30):
        grad = [0.0] + [-ridge * (v - m) for v, m in zip(w[1:], mu[1:], strict=True)]
        hess = [[0.0] * d for _ in range(d)]
        for i in range(1, d):
            hess[i][i] = ridge
        hess[0][0] = 1e-6
        for nz, n, k in sparse:
            z = 0.0
            for i, xi in nz:
                z += w[i] * xi
            p = _sigmoid(z)
            slope, r = k - n * p, n * p * (1 - p)
            for a_, (i, xi) in enumerate(nz):
                grad[i] += slope * xi
                rx = r * xi
                row = hess[i]
                for j, xj in nz[: a_ + 1]:
                    row[j] += rx * xj
        for i in range(d):
            for j in range(i + 1, d):
                hess[i][j] = hess[j][i]
        step = _solve(hess, grad)
        w = [a_ + b_ for a_, b_ in zip(w, step, strict=True)]
        if max(abs(v) for v in step) < 1e-6:
            break
    return w


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (small, well-conditioned systems)."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for c in range(n):
        piv = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[piv] = m[piv], m[c]
        if abs(m[c][c]) < 1e-12:
            continue
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                for k in range(c, n + 1):
                    m[r][k] -= f * m[c][k]
    return [m[i][n] / m[i][i] if abs(m[i][i]) >= 1e-12 else 0.0 for i in range(n)]


def usable(samples: Sequence[Sample], at: float, horizon: float) -> list[Sample]:
    """The samples whose outcome is known at ``at``: their run plus the horizon is past, or
    all but :data:`SHORT_BY` of it, their label then what had happened by ``at`` (a sample
    without ``strong_at`` only once the whole horizon is past)."""
    out = []
    for s in samples:
        if s.t + horizon <= at:
            out.append(s)
        elif s.t + horizon - SHORT_BY <= at and s.strong_at is not None:
            out.append(replace(s, strong=s.strong_at <= at))
    return out


def fit(
    samples: Sequence[Sample],
    *,
    target: float = 0.05,
    floor: float = 0.5,
    min_verdicts: int | None = None,
    min_runs: int | None = None,
    size: int | None = None,
    start: Calibration | None = None,
) -> Calibration | None:
    """The calibration and cut on ``samples`` (all usable), or None below the minimum;
    read at ``size`` files (default: the latest run's). ``start``: an earlier calibration
    to start the fit from (the same result, sooner)."""
    runs = len({s.t for s in samples})
    if len(samples) < (min_verdicts or MIN_VERDICTS) or runs < (min_runs or MIN_RUNS):
        return None
    if len(samples) > MAX_SAMPLES:  # the latest runs' (a bound on the fit's time)
        samples = sorted(samples, key=lambda s: s.t)[-MAX_SAMPLES:]
        runs = len({s.t for s in samples})

    centre = sum(math.log(max(s.files, 1)) for s in samples) / len(samples)
    counts = Counter(s.group for s in samples)
    groups = tuple(g for g, n in counts.most_common(MAX_GROUPS) if n >= GROUP_MIN_VERDICTS)
    where = {g: i for i, g in enumerate(groups)}

    def inputs(s: Sample) -> tuple[float, ...]:
        one_hot = [0.0] * len(groups)
        if s.group in where:
            one_hot[where[s.group]] = 1.0
        return (*_inputs(s.p, s.files, centre), *one_hot)

    prior = [0.0, 0.0, 0.0, SIZE_PRIOR, 0.0] + [0.0] * len(groups)
    w = logistic([(inputs(s), float(s.strong)) for s in samples], ridge=RIDGE, prior=prior)
    k = len(w) - len(groups)
    coef, group_coef = tuple(w[:k]), tuple(w[k:])
    first = Calibration(coef, centre, 1, 0, 0, 0.0, "", 0.0, 0.0,
                        groups=groups, group_coef=group_coef)  # fmt: skip
    knots = binned(
        [(first.apply(s.p, s.files, s.group), float(s.strong)) for s in samples], BINS
    )
    latest = max(samples, key=lambda s: s.t).files
    cal = replace(first, size=size or latest, verdicts=len(samples), runs=runs,
                  knots_x=knots[0], knots_y=knots[1])  # fmt: skip
    cut, rule, rate, cov = choose_cut(
        [(cal.apply(s.p, s.files, s.group), s.strong) for s in samples if s.archivable],
        target=target,
        floor=floor,
    )
    return replace(cal, cut=cut, cut_rule=rule, cut_strong_rate=rate, cut_coverage=cov)


def choose_cut(
    scored: Sequence[tuple[float, bool]], *, target: float, floor: float
) -> tuple[float, str, float, float]:
    """(cut, rule, strong-hit rate below it, coverage of the no-strong-hit samples).

    The largest cut of :data:`CUT_GRID` whose archives had a strong hit at most ``target``
    of the time; if it archives less than ``floor`` of the samples without a strong hit,
    the smallest cut that reaches the floor instead (rule "floor").
    """
    pts = sorted(scored)
    chances = [q for q, _ in pts]
    strong_before = [0]
    for _, y in pts:
        strong_before.append(strong_before[-1] + y)
    quiet = len(pts) - strong_before[-1]

    def measure(c: float) -> tuple[float, float]:
        n = bisect.bisect_left(chances, c)
        k = strong_before[n]
        return (k / n if n else 0.0), ((n - k) / quiet if quiet else 0.0)

    best = None
    for c in CUT_GRID:
        rate, cov = measure(c)
        if rate <= target:
            best = (c, "target", rate, cov)
    if best is not None and best[3] >= floor:
        return best
    for c in CUT_GRID:
        rate, cov = measure(c)
        if cov >= floor:
            return (c, "floor", rate, cov)
    c = CUT_GRID[-1]
    return (c, "floor", *measure(c))
