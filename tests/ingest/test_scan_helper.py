"""A large backlog read by two processes gives exactly what one process gives.

``memoryd scan`` forks a helper that finds and parses the lines of the last
transcripts (and the unnamed answers of the calls made in them) while the parent
reads and commits the first ones. These tests cover:

- how the work is shared out (pure);
- the helper's own id searches, on hand-made regions;
- the protocol, property-tested: whatever the files hold and whichever the helper
  reads, the rows written are those of a one-process scan;
- a real forked helper on a generated corpus (``parallel_min_bytes = 1``): the state
  database compared row for row with a one-process scan and with the generator's
  reference; the helper killed, the parent killed, no descriptor for the pipe;
- a first large scan, which builds the hit indexes once at its end.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd import faults
from memoryd.config import load_config, resolve_paths
from memoryd.ingest import prescan
from memoryd.ingest import scan as scan_module
from memoryd.ingest.prescan import (
    HELPER_SHARE,
    OpenCalls,
    free_core,
    helper_share,
    prescan_region,
    search_open_calls,
)
from memoryd.ingest.tailer import Region
from memoryd.store import Store
from support import transcripts as tx
from support.corpus import CorpusTruth, generate
from support.daemon_harness import wait_until
from support.scan_runs import NOW, ONE_PROCESS, counts, env_for, memoryd, state_rows, write_config

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the helper is forked")

T = TypeVar("T")
HELPER_ALWAYS = '[ingest]\nparallel_min_bytes = 1\nchunk_bytes = 65536\nhelper = "always"\n'


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> CorpusTruth:
    root = tmp_path_factory.mktemp("helper-corpus")
    return generate(root / "c", seed=909, sessions=30, target_bytes=6_000_000, now=NOW)


# ------------------------------------------------------------------ sharing out the work


def test_the_helper_takes_a_suffix_near_its_share_of_the_bytes() -> None:
    pending = [5, 40, 10, 10, 20, 15, 0, 30, 25]  # MB, in scan order
    k = helper_share([p << 20 for p in pending], min_bytes=1)
    assert 0 < k < len(pending)
    taken = sum(pending[k:]) / sum(pending)
    assert abs(taken - HELPER_SHARE) <= max(pending) / sum(pending)


def test_no_helper_below_the_threshold_or_when_switched_off() -> None:
    pending = [8 << 20] * 4
    assert helper_share(pending, min_bytes=64 << 20) == len(pending)
    assert helper_share(pending, min_bytes=0) == len(pending)
    assert helper_share(pending, min_bytes=1) < len(pending)


def test_a_sliver_of_the_work_gets_no_helper() -> None:
    """With a cap on its files that leaves it only crumbs, no helper; without one, a
    dominant first file goes to the helper with the rest."""
    pending = [100 << 20] + [1] * 512
    assert helper_share(pending, min_bytes=1, max_files=256) == len(pending)
    assert helper_share(pending, min_bytes=1) == 0


def test_the_helper_takes_no_more_files_than_its_budget_read_or_not() -> None:
    """Files with nothing new (renamed, say) are opened too: they count."""
    pending = [8 << 20] + [0] * 500 + [8 << 20] * 3
    k = helper_share(pending, min_bytes=1, max_files=10)
    assert k == len(pending) or len(pending) - k <= 10


def test_one_dominant_file_goes_to_the_helper_whole() -> None:
    assert helper_share([1 << 20, 900 << 20], min_bytes=1) == 1
    assert helper_share([900 << 20, 1 << 20], min_bytes=1) == 0


def test_the_helper_takes_its_share_of_a_backlog_of_any_size() -> None:
    """No cap on its files (it opens them one at a time): 3,000 transcripts, 68 % of them."""
    pending = [1 << 20] * 3000
    k = helper_share(pending, min_bytes=1)
    assert abs((len(pending) - k) - HELPER_SHARE * len(pending)) <= 1


def test_a_helper_only_when_another_core_is_idle() -> None:
    """One core, or the others busy (now or over the last minute): no helper."""
    assert free_core(cpus=2, load_1min=0.2, runnable_now=1)
    assert free_core(cpus=8, load_1min=5.0, runnable_now=4)
    assert not free_core(cpus=1, load_1min=0.0, runnable_now=1)
    assert not free_core(cpus=2, load_1min=1.0, runnable_now=1)  # a spinner on the other core
    assert not free_core(cpus=2, load_1min=0.1, runnable_now=2)  # something runnable right now
    assert not free_core(cpus=4, load_1min=3.2, runnable_now=1)


# ------------------------------------------------------------------ the helper's id searches


def _region(lines: list[bytes]) -> Region:
    data = b"".join(lines)
    return Region(data, 1000, 1000 + len(data))


def _user_results(*blocks: tuple[str, dict]) -> bytes:
    """One Claude Code user line holding several unnamed results."""
    content = [
        {"type": "tool_result", "tool_use_id": cid, "content": json.dumps(payload)}
        for cid, payload in blocks
    ]
    return tx.dump({"type": "user", "message": {"role": "user", "content": content}})


def test_the_helper_finds_unnamed_answers_of_calls_made_in_its_file() -> None:
    """One line quotes an id, one answers two calls at once: both searches end there."""
    get = {"path": "memory/a.md", "text": "body"}
    lines = [
        tx.claude_call("toolu_a", "mcp__openclaw__memory_get", {"path": "memory/a.md"}),
        tx.claude_call("toolu_b", "mcp__openclaw__memory_get", {"path": "memory/b.md"}),
        tx.dump({"type": "note", "text": "still waiting for toolu_a"}),
        _user_results(("toolu_a", get), ("toolu_b", get)),
        tx.dump({"type": "note", "text": "toolu_a again"}),
    ]
    region = _region(lines)
    pre = prescan_region(region)
    calls = OpenCalls()
    for line in pre.lines:
        calls.note(line.parsed, line.end)
    found = search_open_calls(pre, region.data, calls)
    assert [s.call_id for s in found] == ["toolu_a"]  # toolu_b was answered by the same line
    (search,) = found
    assert search.start == pre.lines[0].end  # after the call's own line
    answer_begin = region.start + len(b"".join(lines[:3]))
    assert [line.begin for line in search.lines] == [answer_begin - len(lines[2]), answer_begin]
    assert search.stop == answer_begin + len(lines[3]) - 1  # the end of the answering line
    assert calls.open == {}


def test_an_answer_of_another_shape_does_not_end_the_helpers_search() -> None:
    """A search call's id answered with a memory_get payload is not its answer."""
    lines = [
        tx.claude_call("toolu_s", "mcp__openclaw__memory_search", {"query": "boat"}),
        _user_results(("toolu_s", {"path": "memory/a.md", "text": "body"})),
        tx.chatter(1),
    ]
    region = _region(lines)
    pre = prescan_region(region)
    calls = OpenCalls()
    for line in pre.lines:
        calls.note(line.parsed, line.end)
    (search,) = search_open_calls(pre, region.data, calls)
    assert search.stop == region.end  # looked to the end of the region
    assert len(search.lines) == 1
    assert "toolu_s" in calls.open


