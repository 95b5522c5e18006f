"""Where OpenClaw's bootstrap cut falls, by the 2026.9.6 rules (a MEMORY.md over 20,000
characters keeps its first 75 % and last 25 % of the budget; the total budget in prompt
order). test_bootstrap_cut_openclaw.py checks the same against the installed OpenClaw's code.
"""

from __future__ import annotations

import pytest

from memoryd.bootstrap_cut import (
    FILE_ORDER,
    bootstrap_cuts,
    js_trim_end,
    kept_ranges,
    trim_cut,
)

pytestmark = pytest.mark.unit


def test_memory_md_over_its_budget_keeps_the_first_three_quarters_and_the_last_quarter():
    cuts = bootstrap_cuts({"MEMORY.md": "x" * 30_000})
    m = cuts["MEMORY.md"]
    assert m.truncated and m.loaded
    assert m.injected <= 20_000 and m.head + m.tail + 150 > 20_000  # (the marker line's)
    assert abs(m.head / (m.head + m.tail) - 0.75) < 0.001
    assert m.dropped == 30_000 - m.head - m.tail


def test_the_total_budget_is_shared_in_prompt_order_and_a_late_file_can_be_left_out():
    files = {name: "y" * 19_000 for name in FILE_ORDER}
    cuts = bootstrap_cuts(files, 20_000, 60_000)
    assert cuts["USER.md"].head + cuts["USER.md"].tail < 4_000  # USER.md's own cap
    assert not cuts["MEMORY.md"].loaded  # AGENTS, SOUL, IDENTITY took 57,000; USER ~4,000
    small = bootstrap_cuts({"AGENTS.md": "a" * 100, "MEMORY.md": "m" * 25_000}, 20_000, 10_000)
    assert small["MEMORY.md"].loaded and small["MEMORY.md"].injected <= 9_900


def test_a_missing_memory_md_takes_nothing_and_a_missing_soul_md_takes_its_marker():
    cuts = bootstrap_cuts({"SOUL.md": None, "MEMORY.md": None, "AGENTS.md": "a"}, 20_000, 100)
    assert set(cuts) == {"AGENTS.md"}


def test_a_surrogate_pair_is_never_split_at_the_cut():
    text = "😀" * 15_000  # 30,000 UTF-16 units
    cut = bootstrap_cuts({"MEMORY.md": text})["MEMORY.md"]
    for a, b in kept_ranges(text, cut):
        assert a % 2 == 0 and b % 2 == 0


def test_trailing_blanks_are_trimmed_as_javascript_trims_them():
    assert js_trim_end("a\n \t\ufeff\u3000") == "a"
    assert js_trim_end("a\x1c") == "a\x1c"  # str.rstrip would strip it; JavaScript does not
    assert trim_cut("MEMORY.md", 10, 20) == (10, 0, "")


def test_the_limits_are_read_from_openclaw_json_as_openclaw_reads_them():
    """`bootstrapMaxChars: 4e3` (or `4000.0`), which `openclaw config validate` accepts and
    OpenClaw cuts MEMORY.md at, was taken for no number: memoryd said the file was loaded
    whole at 20,000. An agent's own value OpenClaw cannot use gives OpenClaw's default, not
    the defaults' value (its own ``??`` only passes over null)."""
    from memoryd.bootstrap import bootstrap_limits

    def oc(defaults: dict, own: dict | None = None) -> dict:
        return {"agents": {"defaults": defaults, "list": [{"id": "main", **(own or {})}]}}

    assert bootstrap_limits(oc({"bootstrapMaxChars": 4e3}), "main") == (4000, 60_000)
    assert bootstrap_limits(oc({"bootstrapTotalMaxChars": 30000.0}), "main") == (20_000, 30_000)
    assert bootstrap_limits(oc({"bootstrapMaxChars": 4000.7}), "main")[0] == 4000  # (floored)
    # (10**400: JSON.parse's Infinity; Python's json gives an int float() cannot hold)
    for bad in (0, -5, "4000", True, float("inf"), float("nan"), 10**400):
        assert bootstrap_limits(oc({"bootstrapMaxChars": bad}), "main")[0] == 20_000
        own = {"bootstrapMaxChars": bad}
        assert bootstrap_limits(oc({"bootstrapMaxChars": 4000}, own), "main")[0] == 20_000
    own_null = {"bootstrapMaxChars": None}
    assert bootstrap_limits(oc({"bootstrapMaxChars": 4000}, own_null), "main")[0] == 4000
    assert bootstrap_limits(oc({"bootstrapMaxChars": 4000}, {"bootstrapMaxChars": 3000}),
                            "main")[0] == 3000  # fmt: skip
