"""A file batch's calls and hits, queued until its transaction commits, are the rows of writing
them at once: the same rows, in the same order (row ids), whatever the transactions' size,
with or without a bulk load; and a transaction that is undone takes its queued rows with it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memoryd.config import load_config, resolve_paths
from memoryd.ingest import ledger as ledger_module
from memoryd.ingest import ledger_batch, ledger_checkpoints, ledger_queue
from memoryd.ingest import scan as scan_module
from memoryd.store import Store
from support.corpus import CorpusTruth, generate
from support.scan_runs import NOW, ONE_PROCESS, write_config

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> CorpusTruth:
    root = tmp_path_factory.mktemp("queue-corpus")
    # Memory-heavy, two agents (a batch's agent and session are bound once a statement).
    return generate(
        root / "c",
        seed=4711,
        sessions=24,
        target_bytes=3_000_000,
        now=NOW,
        agents=("main", "ops"),
        call_every_bytes=5600,
    )


def rows_in_order(state: Path) -> dict[str, list[tuple[object, ...]]]:
    """hits in row-id order (their source by path), calls by key: what a scan wrote."""
    conn = sqlite3.connect(f"file:{state / 'state.db'}?mode=ro", uri=True)
    try:
        return {
            "hits": conn.execute(
                "SELECT h.id, h.agent, h.call_id, h.memory_path, h.kind, h.ts, h.query, h.score, "
                "h.start_line, h.end_line, h.session, s.path FROM hits h "
                "LEFT JOIN sources s ON s.id = h.source_id ORDER BY h.id"
            ).fetchall(),
            "calls": conn.execute("SELECT * FROM calls ORDER BY agent, call_id").fetchall(),
        }
    finally:
        conn.close()


def scan(tmp_path: Path, corpus: CorpusTruth, name: str, ingest: str) -> scan_module.ScanStats:
    cfg = write_config(tmp_path, corpus, name, ingest)
    paths = resolve_paths(load_config(cfg), {})
    with Store.open(paths.db) as store:
        return scan_module.Scanner(load_config(cfg), paths, store).scan()


def test_queued_rows_are_the_rows_written_at_once(corpus: CorpusTruth, tmp_path: Path) -> None:
    """Written in each batch's own write (as before the queue), queued for one commit of
    every 1 MB (the default here), for a batch and a commit of every 64 KB, and in a bulk
    load: the same rows in the same order, and the same counts, the generator's."""
    real_commit_file = ledger_module.Ledger.commit_file

    def at_once(self: ledger_module.Ledger, *args: object, **kw: object) -> None:
        real_commit_file(self, *args, **kw)  # type: ignore[arg-type]
        self._write_queued()  # (into the still open transaction, like the batch's own write)

    ways = {
        "at_once": ([(ledger_module.Ledger, "commit_file", at_once)], ONE_PROCESS),
        "queued": ([], ONE_PROCESS),
        "small_commits": ([(scan_module, "_COMMIT_CHUNKS", 1)], ONE_PROCESS),
        "bulk_load": ([(scan_module, "_BULK_LOAD_MIN_BYTES", 0)], ONE_PROCESS),
        "commit_by_time": ([(ledger_queue, "MAX_TRANSACTION_SECONDS", 0.0)], ONE_PROCESS),
    }
    written = {}
    for name, (patches, ingest) in ways.items():
        with pytest.MonkeyPatch.context() as mp:
            for target, attr, value in patches:
                mp.setattr(target, attr, value)
            stats = scan(tmp_path, corpus, name, ingest)
        assert stats.errors == 0
        assert stats.new_hits == corpus.total_hits, name
        written[name] = (stats.new_calls, rows_in_order(tmp_path / name))
    first = written["at_once"]
    assert len(first[1]["hits"]) == corpus.total_hits and first[0] == len(first[1]["calls"])
    assert all(w == first for w in written.values())


