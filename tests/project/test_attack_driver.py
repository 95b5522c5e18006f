"""The issue-30 attack driver (``tests/attack/attack_30.py``, run by hand: minutes) stays
runnable: three of its quick cases, as a user runs it, on fresh demo installs. The whole
attack and its table: docs/attack.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]


def test_the_attack_driver_runs_its_quick_cases_and_finds_no_fault(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env["TMPDIR"] = str(tmp_path)
    cases = ["restore_after_recall", "symlink_hot", "utf8_argv"]
    out = subprocess.run(
        [sys.executable, "-m", "tests.attack.attack_30", "--json", str(tmp_path / "r.json"),
         *[a for c in cases for a in ("--only", c)]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    results = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert [r["case"] for r in results] == cases and all(r["ok"] for r in results), results
    assert "3 of 3 cases ok" in out.stdout
    assert not list(tmp_path.glob("memoryd-attack30-*"))  # it cleans up after itself
