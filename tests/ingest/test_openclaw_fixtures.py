"""What the real OpenClaw wrote, counted by memoryd (issue 20).

The fixtures under ``tests/fixtures/openclaw/<version>/<scenario>/<NN>-<phase>/`` were
recorded by the live harness (``python -m tests.live record``, docs/openclaw-versions.md):
the real ``openclaw`` package driven by a scripted model, its state folder packed after each
phase, and the truth taken from the tool results OpenClaw sent back to the model. No Node is
needed here: each copy is unpacked and scanned by ``python -m memoryd``, which must give the
truth's hits per file for every agent, exit 0, and add nothing on a second scan; following
an install phase by phase (files rewritten in place, as OpenClaw does) must end with the
same counts. A fixture holding a hit made through a route memoryd does not read yet
(``check.KNOWN_GAPS``: Tool Search's ``tool_call``, code mode) is a strict expected failure
until the ``shapes`` branch lands.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from live import check, fixtures

SHAPES = "issue 20: shapes branch"
EMPTY_STORE = "issue 20: a 2026.7 agent database (no transcripts) is taken for a failed source"
ALL = fixtures.all_fixtures()


_SCANNED: dict[Path, tuple[dict[str, Any], check.Outcome]] = {}


def scanned(fx: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any],
                                                                         check.Outcome]:
    """A fixture unpacked and scanned twice by its own memoryd, once per test run (three
    tests read the same outcome)."""
    if fx not in _SCANNED:
        root = tmp_path_factory.mktemp("openclaw-fixture")
        truth = fixtures.unpack(fx, root / "copy")
        _SCANNED[fx] = truth, check.scan_copy(root / "copy", root / "md", truth["agents"])
    return _SCANNED[fx]


def _truth(fx: Path) -> dict[str, Any]:
    return json.loads((fx / "truth.json").read_text())


def _label(fx: Path) -> str:
    return str(fx.relative_to(fixtures.FIXTURES))


def _marks(needs_shapes: bool, fails_today: bool) -> list[Any]:
    """Strict expected failures for the known gaps (check.KNOWN_*): the mark goes away
    with the gap, and a fixture that passes while marked fails the run."""
    if needs_shapes:
        return [pytest.mark.xfail(strict=True, reason=SHAPES)]
    if fails_today:
        return [pytest.mark.xfail(strict=True, reason=EMPTY_STORE)]
    return []


def _params(items: list[Path], needs_shapes: Any) -> list[Any]:
    return [
        pytest.param(fx, id=_label(fx),
                     marks=_marks(needs_shapes(fx), check.scan_fails_today(_truth(fx))))
        for fx in items
    ]


def _scenarios() -> list[list[Path]]:
    by: dict[Path, list[Path]] = {}
    for fx in ALL:
        by.setdefault(fx.parent, []).append(fx)
    return [sorted(v) for _, v in sorted(by.items())]


def test_fixtures_are_there() -> None:
    """The recordings are committed: every version of docs/openclaw-versions.md has some."""
    versions = {fx.relative_to(fixtures.FIXTURES).parts[0] for fx in ALL}
    assert "2026.9.6" in versions, versions
    for fx in ALL:
        truth = _truth(fx)
        assert truth["hits"] and truth["calls"], fx
        assert (fx / "state.tar.xz").stat().st_size < 400_000, "keep fixtures small"


@pytest.mark.parametrize("fx", _params(ALL, lambda fx: check.expected_to_differ(_truth(fx))))
def test_counts_exactly_what_openclaw_returned(
        fx: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """One scan of the copy gives the truth's hits per file, per agent; scan exits 0 and
    a second scan adds nothing."""
    truth, outcome = scanned(fx, tmp_path_factory)
    assert outcome.problems(truth) == [], outcome.scan


@pytest.mark.parametrize("fx", [pytest.param(fx, id=_label(fx)) for fx in ALL])
def test_counts_exactly_the_routes_it_knows(
        fx: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Until every route is read (check.KNOWN_GAPS), the hits made through the others are
    still exact: none lost, none doubled, and none made up for the unknown routes."""
    truth, outcome = scanned(fx, tmp_path_factory)
    exit_code = not check.scan_fails_today(truth)  # (its own test above)
    assert outcome.problems(check.known_routes_only(truth), exit_code) == [], outcome.scan


def _apply_in_place(src: Path, dest: Path) -> None:
    """Make ``dest`` hold ``src``'s files, rewriting changed files in place (same inode,
    as OpenClaw writes its store) and removing the ones gone."""
    wanted = {p.relative_to(src) for p in src.rglob("*") if p.is_file()}
    for rel in sorted(wanted):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = (src / rel).read_bytes()
        if not target.exists() or target.read_bytes() != data:
            with target.open("r+b" if target.exists() else "wb") as out:
                out.write(data)
                out.truncate()
    for p in sorted(dest.rglob("*"), reverse=True):
        if p.is_file() and p.relative_to(dest) not in wanted:
            p.unlink()


