"""How precisely a chance may be shown : a percent, a band, "uncertain".

Its own module, importing next to nothing, because ``memoryd status`` asks it and a read
command imports only what it uses (tests/project/test_startup.py); :mod:`memoryd.policy.calibration`
re-exports it for the rest.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

# A percent says more than is known where the user's own calibration is missing or its track
# record misses: a coarse band then, "uncertain" when it missed in most bins. Only the words
# change, never the plan's cut.
PERCENT, BAND, UNCERTAIN = "percent", "band", "uncertain"
BAND_EDGES = (0.25, 0.5)  # a band's edges above the cut
# What a dry run, ``explain`` or ``reflect`` learned, kept for the next command (and read by
# ``status`` before any run recorded its own): in memoryd's state folder, beside the database.
LEARNED_FILE = "calibration-learned.json"


def learned_key(cfg: Any) -> str:
    """What learning reads from the configuration besides the target and floor: a saved
    calibration learned under another is learned again."""
    import json

    from ..config import schedule_timezone

    e = cfg.expire
    return json.dumps([
        cfg.schedule.expire, str(schedule_timezone(cfg)), sorted(map(str, e.protect)),
        sorted(map(str, e.pinned)), str(cfg.archive.dir), getattr(e, "policy", None),
    ])  # fmt: skip


def chance_precision(track: Sequence[int] | None, calibrated: bool) -> str:
    """How precisely to show a chance: :data:`PERCENT` only with the user's calibration and
    a track record whose every measured bin came within 0.10 of what followed;
    :data:`UNCERTAIN` when it missed in most of them; :data:`BAND` otherwise (no
    calibration, no track record yet, or a miss in a few bins)."""
    if not calibrated or not track or len(track) != 2 or not track[1]:
        return BAND
    within, bins = int(track[0]), int(track[1])
    if within >= bins:
        return PERCENT
    return UNCERTAIN if 2 * within < bins else BAND


def chance_band(p: float, cut: float) -> str:
    """The coarse band ``p`` falls in: below the cut, then up to 25 %, 50 %, above."""
    edges = sorted({round(cut, 4), *BAND_EDGES} - {0.0})
    if p < edges[0]:
        return f"below {edges[0]:.0%}"
    for lo, hi in itertools.pairwise(edges):
        if p < hi:
            return f"{lo:.0%}–{hi:.0%}"
    return f"above {edges[-1]:.0%}"


def shown_chance(p: float, precision: str, cut: float) -> str:
    """A chance as ``expire``, ``explain`` and ``status`` print it (:func:`chance_precision`)."""
    if precision == PERCENT:
        return f"{p:.0%}"
    band = chance_band(p, cut)
    return band if precision == BAND else f"uncertain ({band})"


def precision_words(precision: str, track: Sequence[int] | None, calibrated: bool) -> str:
    """Why the chance is shown as it is, in a clause (empty for a percent)."""
    if precision == PERCENT:
        return ""
    if not calibrated:
        return "shown as a band: not calibrated on your history yet"
    if not track or len(track) != 2 or not track[1]:
        return "shown as a band: its track record on your history is not known yet"
    missed = int(track[1]) - int(track[0])
    what = "a band" if precision == BAND else "uncertain"
    return f"shown as {what}: off by more than 0.10 in {missed} of {track[1]} chance bins"
