"""Tool-call ids a provider reuses every turn (``call_0``, ``memory_search_0``), end to end.

Such a call is kept per occurrence (``<id>#<ms>``, see :mod:`memoryd.ingest.calls`); the
transcript still writes the plain id. These tests read real files and a real SQLite store
with the real scanner, as test_ingest does, with the shapes OpenClaw writes (the message's
own ``timestamp`` in ms).
"""

from __future__ import annotations

import json
import os

import pytest

from support import transcripts as tx
from support.scanner_install import FILES, Install, insert_events, openclaw_db
from support.transcripts import timed

pytestmark = pytest.mark.subprocess  # the helper is a forked process

HELPER_ALWAYS = '[ingest]\nparallel_min_bytes = 1\nchunk_bytes = 4096\nhelper = "always"\n'
ONE_PROCESS = "[ingest]\nparallel_min_bytes = 0\nchunk_bytes = 4096\n"


def turns(call_id: str, n: int, *, named: bool) -> list[bytes]:
    """``n`` turns, each a ``memory_get`` of another file under the same ``call_id``."""
    lines = [tx.header("s")]
    for turn in range(n):
        t = tx.T0 + 60 * turn
        lines.append(timed(tx.call(call_id, tool="memory_get", path=FILES[turn], ts=t), t))
        lines += [tx.chatter(turn * 10 + k, ts=t) for k in range(3)]
        payload = {"path": FILES[turn], "text": "body"}
        tool = "memory_get" if named else None
        lines.append(timed(tx.result(call_id, payload, ts=t + 1, tool=tool), t + 1))
    return lines


def want(n: int) -> dict[str, int]:
    return {FILES[i]: 1 for i in range(n)}


@pytest.mark.parametrize("config", [ONE_PROCESS, HELPER_ALWAYS], ids=["one", "helper"])
@pytest.mark.parametrize("call_id", ["call_0", "memory_get_0"])
@pytest.mark.parametrize("named", [True, False], ids=["named", "unnamed"])
def test_each_turn_of_a_reused_id_counts_once_in_a_file(tmp_path, config, call_id, named):
    """An answer that names no tool is found by its call's id as the file writes it (the
    plain id, not the occurrence memoryd keeps it under), in the scan or in the helper."""
    if config is HELPER_ALWAYS and not hasattr(os, "fork"):
        pytest.skip("the helper is forked")
    inst = Install(tmp_path, extra_config=config)
    inst.append("s.jsonl", b"".join(turns(call_id, 4, named=named)))
    inst.scan()
    assert inst.counts() == want(4)
    inst.store.close()


@pytest.mark.parametrize("named", [True, False], ids=["named", "unnamed"])
def test_a_reused_id_answered_in_a_later_scan(tmp_path, named):
    """Call read in one scan, its answer (naming no tool) in the next, after a restart."""
    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    lines = turns("call_0", 3, named=named)
    for line in lines:
        inst.append("s.jsonl", line)
        inst.scan()
        inst.restart()
    assert inst.counts() == want(3)
    inst.store.close()


@pytest.mark.parametrize("named", [True, False], ids=["named", "unnamed"])
def test_a_reused_id_in_the_sqlite_store(tmp_path, named):
    """The store's rows: the prefilter looks for a waiting call by its plain id."""
    inst = Install(tmp_path)
    _db, conn = openclaw_db(inst)
    lines = turns("call_0", 3, named=named)
    insert_events(conn, "sA", lines[:7])
    inst.scan()
    insert_events(conn, "sA", lines[7:], first_seq=7)
    inst.scan()
    assert inst.counts() == want(3)
    conn.close()
    inst.store.close()


def parallel_turn(
    ids: list[str], t: float, first_file: int, *, answered: bool = True
) -> list[bytes]:
    """One assistant message asking ``memory_get`` under each of ``ids``, then (unless not
    ``answered``: the turn was aborted) each answer, naming no tool, in reverse order."""
    blocks = [
        {
            "type": "toolCall",
            "id": cid,
            "name": "memory_get",
            "arguments": {"path": f"n{first_file + i}.md"},
        }
        for i, cid in enumerate(ids)
    ]
    msg = {"role": "assistant", "content": blocks, "timestamp": int(t * 1000)}
    lines = [tx.dump({"type": "message", "timestamp": tx.iso(t), "message": msg})]
    lines += [tx.chatter(k, ts=t) for k in range(40)]  # the answers come regions later
    if answered:
        for i, cid in reversed(list(enumerate(ids))):
            payload = {"path": f"memory/deep/n{first_file + i}.md", "text": "body"}
            lines.append(timed(tx.result(cid, payload, ts=t + 1, tool=None), t + 1))
    return lines


