"""Rules written in one place (docs/rules.md): read from the runtime's source with :mod:`ast`.

A batch label or a hit count written again in a second module drifts from the first the day
one of them changes: ``restore PATH`` would then miss an expire's moves, or ``status`` count
hits the way no other view does.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import memoryd
from memoryd.config import EXPIRE_POLICIES, ExpireConfig, ScheduleConfig
from memoryd.policy import candidates

pytestmark = pytest.mark.unit

ROOT = Path(memoryd.__file__).parent
LABELS = ("expire:", "organize:", "recall:", "retire:", "restore-on-demand:", "undo:")


def _strings(tree: ast.AST) -> list[str]:
    """Each string literal, and each f-string's leading literal part."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                out.append(first.value)
    return out


def _modules_with(match: re.Pattern[str]) -> set[str]:
    found = set()
    for path in ROOT.rglob("*.py"):
        if any(match.match(s) for s in _strings(ast.parse(path.read_text(encoding="utf-8")))):
            found.add(path.relative_to(ROOT).as_posix())
    return found


def test_journal_batch_labels_are_written_in_the_store_schema_only() -> None:
    # A label is "<command>:" followed by more label or nothing ("expire: KEEP" is prose).
    label = re.compile("(?:" + "|".join(map(re.escape, LABELS)) + r")(?! )")
    assert _modules_with(label) == {"store_schema.py"}


def test_hits_are_counted_by_hit_counts_only() -> None:
    count = re.compile(r"(?s).*\bCOUNT\(\*\)\s+FROM\s+hits\b")
    assert _modules_with(count) == {"hit_counts.py"}


def test_the_expire_defaults_are_the_schemas() -> None:
    defaults = ExpireConfig()
    assert defaults.policy == candidates.DEFAULT_POLICY
    assert candidates.Seed().params() == {
        "min_age_days": defaults.min_age_days,
        "window_days": defaults.window_days,
        "max_hits": defaults.max_hits,
    }
    assert set(EXPIRE_POLICIES) <= set(candidates.POLICY_NAMES)
    cron = re.compile(re.escape(ScheduleConfig().expire) + "$")
    assert _modules_with(cron) == {"config/schema.py"}
