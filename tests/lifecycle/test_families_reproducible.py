"""Every family of generated histories is a pure function of its seed in any process: the
figures in docs/decisions.md are replays of them, and a family whose hits hang on the order
of a set of strings (Python randomises string hashes per process) gives other figures at
every run. Family E did, until its engine met the notes of a query's words in sorted order."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

TESTS = Path(__file__).resolve().parents[1]
DIGEST = """
import hashlib, sys
from support.histories import generate
from support.histories_b import generate_b
from support.histories_c import generate_c
from support.histories_d import generate_d
from support.histories_e import generate_e
for make in (generate, generate_b, generate_c, generate_d, generate_e):
    h = make(3)
    facts = repr([(x.path, x.ts, x.kind, x.query, x.score) for x in h.hits])
    facts += repr([(f.path, f.text, f.needs) for f in h.files])
    print(make.__name__, hashlib.sha256(facts.encode()).hexdigest())
"""


def _digests(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(TESTS)}
    out = subprocess.run([sys.executable, "-c", DIGEST], env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_each_family_gives_the_same_history_whatever_the_string_hashes() -> None:
    first, second = _digests("1"), _digests("2")
    assert first.count("\n") == 5
    assert first == second