@pytest.mark.parametrize("prefix", ["call_", "t", "functions.memory_get:"])
@pytest.mark.parametrize("n_calls", [2, 20])  # a search per id; one pass for many
def test_parallel_reused_ids_answered_out_of_order(tmp_path, prefix, n_calls):
    """Many calls in flight under numbered ids, answered out of order and naming no tool;
    the next turn reuses every id; a turn before them was aborted (never answered)."""
    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    sep = "" if prefix.endswith((":", "_")) else "_"
    ids = [f"{prefix}{sep}{i}" for i in range(n_calls)]
    lines = [tx.header("p")]
    lines += parallel_turn(ids, tx.T0, 0, answered=False)
    lines += parallel_turn(ids, tx.T0 + 60, 0)
    lines += parallel_turn(ids, tx.T0 + 120, n_calls)
    inst.append("p.jsonl", b"".join(lines))
    inst.scan()
    assert inst.counts() == {f"memory/deep/n{i}.md": 1 for i in range(2 * n_calls)}
    inst.store.close()


@pytest.mark.parametrize("restart", [False, True])
@pytest.mark.parametrize("call_id", ["call_0", "memory_search_0"])
def test_a_result_copied_without_its_call_in_a_later_scan_counts_nothing(
    tmp_path, restart, call_id
):
    """A tool-result truncation re-branch re-appends the result (same ``toolCallId``, same
    message) without its call; read in a later scan, it is a copy of an answer taken."""
    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    lines = [tx.header("s")]
    for turn in range(2):
        t = tx.T0 + 60 * turn
        lines.append(timed(tx.call(call_id, query=f"q{turn}", ts=t), t))
        payload = tx.search_payload([FILES[2 * turn], FILES[2 * turn + 1]])
        lines.append(timed(tx.result(call_id, payload, ts=t + 1), t + 1))
    inst.append("s.jsonl", b"".join(lines))
    inst.scan()
    want = {FILES[i]: 1 for i in range(4)}
    assert inst.counts() == want
    if restart:
        inst.restart()
    for line in (lines[2], lines[4]):  # each turn's result again, as a new entry
        entry = json.loads(line)
        entry["id"] = "copy" + entry["id"]
        entry["timestamp"] = tx.iso(tx.T0 + 3600)
        inst.append("s.jsonl", tx.dump(entry))
        inst.scan()
        assert inst.counts() == want
    # a compaction successor that starts with the last result (its call left behind)
    inst.append("2026-02-25T10-00-00.000Z_s2.jsonl", tx.header("s2") + lines[4])
    inst.scan()
    assert inst.counts() == want
    inst.store.close()


@pytest.mark.parametrize("copy", ["store", "successor", "reappended"])
def test_a_copy_of_a_call_counted_before_the_upgrade_counts_once(tmp_path, monkeypatch, copy):
    """A state.db written before memoryd kept occurrences holds the first call of a reused id
    under the bare id (its later turns were taken for copies). A copy of that call read after
    the upgrade (OpenClaw moving the JSONL into its store, a compaction successor, an entry
    re-appended) is the call counted then, not a new one; a later turn's copy counts now."""
    import memoryd.ingest.apply as apply_mod

    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    lines = [tx.header("s")]
    for turn in range(2):
        t = tx.T0 + 60 * turn
        lines.append(timed(tx.call("memory_search_0", query=f"q{turn}", ts=t + 0.5), t))
        payload = tx.search_payload([FILES[2 * turn], FILES[2 * turn + 1]])
        lines.append(timed(tx.result("memory_search_0", payload, ts=t + 1), t + 1))
    with monkeypatch.context() as m:  # memoryd before the change: ids kept as written
        m.setattr(apply_mod, "is_numbered", lambda _id: False)
        inst.append("s.jsonl", b"".join(lines))
        inst.scan()
    assert inst.counts() == {FILES[0]: 1, FILES[1]: 1}  # the second turn was lost then
    inst.restart()
    if copy == "store":
        _db, conn = openclaw_db(inst)
        insert_events(conn, "s", lines)
        conn.close()
    elif copy == "successor":
        inst.append("2026-02-25T10-00-00.000Z_s.jsonl", b"".join(lines[1:]))
    else:
        for line in lines[1:]:
            entry = json.loads(line)
            entry["id"] = "copy" + entry["id"]
            entry["timestamp"] = tx.iso(tx.T0 + 3600)
            inst.append("s.jsonl", tx.dump(entry))
    inst.scan()
    assert inst.counts() == {FILES[i]: 1 for i in range(4)}
    inst.store.close()


def test_a_copy_of_an_aborted_turn_does_not_take_the_next_turns_answer(tmp_path):
    """Turn 1 asks ``memory_search_0`` and is aborted (no answer); turn 2 asks it again; a
    transcript rewrite then re-appends turn 1's call. Turn 2's answer is turn 2's: its
    hits go with its own query, and no call of turn 2 is left waiting."""
    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    t1, t2 = tx.T0, tx.T0 + 60
    first = timed(tx.call("memory_search_0", query="first", ts=t1), t1)
    entry = json.loads(first)
    entry["id"], entry["timestamp"] = "copy", tx.iso(t2 + 0.5)
    lines = [
        tx.header("s"),
        first,
        timed(tx.call("memory_search_0", query="second", ts=t2), t2),
        tx.dump(entry),
        timed(tx.result("memory_search_0", tx.search_payload([FILES[0]]), ts=t2 + 1), t2 + 1),
    ]
    inst.append("s.jsonl", b"".join(lines))
    inst.scan()
    assert inst.counts() == {FILES[0]: 1}
    conn = inst.store.conn
    assert [q for (q,) in conn.execute("SELECT query FROM hits")] == ["second"]
    waiting = conn.execute("SELECT query FROM calls WHERE answered = 0").fetchall()
    assert waiting == [("first",)]
    inst.store.close()


