"""The research expire policies ``likely`` was chosen against, for bench/ and the tests.

They were ``[expire] policy`` values once; none beat ``likely`` on the held-out history
families (docs/decisions.md), so they left the runtime: ``bench/bench_policies.py`` still
replays them beside the runtime's policies, and the replay tests use them as examples of a
policy that keeps a file by its rhythm. Same interface as
:class:`memoryd.policy.candidates.Policy`.
"""

from __future__ import annotations

import itertools
import math

from memoryd.policy.candidates import (
    DAY,
    HORIZON_DAYS,
    FileView,
    Likely,
    Policy,
    Seed,
    Verdict,
    episodes,
)


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


class FoundCut(Likely):
    """``likely`` with a lower generic cut (``found_cut``) for a note that was hit at least
    once: until the user's history calibrates the chance, a note someone found is archived
    only below ``found_cut``, a note nobody ever found below ``threshold`` as before, so the
    noise seed 000 complains of goes as early as it does today (docs/decisions.md, "A lower
    cut for a note someone found")."""

    def __init__(self, found_cut: float = 0.05, floor: float = 0.4, name: str = "found-cut"):
        super().__init__(floor=floor, name=name)
        self.found_cut = found_cut

    def params(self) -> dict[str, float | int | str]:
        return {**super().params(), "found_cut": self.found_cut}

    def decide_from(self, v: FileView, p: float) -> Verdict:
        verdict = super().decide_from(v, p)
        if verdict.archive and self.calibration is None and v.times and p >= self.found_cut:
            why = f"found before: may be needed within {HORIZON_DAYS} days (chance at least "
            return Verdict(False, "likely", f"{why}{self.found_cut:.0%})", p)
        return verdict


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


def research_policies() -> dict[str, Policy]:
    """The research candidates by the names bench_policies.py's table prints."""
    return {
        "rhythm": Rhythm(),
        "rhythm-strong": Rhythm(strong_only=True, name="rhythm-strong"),
        "actr": Activation(),
        "kind": KindAware(),
        "renewal": Renewal(),
    }
