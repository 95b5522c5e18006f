"""The recordings of the real OpenClaw, by route: memoryd's calls per route are the truth's.

``tests/ingest/test_openclaw_fixtures.py`` checks the hits per file; this checks what
``scan --json`` says of the calls: as many ``direct``, ``tool_call`` and ``code`` calls as
OpenClaw made (the truth's ``route`` of each memory call), and no shape left unrecognised in a
healthy install.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from live import check, fixtures


@pytest.mark.parametrize(
    "fx", fixtures.all_fixtures(), ids=lambda fx: str(fx.relative_to(fixtures.FIXTURES))
)
def test_calls_by_route_are_the_truths_and_nothing_is_unrecognised(fx: Path, tmp_path: Path):
    truth = fixtures.unpack(fx, tmp_path / "copy")
    outcome = check.scan_copy(tmp_path / "copy", tmp_path / "md", truth["agents"])
    want = Counter(call["route"] for call in truth["calls"])
    got = outcome.scan["calls_by_route"]
    assert got == {route: want.get(route, 0) for route in ("direct", "tool_call", "code")}
    assert outcome.scan["unrecognised"] == 0, outcome.scan.get("unrecognised_example")