def test_ids_made_unique_by_a_clock_are_kept_as_written(tmp_path):
    """pi-ai names a Gemini (and Ollama) call ``<tool>_<Date.now()>_<counter>``: unique, never
    reused, so kept (and exported) as the transcript writes it, with no lookups for a reuse;
    the per-turn ids (``memory_search_0``, ``exec:22``) are the reused ones."""
    from memoryd.ingest.calls import is_numbered

    ids = ["memory_search_1772010842140_1", "ollama_1772010842140_12", "memory_get_1772010842_7"]
    assert not any(is_numbered(i) for i in ids)
    assert all(is_numbered(i) for i in ["memory_search_0", "functions.memory_search:0", "exec:22"])
    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    lines = [tx.header("g")]
    for i, cid in enumerate(ids):
        t = tx.T0 + 60 * i
        lines.append(timed(tx.call(cid, tool="memory_get", path=FILES[i], ts=t), t))
        payload = {"path": FILES[i], "text": "body"}
        lines.append(timed(tx.result(cid, payload, ts=t + 1, tool="memory_get"), t + 1))
    inst.append("g.jsonl", b"".join(lines))
    inst.scan()
    assert inst.counts() == want(3)
    stored = sorted(c for (c,) in inst.store.conn.execute("SELECT call_id FROM calls"))
    assert stored == sorted(ids)
    inst.store.close()


@pytest.mark.parametrize("call_id", ["call_0", "memory_get_0"])
def test_reused_ids_in_a_deleted_sessions_zst_archive(tmp_path, call_id):
    """A session deleted while memoryd was down is read from its ``.zst`` archive: each turn's
    answer, naming no tool, is found by the id as written; reading it again adds nothing."""
    from support.agent_rows import STAMP, frame

    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    text = b"".join(turns(call_id, 3, named=False))
    (inst.sessions / f"del.jsonl.deleted.{STAMP}.zst").write_bytes(frame(text))
    inst.scan()
    assert inst.counts() == want(3)
    inst.restart()
    (inst.sessions / f"del.jsonl.reset.{STAMP}.zst").write_bytes(frame(text))  # another copy
    inst.scan()
    assert inst.counts() == want(3)
    inst.store.close()


@pytest.mark.parametrize("copied", ["call_and_answer", "answer"])
@pytest.mark.parametrize("scans", ["one", "two", "restart"])
def test_a_copy_of_an_earlier_answer_does_not_answer_a_later_call(tmp_path, scans, copied):
    """Turn 1 asks ``memory_search_0`` and is answered; turn 2 asks it again and is aborted
    (no answer ever comes); a transcript rewrite then re-appends turn 1's call and answer
    (the same messages, new entries). The copied answer is turn 1's (its message's time is
    before turn 2's call): it counts nothing more."""
    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    t1, t2 = tx.T0, tx.T0 + 60
    lines = [
        tx.header("s"),
        timed(tx.call("memory_search_0", query="first", ts=t1), t1),
        timed(tx.result("memory_search_0", tx.search_payload([FILES[0]]), ts=t1 + 1), t1 + 1),
        timed(tx.call("memory_search_0", query="second", ts=t2), t2),
    ]
    inst.append("s.jsonl", b"".join(lines))
    if scans != "one":
        inst.scan()
    if scans == "restart":
        inst.restart()
    for line in lines[1:3] if copied == "call_and_answer" else lines[2:3]:
        entry = json.loads(line)
        entry["id"], entry["timestamp"] = "copy" + entry["id"], tx.iso(t2 + 30)
        inst.append("s.jsonl", tx.dump(entry))
    inst.scan()
    assert inst.counts() == {FILES[0]: 1}
    inst.store.close()


@pytest.mark.parametrize("odd", ["1x2", "\u00b2"])
def test_an_id_that_only_looks_like_an_occurrence_does_not_stop_the_file(tmp_path, odd):
    """A transcript's id is data: ``memory_get_0#1x2`` (an occurrence id's shape with no
    time after the mark) waiting for its answer must not make an untimed result of
    ``memory_get_0`` crash the read, which left every hit of the file uncounted."""
    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    untimed = json.loads(tx.result("memory_get_0", {"path": FILES[1], "text": "b"}, tool=None))
    del untimed["message"]["timestamp"]
    lines = [tx.header("s"), tx.call(f"memory_get_0#{odd}", tool="memory_get", path=FILES[1])]
    lines += [tx.dump(untimed), tx.call("ok", tool="memory_get", path=FILES[0])]
    lines.append(tx.result("ok", {"path": FILES[0], "text": "a"}, tool="memory_get"))
    inst.append("s.jsonl", b"".join(lines))
    inst.scan()
    assert inst.counts() == {FILES[0]: 1}
    inst.store.close()