# ------------------------------------------------------------------ same result, two processes


def scan_process(cfg: Path) -> dict:
    """``memoryd scan --json`` as a process of its own: it forks its helper only when no other
    thread runs, which pytest's process cannot promise."""
    proc = subprocess.run(
        [sys.executable, "-m", "memoryd", "scan", "--json"],
        env=env_for(cfg), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_helper_scan_writes_exactly_what_a_one_process_scan_writes(
    corpus: CorpusTruth, tmp_path: Path
) -> None:
    helped = write_config(tmp_path, corpus, "helped", HELPER_ALWAYS)
    alone = write_config(tmp_path, corpus, "alone", ONE_PROCESS)
    got = scan_process(helped)
    want = scan_process(alone)
    assert got["helper_files"] > 0, "the helper did not run"
    assert want["helper_files"] == 0
    for key in ("files_read", "bytes_read", "new_hits", "new_calls", "malformed", "oversized"):
        assert got[key] == want[key], key
    assert state_rows(tmp_path / "helped") == state_rows(tmp_path / "alone")
    assert counts(helped) == corpus.counts(None)
    assert json.loads(memoryd(helped, "scan", "--json"))["new_hits"] == 0


def in_a_process_of_its_own(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` in a new Python started for it (spawned, not forked): its answer, or its
    exception raised here.

    A scan forks its helper only when no other thread runs (``can_fork``). ``memoryd scan`` is
    such a process; pytest's may not be (pytest-xdist's worker runs threads, and a fork there
    is what Python 3.12+ warns against: a lock held by another thread stays held in the
    child). The new process runs no other thread, so its scan forks as a real one does, and
    a test can still set faults in it by code (module-level functions, pickled by name).
    """
    with ProcessPoolExecutor(
        max_workers=1, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        return pool.submit(fn, *args).result(timeout=240)


def _scan(cfg: Path, store: Store | None = None) -> dict[str, int]:
    """A scan in this process, as ``memoryd scan`` runs it: ``can_fork`` decides for itself."""
    assert prescan.can_fork(), "another thread runs in the scan's process"
    paths = resolve_paths(load_config(cfg), {})
    with contextlib.ExitStack() as stack:
        if store is None:
            store = stack.enter_context(Store.open(paths.db))
        stats = scan_module.Scanner(load_config(cfg), paths, store).scan()
    return {"errors": stats.errors, "new_hits": stats.new_hits, "helper_files": stats.helper_files}


def scan_alone(cfg: Path, corpus: CorpusTruth, scenario: Callable[[Path], dict[str, int]]) -> dict:
    """``scenario(cfg)`` (a scan with its faults) in a process of its own; it must count exactly
    the reference, with no read error."""
    got = in_a_process_of_its_own(scenario, cfg)
    assert got["errors"] == 0
    assert got["new_hits"] == corpus.total_hits
    assert counts(cfg) == corpus.counts(None)
    return got


_forks: list[int] = []
_real_flatten, _real_fork = prescan._flatten, os.fork


def _killed_in_the_child(*args: object) -> object:
    os.kill(os.getpid(), signal.SIGKILL)
    return _real_flatten(*args)  # pragma: no cover - never reached


def _counting_fork() -> int:
    pid = _real_fork()
    if pid:
        _forks.append(pid)
    return pid


def _scan_with_the_helper_killed(cfg: Path) -> dict[str, int]:
    # (the process is this scan's alone, and ends with it: no patch to undo)
    prescan._flatten = _killed_in_the_child  # type: ignore[assignment]
    os.fork = _counting_fork
    return {**_scan(cfg), "forks": len(_forks)}


def test_when_the_helper_dies_the_scan_reads_its_share_itself(
    corpus: CorpusTruth, tmp_path: Path
) -> None:
    """The child is SIGKILLed before it answers: same counts, nothing read twice."""
    cfg = write_config(tmp_path, corpus, "state", HELPER_ALWAYS)
    got = scan_alone(cfg, corpus, _scan_with_the_helper_killed)
    assert got["forks"] == 1, "the helper was not started"
    assert got["helper_files"] == 0


def _state(pid: int) -> str:
    """The one-letter state of a process (``T`` when stopped), "" when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[0]


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


@pytest.mark.skipif(
    not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists(),
    reason="needs /proc/<pid>/task/<tid>/children to find the helper",
)
def test_sigkill_of_the_scan_while_its_helper_works_then_one_scan_is_exact(
    corpus: CorpusTruth, tmp_path: Path
) -> None:
    """The parent dies with a helper running: the helper goes away, nothing is lost."""
    cfg = write_config(tmp_path, corpus, "state", HELPER_ALWAYS)
    env = dict(os.environ, MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))
    # The scan stops itself (SIGSTOP) right after forking its helper: the test finds the
    # helper and kills the parent then, on any machine, without racing it.
    env["MEMORYD_FAULT"] = "scan.helper_started:1:stop"
    killed = 0
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "scan"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(lambda p=proc: p.poll() is not None or _state(p.pid) == "T")
        assert proc.poll() is None, "the scan ended without starting a helper"
        helpers = _children(proc.pid)
        assert helpers, "the helper was not started"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed += proc.returncode == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and Path(f"/proc/{helpers[0]}").exists():
            status = Path(f"/proc/{helpers[0]}/status").read_text(errors="replace")
            if "\nState:\tZ" in status:
                break  # exited; its zombie waits for init to reap it
            time.sleep(0.01)
        else:
            assert not Path(f"/proc/{helpers[0]}").exists(), "the helper outlived its parent"
    assert killed == 3, "every kill landed while a helper was running"
    del env["MEMORYD_FAULT"]
    final = json.loads(memoryd(cfg, "scan", "--json"))
    assert final["errors"] == 0
    assert counts(cfg) == corpus.counts(None)


# ------------------------------------------------------------------ the protocol, property-tested


class InProcessHelper:
    """What the forked helper answers, computed here without a fork: same code, same transport."""

    def __init__(self, jobs: list[prescan.Job], *, chunk_bytes: int, max_line_bytes: int) -> None:
        self._answers = [
            marshal.loads(marshal.dumps(prescan._flatten(job, chunk_bytes, max_line_bytes)))
            for job in jobs
        ]

    def next(self) -> object:
        return self._answers.pop(0)

    def close(self) -> None:
        pass


PATHS = ["MEMORY.md", "memory/a.md", "memory/b.md"]
STEP = st.one_of(
    st.tuples(
        st.just("call"), st.integers(0, 4), st.sampled_from(["search", "get"]), st.booleans()
    ),
    st.tuples(st.just("answer"), st.integers(0, 4), st.booleans(), st.booleans()),
    st.tuples(st.just("quote"), st.integers(0, 4)),
    st.tuples(st.just("multi"), st.integers(0, 4), st.integers(0, 4)),
    st.tuples(st.just("chatter"), st.integers(1, 25)),
    st.tuples(st.just("file"), st.integers(0, 2)),
)
FILE_NAMES = ["s1.jsonl", "2026-03-01T00-00-00.000Z_s2.jsonl", "other.jsonl"]


def _write_steps(sessions: Path, steps: list[tuple]) -> None:
    """Lines for the steps, spread over a session, its successor and another session."""
    files: list[list[bytes]] = [[tx.header("s1")], [], [tx.header("other")]]
    files[1].append(
        tx.dump(
            {
                "type": "session",
                "id": "s2",
                "timestamp": tx.iso(tx.T0),
                "parentSession": str(sessions / FILE_NAMES[0]),
            }
        )
    )
    tools: dict[int, str] = {}
    current = 0

    def payload(tool: str, k: int) -> dict:
        if tool == "search":
            return tx.search_payload([PATHS[k % 3], PATHS[(k + 1) % 3]])
        return {"path": PATHS[k % 3], "text": "body"}

    for step in steps:
        kind = step[0]
        out = files[current]
        if kind == "file":
            current = step[1]
        elif kind == "call":
            _, k, tool, claude = step
            tools[k] = tool
            name = f"memory_{tool}"
            if claude:
                args = {"query": f"q{k}"} if tool == "search" else {"path": PATHS[k % 3]}
                out.append(tx.claude_call(f"c{k}", f"mcp__openclaw__{name}", args))
            else:
                out.append(tx.call(f"c{k}", name, query=f"q{k}", path=PATHS[k % 3]))
        elif kind == "answer":
            _, k, named, right_shape = step
            tool = tools.get(k, "get")
            shape = tool if right_shape else ("get" if tool == "search" else "search")
            if named:
                out.append(tx.result(f"c{k}", payload(tool, k), tool=f"memory_{tool}"))
            else:
                out.append(tx.claude_result(f"c{k}", payload(shape, k)))
        elif kind == "quote":
            out.append(tx.dump({"type": "note", "text": f"about c{step[1]}"}))
        elif kind == "multi":
            _, k1, k2 = step
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": f"c{k}",
                    "content": json.dumps(payload(tools.get(k, "get"), k)),
                }
                for k in (k1, k2)
            ]
            out.append(tx.dump({"type": "user", "message": {"role": "user", "content": blocks}}))
        else:
            out.extend(tx.chatter(i) for i in range(step[1]))
    for i, (name, lines) in enumerate(zip(FILE_NAMES, files, strict=True)):
        path = sessions / name
        path.write_bytes(b"".join(lines))
        os.utime(path, ns=(1_700_000_000_000_000_000 + i * 10**9,) * 2)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(STEP, max_size=40), split=st.integers(0, 3), chunk=st.sampled_from([4096, 8192])
)
def test_prescans_from_the_helper_give_the_rows_of_a_one_process_scan(steps, split, chunk) -> None:
    """Calls and answers in any order, quoted ids, one line answering two calls, answers of
    the wrong shape, answers in a successor: whichever files the helper reads, the rows
    written are those of a one-process scan."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sessions, _, cfg_path = tx.make_install(root, PATHS)
        _write_steps(sessions, steps)
        base = cfg_path.read_text(encoding="utf-8")
        rows = []
        for helped in (False, True):
            cfg_path.write_text(
                f"{base}[ingest]\nchunk_bytes = {chunk}\nparallel_min_bytes = {int(helped)}\n"
                'helper = "always"\n',
                encoding="utf-8",
            )
            cfg = load_config(str(cfg_path))
            state = root / f"state-{helped}"
            state.mkdir()
            paths = resolve_paths(cfg, {})._replace(memoryd_dir=state, db=state / "state.db")
            with pytest.MonkeyPatch.context() as mp:
                if helped:
                    mp.setattr(scan_module, "Helper", InProcessHelper)
                    mp.setattr(scan_module, "can_fork", lambda: True)
                    mp.setattr(scan_module, "helper_share", lambda p, *_: min(split, len(p)))
                with Store.open(paths.db) as store:
                    stats = scan_module.Scanner(cfg, paths, store).scan()
            assert stats.helper_files == (3 - min(split, 3) if helped else 0)
            rows.append(state_rows(state))
        assert rows[0] == rows[1]


def test_a_first_large_scan_builds_the_hit_indexes_once_at_its_end(
    corpus: CorpusTruth, tmp_path: Path
) -> None:
    """Loaded without them (faster), the indexes exist afterwards and queries use them.

    (The 6 MB corpus is below the real threshold, which the test lowers.)
    """
    cfg = write_config(tmp_path, corpus, "state", "[ingest]\nchunk_bytes = 65536\n")
    paths = resolve_paths(load_config(cfg), {})
    with Store.open(paths.db) as store:
        dropped: list[bool] = []
        real_drop = store.drop_hit_indexes

        def drop() -> None:
            dropped.append(True)
            real_drop()

        store.drop_hit_indexes = drop  # type: ignore[method-assign]
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(scan_module, "_BULK_LOAD_MIN_BYTES", 1)
            stats = scan_module.Scanner(load_config(cfg), paths, store).scan()
        assert dropped == [True]
        assert stats.new_hits == corpus.total_hits
        names = {
            row[0]
            for row in store.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'hits'"
            )
        }
        assert {"hits_by_path_ts", "hits_by_ts"} <= names
        plan = " ".join(
            str(r[-1])
            for r in store.conn.execute(
                "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM hits WHERE ts >= 0"
            )
        )
        assert "hits_by_ts" in plan or "hits_by_path_ts" in plan
        # A second scan has hits already: it keeps the indexes as they are.
        dropped.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(scan_module, "_BULK_LOAD_MIN_BYTES", 1)
            scan_module.Scanner(load_config(cfg), paths, store).scan()
        assert dropped == []
    assert counts(cfg) == corpus.counts(None)


def test_a_writable_open_rebuilds_hit_indexes_a_killed_first_scan_left_out(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with Store.open(db) as store, store.transaction():
        store.drop_hit_indexes()  # as a first scan does before it is killed
    with Store.open(db, readonly=True) as store:
        assert not store.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'hits_by_ts'"
        ).fetchone()
    with Store.open(db) as store:
        have = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master")}
    assert {"hits_by_path_ts", "hits_by_ts"} <= have


def test_without_a_descriptor_for_the_pipe_the_scan_reads_everything_itself(
    corpus: CorpusTruth, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path, corpus, "state", HELPER_ALWAYS)
    assert scan_alone(cfg, corpus, _scan_without_a_pipe)["helper_files"] == 0


def _no_pipe() -> tuple[int, int]:
    raise OSError(24, "Too many open files")


def _scan_without_a_pipe(cfg: Path) -> dict[str, int]:
    os.pipe = _no_pipe
    return _scan(cfg)


def test_out_of_descriptors_while_handing_files_to_the_helper(
    corpus: CorpusTruth, tmp_path: Path
) -> None:
    """The helper takes the files opened so far; the rest are read here, in order."""
    cfg = write_config(tmp_path, corpus, "state", HELPER_ALWAYS)
    assert scan_alone(cfg, corpus, _scan_out_of_descriptors_at_the_third)["helper_files"] == 2


_opened: list[int] = []
_real_open = scan_module.Scanner._open


def _open_until_the_third(self: scan_module.Scanner, plan: object) -> None:
    _opened.append(1)
    if len(_opened) == 3:
        raise OSError(24, "Too many open files")
    _real_open(self, plan)  # type: ignore[arg-type]


def _scan_out_of_descriptors_at_the_third(cfg: Path) -> dict[str, int]:
    scan_module.Scanner._open = _open_until_the_third  # type: ignore[method-assign]
    return _scan(cfg)


def _open_descriptors() -> int:
    return len(os.listdir(f"/proc/{os.getpid()}/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="counts /proc/self/fd")
def test_a_backlog_of_many_transcripts_goes_to_the_helper_without_a_descriptor_each(
    tmp_path: Path,
) -> None:
    """300 transcripts (more than the 256 the helper once took at most): the helper reads its
    two thirds, the rows are a one-process scan's, and the scan never holds a descriptor per
    file (it opens one transcript at a time, as the helper does)."""
    many = generate(tmp_path / "c", seed=77, sessions=300, target_bytes=2_500_000, now=NOW)
    assert len(many.transcripts) > 256
    alone = write_config(tmp_path, many, "alone", ONE_PROCESS)
    memoryd(alone, "scan")
    cfg = write_config(tmp_path, many, "helped", HELPER_ALWAYS)
    got = in_a_process_of_its_own(_scan_counting_descriptors, cfg)
    assert got["errors"] == 0
    assert got["helper_files"] > 0.5 * len(many.transcripts)
    assert got["seen"] and got["most"] <= got["before"] + 3  # the pipe, a transcript, the journal
    assert state_rows(tmp_path / "helped") == state_rows(tmp_path / "alone")
    assert counts(cfg) == many.counts(None)


def _scan_counting_descriptors(cfg: Path) -> dict[str, int]:
    """The scan's descriptors before it and at most while it runs (at each batch)."""
    seen: list[int] = []
    with Store.open(resolve_paths(load_config(cfg), {}).db) as store:
        before = _open_descriptors()
        for point in ("scan.helper_started", "scan.batch"):
            faults.hook(point, lambda *_: seen.append(_open_descriptors()))
        got = _scan(cfg, store)
    return {**got, "before": before, "seen": len(seen), "most": max(seen, default=0)}


def test_a_file_replaced_after_it_was_judged_is_not_read_by_the_helper(
    corpus: CorpusTruth, tmp_path: Path
) -> None:
    """The helper opens each file by path: another file there (same name, new inode) is not
    the one judged, and the scan commits nothing of it; the next scan reads what is there."""
    cfg = write_config(tmp_path, corpus, "state", HELPER_ALWAYS)
    first = in_a_process_of_its_own(_scan_replacing_the_last_file_once_judged, cfg)
    replaced = [first["replaced"]]
    assert replaced[0] and first["helper_files"] > 0
    assert first["errors"] == 0
    paths = resolve_paths(load_config(cfg), {})
    new_inode = os.stat(replaced[0]).st_ino

    def inodes_recorded() -> set[int]:
        with Store.open(paths.db) as store:
            rows = store.conn.execute("SELECT ino FROM sources WHERE path = ?", (replaced[0],))
            return {row[0] for row in rows}

    assert new_inode not in inodes_recorded()  # judged as another file: nothing committed
    with Store.open(paths.db) as store:
        again = scan_module.Scanner(load_config(cfg), paths, store).scan()
    assert again.errors == 0
    assert new_inode in inodes_recorded()
    assert counts(cfg) == corpus.counts(None)


_replaced: list[str] = []
_real_start = scan_module.Scanner._start_helper


def _replace_the_last_file_once_judged(self, plans, split, stats):  # type: ignore[no-untyped-def]
    share = _real_start(self, plans, split, stats)
    last = [plan for plan in plans if plan.job is not None][-1].sf.path
    copy = Path(f"{last}.new")
    copy.write_bytes(Path(last).read_bytes())
    os.replace(copy, last)  # same bytes, another inode (made while the old one lived)
    _replaced.append(str(last))
    return share


def _scan_replacing_the_last_file_once_judged(cfg: Path) -> dict[str, object]:
    scan_module.Scanner._start_helper = _replace_the_last_file_once_judged  # type: ignore[method-assign]
    got = _scan(cfg)
    return {**got, "replaced": _replaced[0] if _replaced else ""}


def test_the_helper_tells_the_runs_turns_from_the_users(tmp_path: Path) -> None:
    """A backlog whose lines the forked helper found and parsed (its events sent as plain
    tuples): a cron job's and the heartbeat's lookups left out, the user's counted, as when
    the scanner reads the files itself (tests/ingest/test_run_turns.py)."""
    from support.run_turns import USERS_ONLY, session_lines
    from support.scanner_install import Install

    inst = Install(tmp_path, extra_config=HELPER_ALWAYS)
    for n in range(4):
        inst.append(f"s{n}.jsonl", b"".join(session_lines(f"f{n}c")))
    with pytest.MonkeyPatch.context() as mp:  # the helper takes all but the first file
        # (its answers computed without a fork, through the same transport: a fork is refused
        # where the test process runs threads, as it may among other tests)
        mp.setattr(scan_module, "Helper", InProcessHelper)
        mp.setattr(scan_module, "can_fork", lambda: True)
        mp.setattr(scan_module, "helper_share", lambda pending, *_: 1)
        stats = inst.scan()
    assert stats.helper_files == 3
    assert {p: n for p, n in inst.counts().items() if n} == {
        "MEMORY.md": 4 * USERS_ONLY["MEMORY.md"]
    }
