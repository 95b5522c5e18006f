"""The chance says what is known (issue 28, item 6): a precise percent only where the user's
own calibration exists and its track record holds; a coarse band where it is missing or
missed in a few bins; "uncertain" where it missed in most. The plan itself is the same
(only the words change), on real files and a real database."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memoryd.policy import calibration as cb
from support.inprocess import memoryd as run_memoryd

DAY = 86400.0
NOW = 1_796_000_000.0  # 2026-11-30


@pytest.mark.parametrize(
    ("track", "calibrated", "want"),
    [
        ((), False, cb.BAND),  # the generic chance: never calibrated on this user
        ((4, 4), False, cb.BAND),
        ((), True, cb.BAND),  # calibrated, but no track record known yet
        ((0, 0), True, cb.BAND),
        ((5, 5), True, cb.PERCENT),  # every bin within 0.10 of what followed
        ((4, 5), True, cb.BAND),  # missed in one bin of five
        ((2, 5), True, cb.UNCERTAIN),  # missed in most
        ((26, 44), True, cb.BAND),
        ((18, 44), True, cb.UNCERTAIN),
    ],
)
def test_how_precisely_a_chance_is_shown_follows_what_is_known(
    track: tuple[int, ...], calibrated: bool, want: str
) -> None:
    assert cb.chance_precision(track, calibrated) == want


def test_a_band_is_cut_at_the_plans_cut_and_never_claims_a_percent() -> None:
    assert cb.shown_chance(0.04, cb.PERCENT, 0.1) == "4%"
    assert cb.shown_chance(0.04, cb.BAND, 0.1) == "below 10%"
    assert cb.shown_chance(0.12, cb.BAND, 0.1) == "10%–25%"
    assert cb.shown_chance(0.3, cb.BAND, 0.1) == "25%–50%"
    assert cb.shown_chance(0.8, cb.BAND, 0.1) == "above 50%"
    # a calibrated cut of 7 %: an archived note is "below 7%", a kept one at 8 % above it
    assert cb.shown_chance(0.05, cb.UNCERTAIN, 0.07) == "uncertain (below 7%)"
    assert cb.shown_chance(0.08, cb.BAND, 0.07) == "7%–25%"
    # the words say why
    assert "not calibrated" in cb.precision_words(cb.BAND, (), False)
    assert cb.precision_words(cb.UNCERTAIN, (2, 5), True) == (
        "shown as uncertain: off by more than 0.10 in 3 of 5 chance bins"
    )
    assert cb.precision_words(cb.PERCENT, (5, 5), True) == ""


def _install(root: Path) -> Path:
    state = root / "oc"
    ws = state / "workspace"
    (ws / "memory").mkdir(parents=True)
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    for i in range(6):
        p = ws / f"memory/old-{i}.md"
        p.write_text(f"# old {i}\n\nnothing since\n")
        os.utime(p, (NOW - 200 * DAY, NOW - 200 * DAY))
    cfg = root / "c.toml"
    cfg.write_text(f'[openclaw]\nstate_dir = "{state}"\n')
    return cfg


def test_an_uncalibrated_install_shows_bands_and_says_why(tmp_path: Path) -> None:
    cfg = _install(tmp_path)
    env = {"MEMORYD_NOW": str(NOW)}
    dry = run_memoryd(["--config", str(cfg), "expire", "--dry-run", "--no-scan"], env=env)
    assert dry.returncode == 0, dry.stderr
    archive = [line for line in dry.stdout.splitlines() if line.startswith("  archive ")]
    assert archive  # the plan still archives what it did: only the words changed
    assert all("[chance needed in 60 days: below 10%]" in line for line in archive), archive
    assert "shown as a band: not calibrated on your history yet" in dry.stdout
    doc = json.loads(run_memoryd(["--config", str(cfg), "expire", "--dry-run", "--json",
                                  "--no-scan"], env=env).stdout)  # fmt: skip
    assert doc["chance_shown_as"] == "band"
    assert all(isinstance(a["p_need"], float) for a in doc["archive"])  # machines get it all
    said = run_memoryd(["--config", str(cfg), "explain", "memory/old-0.md", "--no-scan"], env=env)
    assert said.returncode == 0, said.stderr
    assert "chance needed in 60 days: below 10%" in said.stdout
    status = run_memoryd(["--config", str(cfg), "status"], env=env)
    assert "chances shown as a band: not calibrated on your history yet" in status.stdout
