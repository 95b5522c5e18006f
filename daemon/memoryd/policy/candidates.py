"""The candidate expire policies: what each one sees of a file and how it decides.

A policy is a function of one :class:`FileView` (a file's hit times, and which of
them were strong, as known at a run time ``t``) returning a :class:`Verdict`; it
keeps no state between files or runs. The same objects decide for the expire job
(``[expire] policy``, :func:`memoryd.policy.expire_plan.policy_decisions`) and are
scored by the replay (:mod:`memoryd.policy.replay`, ``memoryd simulate``), so the
policy a user runs is the one whose numbers ``simulate`` prints.
"""

from __future__ import annotations

import bisect
import copy
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..config import ExpireConfig
from .calibration import Calibration, group_of

DAY = 86400.0
HORIZON_DAYS = 60
# The defaults of `[expire]` (the policy's name, the seed rule's numbers): the schema's.
_DEFAULTS = ExpireConfig()


@dataclass(frozen=True)
class FileView:
    """What a policy sees of one file at run time ``t``."""

    path: str
    kind: str
    created: float
    t: float
    times: tuple[float, ...]  # hit times <= t, sorted
    strong: tuple[float, ...]  # times of the hits strong as known at t, sorted
    # the bursts of each (:func:`episodes`), when the replay has them already (None: not)
    bursts: Sequence[float] | None = field(default=None, compare=False)
    strong_bursts: Sequence[float] | None = field(default=None, compare=False)

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

    def params(self) -> dict[str, float | int | str]:
        return {}

    def decide(self, v: FileView) -> Verdict:  # pragma: no cover - interface
        raise NotImplementedError

    def same_as(self, other: Policy) -> bool:
        return type(self) is type(other) and self.params() == other.params()


def days_old(age_days: float) -> str:
    """``age_days`` in words: "12.5 days old", or for a note dated ahead of now (by its
    name: written for a day to come) "dated 3.0 days ahead", never a negative age."""
    if age_days < 0:
        return f"dated {-age_days:.1f} days ahead"
    return f"{age_days:.1f} days old"


def seed_rule(
    age_days: float,
    recent_hits: int,
    min_age_days: float,
    window_days: float,
    max_hits: int,
    created_from: str | None = None,
) -> tuple[str, str]:
    """The seed rule and its reason, the one place either is written: ``young`` (not older
    than ``min_age_days``), ``active`` (more than ``max_hits`` hits in the last
    ``window_days``) or ``expired`` (archive). :class:`Seed` replays it;
    :func:`memoryd.policy.expire.decide` applies it after protection, marks and pins
    (``created_from``: what the age was read from, said in a young file's reason)."""
    if age_days <= min_age_days:
        source = f" (created from {created_from})" if created_from else ""
        return "young", f"{days_old(age_days)}{source}, not older than {min_age_days}"
    if recent_hits > max_hits:
        return "active", f"{recent_hits} hits in the last {window_days} days (more than {max_hits})"
    return "expired", (
        f"{age_days:.0f} days old and {recent_hits} hit{'s' if recent_hits != 1 else ''} in "
        f"the last {window_days} days (at most {max_hits})"
    )


class Seed(Policy):
    """The seed rule (:func:`seed_rule`): older than ``min_age_days`` and at most ``max_hits``
    hits in ``window_days``."""

    name = "seed"

    def __init__(
        self,
        min_age_days: float = _DEFAULTS.min_age_days,
        window_days: float = _DEFAULTS.window_days,
        max_hits: int = _DEFAULTS.max_hits,
    ):
        self.min_age_days, self.window_days, self.max_hits = min_age_days, window_days, max_hits

    def params(self) -> dict[str, float | int | str]:
        return {"min_age_days": self.min_age_days, "window_days": self.window_days,
                "max_hits": self.max_hits}  # fmt: skip

    def decide(self, v: FileView) -> Verdict:
        recent = v.within(self.window_days)
        rule, reason = seed_rule(
            v.age_days, recent, self.min_age_days, self.window_days, self.max_hits
        )
        return Verdict(rule == "expired", rule, reason)


class Cut(Policy):
    """Everything older than ``days`` (the coverage ceiling of a rule with an age floor)."""

    name = "cut30"

    def __init__(self, days: float = 30):
        self.days = days

    def params(self) -> dict[str, float | int | str]:
        return {"days": self.days}

    def decide(self, v: FileView) -> Verdict:
        if v.age_days <= self.days:
            return Verdict(False, "young", days_old(v.age_days))
        return Verdict(True, "old", f"{v.age_days:.0f} days old (more than {self.days})")


