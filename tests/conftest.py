"""Shared test set-up: the test helpers folder on sys.path, a clean environment, test kinds.

Every test module has a kind (:data:`KINDS`, or its own ``pytestmark``): ``unit`` tests
run in the pytest process, ``subprocess`` tests run memoryd end to end (the command, in the
pytest process through :mod:`support.inprocess` or as a child, or the daemon as a real child
process), ``crash`` tests kill or fault one mid-write and check what survives. The
last two are also ``slow``: ``pytest -m "not slow"`` runs the unit tests in seconds. A
unit test that starts a process fails, so the table cannot drift from what tests do.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from support.daemon_harness import DaemonProcess, NotifySocket  # found through the path above

# Tests never see the developer's own OpenClaw install or memoryd config.
for var in (
    "OPENCLAW_STATE_DIR",
    "CLAWDBOT_STATE_DIR",
    "OPENCLAW_HOME",
    "OPENCLAW_CONFIG_PATH",
    "OPENCLAW_PROFILE",
    "MEMORYD_CONFIG",
    "MEMORYD_NOW",
    "MEMORYD_CLOCK_OFFSET",
    "NOTIFY_SOCKET",
):
    os.environ.pop(var, None)


# ------------------------------------------------------------------------ where test files go

RAM_ROOT = Path("/dev/shm")
RAM_NEEDED = 4 << 30  # free bytes the RAM file system must have (a whole run writes < 1 GB)


def _ram_temp_root() -> Path | None:
    """A folder in RAM for every file the tests write, when this machine has one to spare.

    SQLite commits and the mover's moves are fsynced, and an fsync on a shared disk costs
    milliseconds (5 ms measured here with other suites running): thousands of them were a
    large part of the suite's wall time. On tmpfs an fsync is free, and the files are as real
    (same system calls, inotify, locks, renames). ``MEMORYD_TEST_TMP`` names another folder;
    ``MEMORYD_TEST_TMP=`` (empty) keeps the system's temporary folder.
    """
    chosen = os.environ.get("MEMORYD_TEST_TMP")
    if chosen is not None:
        return Path(chosen) if chosen else None
    try:
        mounts = Path("/proc/mounts").read_text(encoding="utf-8", errors="replace")
        on_tmpfs = any(
            line.split()[1:3] == [str(RAM_ROOT), "tmpfs"] for line in mounts.splitlines()
        )
        st = os.statvfs(RAM_ROOT)
    except (OSError, IndexError):
        return None
    if not on_tmpfs or st.f_bavail * st.f_frsize < RAM_NEEDED or not os.access(RAM_ROOT, os.W_OK):
        return None
    return RAM_ROOT / "memoryd-tests"


def _use_temp_root(root: Path | None) -> None:
    """tmp_path, tempfile and every child process (``$TMPDIR``) write below ``root``."""
    if root is None:
        return
    root.mkdir(mode=0o1777, parents=True, exist_ok=True)
    tempfile.tempdir = str(root)
    os.environ["TMPDIR"] = str(root)


_use_temp_root(_ram_temp_root())


def pytest_report_header() -> str:
    return f"test files in {tempfile.gettempdir()} (tests/conftest.py, MEMORYD_TEST_TMP)"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with its memory/ folder, for the mover's tests."""
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    return root


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Any]:
    """A fresh state database (a module may define its own ``store``, which wins)."""
    from memoryd.store import Store

    s = Store.open(tmp_path / "state" / "state.db")
    yield s
    s.close()


