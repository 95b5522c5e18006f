"""memoryd's clock seam (``MEMORYD_NOW``, ``MEMORYD_CLOCK_OFFSET``, ``MEMORYD_CLOCK_OFFSET_FILE``):
whatever the text, a reading is a time every date computation can take, or a ``ValueError``
(which the command line turns into one line and exit 2); an offset file that would put a
running daemon's clock out of range is ignored with one warning (issue 23, item 3)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memoryd import clock
from memoryd.timerules import local_midnight

FAR_EAST = ZoneInfo("Pacific/Kiritimati")  # UTC+14: the far edge of the zones

# What an environment variable can hold: no NUL, no lone surrogate.
env_text = st.text(
    st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=40
)
# The edges of the range: each is always tried (an @example), not left to the draw.
EDGES = ("1e20", "1e308", "-62135596800", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z")
instants = st.one_of(
    env_text,
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
    st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    st.sampled_from(EDGES),
)


def _with_edges(test):  # (the edges as @example(text=...), one each)
    for edge in EDGES:
        test = example(text=edge)(test)
    return test


@_with_edges  # 200 draws (400 before): the edges are always tried, not left to the draw
@settings(max_examples=200, deadline=None)
@given(text=instants)
def test_a_pinned_clock_reads_in_range_or_is_refused(text: str) -> None:
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("MEMORYD_NOW", text)
            env.delenv("MEMORYD_CLOCK_OFFSET", raising=False)
            now = clock.now()
    except ValueError as exc:
        assert "$MEMORYD_NOW" in str(exc) and "\n" not in str(exc)
        return
    if not text.strip():
        return  # empty: not pinned, the real clock
    assert clock.EARLIEST <= now <= clock.LATEST
    assert clock.iso(now) is not None
    local_midnight(now, FAR_EAST)  # a local date exists for it, at the far edge of the zones


@settings(max_examples=200, deadline=None)
@given(shift=st.one_of(st.floats(), env_text))
def test_an_offset_reads_in_range_or_is_refused(shift: float | str) -> None:
    try:
        with pytest.MonkeyPatch.context() as env:
            env.delenv("MEMORYD_NOW", raising=False)
            env.setenv("MEMORYD_CLOCK_OFFSET", str(shift))
            now = clock.now()
    except ValueError as exc:
        assert "$MEMORYD_CLOCK_OFFSET" in str(exc)
        return
    assert math.isfinite(now) and clock.EARLIEST <= now <= clock.LATEST
    assert clock.iso(now) is not None


@pytest.fixture
def offset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file MEMORYD_CLOCK_OFFSET_FILE names, the clock's only offset."""
    path = tmp_path / "offset"
    monkeypatch.delenv("MEMORYD_NOW", raising=False)
    monkeypatch.delenv("MEMORYD_CLOCK_OFFSET", raising=False)
    monkeypatch.setenv("MEMORYD_CLOCK_OFFSET_FILE", str(path))
    return path


def test_an_offset_file_out_of_range_keeps_the_last_offset_and_warns_once(
    offset: Path, caplog: pytest.LogCaptureFixture
) -> None:
    offset.write_text("86400")
    assert clock.now() == pytest.approx(time.time() + 86400, abs=5)
    for wild in ("1e20", "1e20", "-1e20"):
        offset.write_text(wild)
        assert clock.now() == pytest.approx(time.time() + 86400, abs=5), "the last good offset"
        assert clock.now() == pytest.approx(time.time() + 86400, abs=5)
    warnings = [r for r in caplog.records if r.getMessage() == "clock.offset_ignored"]
    assert len(warnings) == 2, "once per refused value, not at every reading"
    assert warnings[0].levelname == "WARNING" and "'1e20'" in warnings[0].text
    offset.write_text("0")
    assert clock.now() == pytest.approx(time.time(), abs=5)


def test_an_offset_file_read_while_it_is_rewritten_keeps_the_last_offset(offset: Path) -> None:
    """A test moves a running daemon's clock by rewriting the file (truncate, then write):
    read between the two, the file is empty, and the clock stepped back to the real time
    and then forward again, a gap the daemon answered with a catch-up run at the wrong time
    (tests/service/test_daemon_footprint.py waited 120 s for jobs that had run already)."""
    offset.write_text("93600")
    assert clock.now() == pytest.approx(time.time() + 93600, abs=5)
    offset.write_text("")  # (the moment between the truncation and the write)
    assert clock.now() == pytest.approx(time.time() + 93600, abs=5)
    offset.write_text("0")
    assert clock.now() == pytest.approx(time.time(), abs=5)