class Never(Policy):
    """Archive nothing (the false-archive floor)."""

    name = "none"

    def decide(self, v: FileView) -> Verdict:
        return Verdict(False, "none", "policy none archives nothing")


def episodes(times: Sequence[float], gap: float = DAY) -> list[float]:
    """Start times of bursts: hits less than ``gap`` after the previous one join its burst
    (one comprehension over the pairs: the replay asks this of every file at every run)."""
    pairs = itertools.pairwise(itertools.chain(_BEFORE_ALL, times))
    return [ts for last, ts in pairs if ts - last >= gap]


_BEFORE_ALL = (-math.inf,)


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
    strong = v.strong_bursts if v.strong_bursts is not None else episodes(v.strong)
    every = v.bursts if v.bursts is not None else episodes(v.times)
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

    The *generic* chance is a logistic model of the file's own history, fitted on generated
    histories with a known need. With ``learn`` (the default) it is recalibrated on the
    user's own verdicts and the cut chosen on them (:mod:`memoryd.policy.calibration`):
    ``calibration`` holds that (None: generic).
    """

    name = "likely"

    def __init__(
        self,
        threshold: float = 0.1,
        min_age_days: float = 30,
        weights: Sequence[float] = LIKELY_WEIGHTS,
        *,
        learn: bool = True,
        target: float = 0.05,
        floor: float = 0.5,
        calibration: Calibration | None = None,
        name: str | None = None,
    ):
        self.threshold, self.min_age_days, self.weights = threshold, min_age_days, tuple(weights)
        if name:  # the uncalibrated one is replayed beside the default: they need two names
            self.name = name
        self.learn, self.target, self.floor = learn, target, floor
        self.calibration = calibration

    def params(self) -> dict[str, float | int | str]:
        out: dict[str, float | int | str] = {
            "threshold": self.threshold, "min_age_days": self.min_age_days
        }
        if self.learn:
            out.update(learn=1, target=self.target, floor=self.floor)
        return out

    def calibrated(self, calibration: Calibration | None) -> Likely:
        """This policy with ``calibration`` (None: the generic chance and threshold)."""
        out = copy.copy(self)
        out.calibration = calibration if self.learn else None
        return out

    def probability(self, v: FileView) -> float:
        """The generic chance (before any calibration)."""
        z = sum(w * x for w, x in zip(self.weights, likely_features(v), strict=True))
        return 1.0 / (1.0 + math.exp(-max(min(z, 30.0), -30.0)))

    def decide(self, v: FileView) -> Verdict:
        return self.decide_from(v, self.probability(v))

    def decide_from(self, v: FileView, p: float) -> Verdict:
        """:meth:`decide` given ``v``'s generic chance ``p`` (:meth:`probability`), which
        the replay has already computed for its calibration samples."""
        cut = self.threshold
        if self.calibration is not None:
            group = group_of(v.path, v.kind)
            p, cut = self.calibration.apply(p, group=group), self.calibration.cut
        if v.age_days <= self.min_age_days:
            return Verdict(False, "young", days_old(v.age_days), p)
        # (the chance itself is printed next to the file: ExpireDecision.numbers["p_need"])
        if p >= cut:
            why = f"may be needed within {HORIZON_DAYS} days (chance at least "
            return Verdict(False, "likely", f"{why}{cut:.0%})", p)
        why = f"unlikely to be needed within {HORIZON_DAYS} days (chance below "
        return Verdict(True, "unlikely", f"{why}{cut:.0%})", p)


# The policies ``simulate --policy`` knows by name (``[expire] policy``: those of
# memoryd.config.EXPIRE_POLICIES); the research candidates are tests/support/research_policies.py.
def named_policies() -> dict[str, Policy]:
    return {
        "seed": Seed(),
        "cut30": Cut(30),
        "none": Never(),
        "likely": Likely(),
        "likely-generic": Likely(learn=False, name="likely-generic"),
    }


DEFAULT_POLICY = _DEFAULTS.policy  # chosen by replay: bench/bench_policies.py, docs/decisions.md
POLICY_NAMES = tuple(named_policies())


def policy_named(name: str) -> Policy:
    try:
        return named_policies()[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r} (known: {', '.join(POLICY_NAMES)})") from None