@pytest.fixture
def notify() -> Iterator[NotifySocket]:
    """A notify socket of the test's own, standing in for systemd's."""
    sock = NotifySocket()
    yield sock
    sock.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the test, for fixtures that say more when it failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def daemons(request: pytest.FixtureRequest) -> Iterator[list[DaemonProcess]]:
    """Daemons a test starts; each is stopped (and killed if need be) afterwards. When the
    test failed, the end of each daemon's log is printed (CI shows it with the failure: a
    timing failure on a loaded machine is otherwise not understood)."""
    started: list[DaemonProcess] = []
    yield started
    report = getattr(request.node, "report_call", None)
    for d in started:
        if report is not None and report.failed and d.log_path is not None:
            tail = d.log_path.read_text(encoding="utf-8", errors="replace")[-6000:]
            sys.stderr.write(f"\n--- the end of {d.log_path.name} ---\n{tail}\n")
        d.cleanup()


@pytest.fixture(autouse=True)
def _no_fault_hooks_left() -> Iterator[None]:
    """A fault hook a test sets (``memoryd.faults``) never reaches the next test."""
    from memoryd import faults

    yield
    faults.clear()


# ------------------------------------------------------------------------ test kinds

# Each test module's kind. A module may declare its own with ``pytestmark = pytest.mark.<kind>``
# instead; a module in neither place counts as ``subprocess`` (slow) and is named in the summary.
KINDS: dict[str, str] = {
    # in-process: pure decisions, parsers, real files and SQLite, no child process
    "test_ingest": "unit",
    "test_progress": "subprocess",
    "test_rough_edges": "subprocess",
    "test_tool_search": "unit",
    "test_logging": "unit",
    "test_parser": "unit",
    "test_retire_swap": "unit",
    "test_promote_carried": "unit",
    "test_run_turns": "unit",
    "test_policy_expire": "unit",
    "test_policy_promote": "unit",
    "test_policy_score": "unit",
    "test_signals": "unit",
    "test_tiers": "unit",
    "test_cron": "unit",
    "test_read_plans": "unit",
    "test_explain_one_file": "unit",  # (its one run of memoryd is marked subprocess)
    "test_explain_pruned": "unit",  # (its runs of memoryd are marked subprocess)
    "test_bulk_load": "unit",
    "test_ledger": "unit",
    "test_fsutil": "unit",
    "test_histories_b": "unit",
    "test_histories_c": "unit",
    "test_histories_d": "unit",
    "test_histories_e": "unit",
    "test_calibration": "unit",
    "test_clock": "unit",
    "test_live_harness": "unit",  # the live harness's model and truth (no Node)
    # memoryd end to end: the command (tests/support/inprocess.py, or a child) or the daemon
    "test_cli": "subprocess",
    "test_config": "subprocess",
    "test_json5_common": "unit",
    "test_fidelity": "subprocess",
    "test_corpus_truth": "subprocess",
    "test_fastpath": "subprocess",
    "test_daemon": "subprocess",
    "test_daemon_jobs": "subprocess",
    "test_laptop": "subprocess",
    "test_daemon_signals": "subprocess",
    "test_daemon_state_gone": "subprocess",
    "test_daemon_footprint": "subprocess",
    "test_first_hour": "subprocess",
    "test_gist": "subprocess",
    "test_hits_command": "subprocess",
    "test_lifecycle": "subprocess",
    "test_notify": "subprocess",
    "test_rails": "subprocess",
    "test_recall": "subprocess",
    "test_restore_on_demand": "subprocess",
    "test_restore_on_read": "unit",
    "test_archive_indexed": "unit",
    "test_restore_on_search": "unit",  # in-process commands and scans, real files and SQLite
    "test_decisions_agree": "unit",  # its two runs of memoryd are in-process
    "test_chance_shown": "unit",  # its runs of memoryd are in-process
    "test_service_files": "subprocess",
    "test_simulate": "subprocess",
    "test_store_sources": "subprocess",
    "test_tiers_organize": "subprocess",
    "test_undecodable_names": "subprocess",
    "test_startup": "subprocess",
    "test_store_reader": "subprocess",
    "test_store_daemon": "subprocess",
    "test_faults_reported": "subprocess",
    "test_openclaw_fixtures": "subprocess",  # recordings of the real OpenClaw (issue 20)
    "test_fixture_routes": "subprocess",  # the same, calls by route (issue 20)
    # a process killed or faulted mid-write, then what survives is checked
    "test_crash_scan": "crash",
    "test_daemon_crash": "crash",
    "test_lifecycle_crash": "crash",
    "test_mover": "crash",
    "test_mover_races": "crash",
    "test_restore_semantics": "crash",
    "test_scan_helper": "crash",
    "test_store_faults": "crash",
    "test_tiers_crash": "crash",
    "test_soak": "crash",
    "test_lock": "crash",
}
KIND_MARKERS = ("unit", "subprocess", "crash")
SLOW_KINDS = ("subprocess", "crash")
_unlisted: set[str] = set()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with its module's kind, and ``slow`` for the kinds that spawn processes."""
    for item in items:
        own = [m.name for m in item.iter_markers() if m.name in KIND_MARKERS]
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else item.nodeid
        kind = own[0] if own else KINDS.get(module)
        if kind is None:
            if module not in _unlisted:  # (a warning also reaches the summary under -n 2)
                item.warn(pytest.PytestWarning(f"{module} has no kind: add it to KINDS"))
            _unlisted.add(module)
            kind = "subprocess"
        if not own:
            item.add_marker(getattr(pytest.mark, kind))
        if kind in SLOW_KINDS:
            item.add_marker(pytest.mark.slow)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m "not slow"``, a module whose every test is slow is not even imported.

    Importing it only to deselect every test costs the fast run its largest share where
    bytecode is not cached (``PYTHONDONTWRITEBYTECODE``, a fresh checkout): pytest rewrites
    the asserts of each module it imports, about 4 s for the 70 slow modules on a busy
    machine. A module is skipped only when its kind is slow (in :data:`KINDS`, or its own
    ``pytestmark``) and no test in it is marked ``unit`` of its own.
    """
    if config.getoption("markexpr", "") != "not slow" or collection_path.suffix != ".py":
        return None
    name = collection_path.stem
    if not name.startswith("test_"):
        return None
    try:
        source = collection_path.read_text(encoding="utf-8")
    except OSError:
        return None  # pytest will say what is wrong with it
    if "mark.unit" in source:
        return None
    declared = [k for k in KIND_MARKERS if f"\npytestmark = pytest.mark.{k}\n" in source]
    kind = declared[0] if declared else KINDS.get(name)
    return True if kind in SLOW_KINDS else None


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _unlisted:
        terminalreporter.write_line(
            "test modules with no kind (run as slow; add them to KINDS in tests/conftest.py): "
            + ", ".join(sorted(_unlisted)),
            yellow=True,
        )


# Process starts, seen through the interpreter's audit events (PEP 578): a unit test must not.
_SPAWN_EVENTS = frozenset(
    {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.system", "os.exec"}
)
_spawned: list[str] | None = None  # set while a unit test runs


def _watch_spawns(event: str, args: tuple[Any, ...]) -> None:
    if _spawned is not None and event in _SPAWN_EVENTS:
        _spawned.append(event)


sys.addaudithook(_watch_spawns)


@pytest.fixture(autouse=True)
def _unit_tests_start_no_process(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test of the ``unit`` kind that starts a process belongs to another kind."""
    global _spawned
    if request.node.get_closest_marker("unit") is None:
        yield
        return
    _spawned = []
    try:
        yield
        seen = _spawned
    finally:
        _spawned = None
    if seen:
        pytest.fail(
            f"a unit test started a process ({', '.join(sorted(set(seen)))}): "
            "give its module another kind in tests/conftest.py"
        )


@pytest.fixture(autouse=True)
def _transactions_bounded_by_bytes_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process scans commit by their bytes alone: the 0.25 s bound (a hook beside a long
    scan) would make the tests that count a scan's transactions depend on the machine's
    load. The tests of that bound set it themselves; child processes keep it."""
    from memoryd.ingest import ledger_queue

    monkeypatch.setattr(ledger_queue, "MAX_TRANSACTION_SECONDS", 1e9)

