"""Promotion rules (seed 004) and the categories given to candidates."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoryd.config import PromoteConfig
from memoryd.policy.promote import classify, decide
from memoryd.signals import DAY, Hit, file_signals
from memoryd.workspace import MemoryFile

NOW = datetime(2026, 11, 3, 12, tzinfo=UTC).timestamp()
CFG = PromoteConfig()


def _sig(hit_ages: list[float], rel: str = "memory/topic.md"):
    hits = [Hit(NOW - a * DAY, f"query {i % 2}", f"c{i}") for i, a in enumerate(hit_ages)]
    return file_signals(MemoryFile(rel, 10, NOW - 90 * DAY), hits, NOW)


@pytest.mark.parametrize(
    ("ages", "candidate", "rule"),
    [
        ([1, 2, 3], True, "3 hits in 7 days"),
        ([1, 2], False, None),
        ([8, 9, 10, 11, 12], True, "5 hits in 14 days"),
        ([8, 9, 10, 11], False, None),
        ([20, 30, 40, 50, 60, 70, 80, 90], True, "8 hits in total"),
        ([20, 30, 40, 50, 60, 70, 80], False, None),
    ],
)
def test_each_threshold_nominates_on_its_own(ages: list[float], candidate: bool, rule) -> None:
    d = decide(_sig(ages), "text", CFG, marked=False, promoted=False)
    assert d.candidate is candidate
    if rule:
        assert any(r.startswith(rule) for r in d.rules)


def test_marks_promoted_and_long_term() -> None:
    assert decide(_sig([]), "x", CFG, marked=True, promoted=False).rules == ("marked by the user",)
    d = decide(_sig([1, 2, 3, 4]), "x", CFG, marked=True, promoted=True)
    assert not d.candidate and "promoted before" in d.reason
    d = decide(_sig([1, 2, 3, 4], rel="MEMORY.md"), "x", CFG, marked=False, promoted=False)
    assert not d.candidate and d.reason == "already long-term memory"


def test_candidates_carry_their_evidence() -> None:
    d = decide(_sig([1, 2, 3, 4]), "Prefers oat milk.", CFG, marked=False, promoted=False)
    assert d.candidate and d.category == "preference-or-fact"
    assert dict(d.queries) == {"query 0": 2, "query 1": 2}
    assert d.numbers["hits_7d"] == 4 and d.numbers["distinct_days"] == 4


def test_classification_rules() -> None:
    assert classify("```sh\nmake\n```")[0] == "skill"
    assert classify("1. grind\n2. tamp\n3. pull\n")[0] == "skill"
    assert classify("Run it:\n$ openclaw gateway\n")[0] == "skill"
    assert classify("部署流程：先备份")[0] == "skill"
    assert classify("# Heading only\nSome story about a boat.")[0] == "needs-review"
    assert classify("用户喜欢深烘焙咖啡")[0] == "preference-or-fact"
    assert classify("She always takes the window seat.")[0] == "preference-or-fact"
    assert classify("- name: Alice\n- city: Taipei\n- role: designer\n")[0] == "preference-or-fact"