@pytest.mark.parametrize("phases", [
    pytest.param(ph, id=_label(ph[0].parent),
                 marks=_marks(any(check.expected_to_differ(_truth(fx)) for fx in ph),
                              any(check.scan_fails_today(_truth(fx)) for fx in ph)))
    for ph in _scenarios()
])
def test_follows_an_install_phase_by_phase(phases: list[Path], tmp_path: Path) -> None:
    """One memoryd scanning after every phase of a recording (resets, deletes, compaction,
    Tool Search modes changing) ends with each phase's counts: nothing lost, nothing twice."""
    live = tmp_path / "live"
    for fx in phases:
        staged = tmp_path / "staged"
        shutil.rmtree(staged, ignore_errors=True)
        truth = fixtures.unpack(fx, staged)
        config = staged / "state" / "openclaw.json"
        config.write_text(config.read_text().replace(str(staged), str(live)))
        _apply_in_place(staged, live)
        outcome = check.scan_copy(live, tmp_path / "md", truth["agents"])
        assert outcome.problems(truth) == [], (fx.name, outcome.scan)


@pytest.mark.parametrize("fx", _params(
    ALL, lambda fx: _truth(fx).get("agent_schema") in check.KNOWN_WARNING_SCHEMAS))  # (schema 23)
def test_a_healthy_install_logs_no_warning(
        fx: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Nothing here needs the user's attention, so a scan says nothing on stderr."""
    _, outcome = scanned(fx, tmp_path_factory)
    warnings = [line for line in outcome.stderr.splitlines()
                if '"level":"warning"' in line or '"level":"error"' in line]
    assert warnings == []


FORK = fixtures.FIXTURES / "2026.9.6" / "shapes" / "03-fork-and-isolated-heartbeat"


def test_a_forked_subagent_is_credited_its_own_calls_and_not_its_parents(tmp_path: Path) -> None:
    """A forked subagent's transcript starts with copies of its parent's events: each hit
    stays with the session that made the call (one memoryd session per OpenClaw session key,
    the parent's and the child's apart), as the recording's truth says."""
    import sqlite3

    truth = fixtures.unpack(FORK, tmp_path / "copy")
    check.scan_copy(tmp_path / "copy", tmp_path / "md", truth["agents"])
    with sqlite3.connect(tmp_path / "md" / "state.db") as db:
        sessions_of: dict[str, set[str]] = {}
        for call_id, session in db.execute("SELECT DISTINCT call_id, session FROM hits"):
            sessions_of.setdefault(call_id, set()).add(session)
    made = {c["call_id"]: c["session_key"] for c in truth["calls"]
            if c["files"] and c["run"] is None}
    assert set(sessions_of) == set(made)
    assert all(len(s) == 1 for s in sessions_of.values()), sessions_of
    session_by_key: dict[str, set[str]] = {}
    for call_id, key in made.items():
        session_by_key.setdefault(key, set()).update(sessions_of[call_id])
    assert any(":subagent:" in key for key in session_by_key), "the recording has a fork"
    assert all(len(s) == 1 for s in session_by_key.values()), session_by_key
    assert len(set().union(*session_by_key.values())) == len(session_by_key)


@pytest.mark.parametrize("scenario", ["2026.9.6/runs", "2026.9.6/shapes", "2026.7.35/runs"])
def test_the_daemon_counts_a_recorded_install_and_logs_no_error(
    scenario: str, tmp_path: Path, daemons: list[Any]
) -> None:
    """The daemon over a recorded install, phase after phase, stopped between them (the
    copy's store files are rewritten whole, which no reader may watch: OpenClaw changes its
    store by transactions): it counts the truth, and its logs hold no warning or error."""
    from support.daemon_harness import DaemonProcess, Install, wait_until

    phases = sorted((fixtures.FIXTURES / scenario).iterdir())
    copy, md = tmp_path / "copy", tmp_path / "md"
    truth = fixtures.unpack(phases[0], copy)
    cfg = check.write_config(copy, md)
    inst = Install(tmp_path, copy / "state", copy, cfg, md / "state.db",
                   tmp_path / "jobs.log", tmp_path / "hooks")  # fmt: skip
    for n, phase in enumerate(phases):
        if n:
            daemons[-1].stop()
            truth = fixtures.unpack(phase, tmp_path / f"phase{n}")
            _apply_in_place(tmp_path / f"phase{n}", copy)
        daemon = DaemonProcess(inst=inst, fake_jobs=False)
        daemons.append(daemon)
        daemon.start()
        daemon.wait_event("daemon.ready")
        want = {a: {p: n for p, n in hits.items() if n} for a, hits in truth["hits"].items()}

        def counted(w: dict[str, dict[str, int]] = want) -> bool:
            got = {a: {p: n for p, n in check.hits_of(cfg, a).items() if n} for a in w}
            return got == w

        wait_until(counted, timeout=120)
    daemons[-1].check_alive()
    levels = ("warning", "error", "critical")
    loud = [e for d in daemons for e in d.logs() if e.get("level") in levels]
    assert loud == []