def test_no_transaction_of_a_scan_stays_open_longer_than_its_time_bound(
    corpus: CorpusTruth, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catch-up scan held its write transaction for 16 MB of input (128 MB in a bulk
    load), and a plugin hook's restore waited 2-4 s for it, past the hook's 800 ms. Now a
    transaction is committed once it has been open MAX_TRANSACTION_SECONDS as well: with
    the bound at 0 every write unit commits on its own (more commits than by bytes alone),
    and with it far away only the bytes decide; the rows are the same either way (above)."""
    commits = {}
    for name, bound in (("by_bytes", 1e9), ("by_time", 0.0)):
        monkeypatch.setattr(ledger_queue, "MAX_TRANSACTION_SECONDS", bound)
        cfg = write_config(tmp_path, corpus, name, ONE_PROCESS)
        paths = resolve_paths(load_config(cfg), {})
        with Store.open(paths.db) as store:
            scanner = scan_module.Scanner(load_config(cfg), paths, store)
            assert scanner.scan().new_hits == corpus.total_hits
            commits[name] = scanner.ledger.commits
    assert commits["by_time"] > 3 * commits["by_bytes"], commits


def test_an_undone_transaction_takes_its_queued_rows_with_it(
    corpus: CorpusTruth, tmp_path: Path
) -> None:
    """A write that fails in a transaction holding other files' queued batches undoes them
    all: none of their rows is written later in that transaction, none is counted, and the
    next scan reads those files again; the two scans count each hit once."""
    real_settle = ledger_checkpoints.SourceWrite.settle
    settled = 0

    def fail_the_fifth(self: ledger_checkpoints.SourceWrite, conn: sqlite3.Connection, *a: object):
        nonlocal settled
        settled += 1
        if settled == 5:  # the fifth file, in a group with the four before it
            raise sqlite3.OperationalError("a write of the fifth file failed")
        return real_settle(self, conn, *a)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ledger_checkpoints.SourceWrite, "settle", fail_the_fifth)
        first = scan(tmp_path, corpus, "failing", ONE_PROCESS)
    assert first.errors == 1
    in_db = rows_in_order(tmp_path / "failing")
    assert first.new_hits == len(in_db["hits"]) < corpus.total_hits  # what was written, only
    assert first.new_calls == len(in_db["calls"])
    again = scan(tmp_path, corpus, "failing", ONE_PROCESS)
    assert again.errors == 0
    assert first.new_hits + again.new_hits == corpus.total_hits
    clean = scan(tmp_path, corpus, "clean", ONE_PROCESS)
    both = rows_in_order(tmp_path / "failing")
    want = rows_in_order(tmp_path / "clean")
    # The same hits (a file undone in the first scan is read after the archive that holds
    # copies of some of its lines: those hits are the archive's copies, first come).
    assert sorted(h[1:4] for h in both["hits"]) == sorted(h[1:4] for h in want["hits"])
    assert both["calls"] == want["calls"]
    assert clean.new_hits == corpus.total_hits


def test_rows_written_early_in_a_transaction_are_undone_with_it_and_not_counted(
    corpus: CorpusTruth, tmp_path: Path
) -> None:
    """Queued rows are written before their commit by anything that must see them in the
    tables (a read of ``calls``, an archive's or a store's batch). When a later write of
    that transaction fails and undoes it (here the second agent's first file), the scan
    counts only what it recorded, and the two scans together count every hit once."""
    real_commit_file = ledger_module.Ledger.commit_file
    real_settle = ledger_checkpoints.SourceWrite.settle
    real_write_queued = ledger_module.Ledger._write_queued
    real_flush = ledger_module.Ledger.flush
    state = {"ops": False, "failed": False, "flushing": False, "early": False, "case": False}

    def write_queued(self: ledger_module.Ledger) -> None:
        if self._queued and not state["flushing"]:
            state["early"] = True  # written before its transaction's commit
        real_write_queued(self)

    def flush(self: ledger_module.Ledger) -> None:
        state["flushing"] = True
        try:
            real_flush(self)
        finally:
            state["flushing"] = state["early"] = False

    def commit_file(self: ledger_module.Ledger, batch: ledger_batch.Batch, *a: object):
        state["ops"] = state["ops"] or batch.cp.agent == "ops"
        return real_commit_file(self, batch, *a)  # type: ignore[arg-type]

    def fail_first_ops(self: ledger_checkpoints.SourceWrite, conn: sqlite3.Connection, *a: object):
        if state["ops"] and not state["failed"]:
            state["failed"], state["case"] = True, state["early"]
            raise sqlite3.OperationalError("a write of the second agent's first file failed")
        return real_settle(self, conn, *a)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ledger_module.Ledger, "commit_file", commit_file)
        mp.setattr(ledger_module.Ledger, "_write_queued", write_queued)
        mp.setattr(ledger_module.Ledger, "flush", flush)
        mp.setattr(ledger_checkpoints.SourceWrite, "settle", fail_first_ops)
        first = scan(tmp_path, corpus, "early", ONE_PROCESS)
    assert state["case"]  # rows of the undone transaction had been written before it failed
    assert first.errors == 1
    in_db = rows_in_order(tmp_path / "early")
    assert first.new_hits == len(in_db["hits"]) < corpus.total_hits
    assert first.new_calls == len(in_db["calls"])
    again = scan(tmp_path, corpus, "early", ONE_PROCESS)
    assert again.errors == 0
    assert first.new_hits + again.new_hits == corpus.total_hits
