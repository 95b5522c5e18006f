"""Memory calls reached through OpenClaw's Tool Search, counted exactly once each.

The shapes are those the real 2026.9.6 package writes (docs/openclaw-formats.md §5): the
``tool_call`` wrapper describes one call three times (the call, a nested-tool record, the
wrapped result), code mode runs any number of inner calls inside one ``tool_search_code``
call (a nested-tool record each), and 2026.7's wrapper writes no record. The lines are built
by tests/support/tool_search_lines.py; the scanner, the files and SQLite are real.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.ingest import events
from memoryd.ingest.events import NESTED, TOOL_CALL, ToolCall, ToolResult, Unrecognised
from memoryd.ingest.parser import parse, parse_line
from support import tool_search_lines as ts
from support import transcripts as tx
from support.scanner_install import FILES, Install, insert_events, openclaw_db

T = tx.T0
ONE_PROCESS = "[ingest]\nparallel_min_bytes = 0\nchunk_bytes = 4096\n"


def found(*paths: str) -> dict[str, object]:
    return tx.search_payload(list(paths))


def got(path: str, text: str = "body") -> dict[str, object]:
    return {"path": path, "text": text, "from": 1, "lines": 4}


def default_mode(call_id: str, paths: list[str], t: float = T, *, seq: int = 1) -> list[bytes]:
    """A memory_search through ``tool_call`` as 2026.9.6 writes it by default."""
    args = {"query": "boat " + call_id}
    return [
        ts.wrapper_call(call_id, "memory_search", args, t),
        ts.nested(call_id, seq, "memory_search", args, found(*paths), t + 0.5),
        ts.wrapper_result(call_id, "memory_search", found(*paths), t + 1),
    ]


def counts(inst: Install) -> dict[str, int]:
    return {p: c.total for p, c in inst.store.hit_counts(math.inf).items()}


# --------------------------------------------------------------------------- the parser


def test_the_wrapper_call_names_the_real_tool_and_its_arguments():
    (call,), bad = parse(ts.wrapper_call("w1", "memory_get", {"path": "memory/a.md"}))
    assert not bad and isinstance(call, ToolCall)
    assert (call.call_id, call.tool, call.query, call.via) == (
        "w1",
        "get",
        "memory/a.md",
        TOOL_CALL,
    )


def test_a_catalog_id_and_arguments_beside_it_are_read_as_tool_search_reads_them():
    block = {"type": "toolCall", "id": "w1", "name": "tool_call",
             "arguments": {"id": "openclaw:core:memory_search", "query": "boat"}}  # fmt: skip
    line = tx.dump({"type": "message", "timestamp": tx.iso(T),
                    "message": {"role": "assistant", "content": [block]}})  # fmt: skip
    (call,), _ = parse(line)
    assert (call.tool, call.query, call.via) == ("search", "boat", TOOL_CALL)


def test_the_wrapped_result_is_read_from_details_or_from_its_text():
    for kept in (True, False):
        line = ts.wrapper_result("w1", "memory_search", found("memory/a.md", "MEMORY.md"),
                                 details_kept=kept)  # fmt: skip
        (res,), _ = parse(line)
        assert isinstance(res, ToolResult) and res.tool == "search"
        assert [p.path for p in res.paths] == ["memory/a.md", "MEMORY.md"]


def test_a_wrapped_result_cut_short_keeps_the_paths_before_the_cut():
    line = json.loads(ts.wrapper_result("w1", "memory_search", found(*FILES), details_kept=False))
    text = line["message"]["content"][0]["text"]
    line["message"]["content"][0]["text"] = text[: text.index(FILES[3])]
    (res,), _ = parse(tx.dump(line).rstrip(b"\n"))
    assert res.recovered and {p.path for p in res.paths} >= set(FILES[:3])


def test_a_wrapper_around_another_tool_is_no_memory_call():
    assert parse(ts.wrapper_call("w1", "web_fetch", {"url": "https://x"})).events == ()
    assert parse(ts.wrapper_result("w1", "web_fetch", {"status": 200})).events == ()


def test_a_nested_record_is_a_call_and_its_answer():
    line = ts.nested("c1", 2, "memory_search", {"query": "q"}, found("memory/b.md"))
    call, res = parse(line).events
    assert (call.call_id, call.via, call.parent, call.query) == (
        "tool_search_code:c1:memory_search:2", NESTED, "c1", "q")  # fmt: skip
    assert [p.path for p in res.paths] == ["memory/b.md"] and res.parent == "c1"


def test_a_failed_inner_call_is_answered_with_nothing_and_an_omitted_output_not_at_all():
    failed = ts.nested("c1", 1, "memory_search", {"query": "q"}, None, error="timed out")
    assert [type(e) for e in parse(failed).events] == [ToolCall, ToolResult]
    assert parse(failed).events[1].paths == ()
    omitted = ts.nested("c1", 1, "memory_get", {"path": "MEMORY.md"}, None, omitted=True)
    assert [type(e) for e in parse(omitted).events] == [ToolCall]


def test_a_reused_parent_id_gives_each_runs_inner_call_an_id_of_its_own():
    a = ts.nested("call_0", 1, "memory_search", {"query": "q"}, found("MEMORY.md"), scope="r1")
    b = ts.nested("call_0", 1, "memory_search", {"query": "q"}, found("MEMORY.md"), scope="r2")
    assert parse(a).events[0].call_id != parse(b).events[0].call_id


def test_a_memory_tool_named_in_an_unknown_shape_is_an_unrecognised_event():
    block = {"type": "toolCall", "id": "x1", "name": "exec",
             "arguments": {"command": "openclaw tools call memory_search -q boat"}}  # fmt: skip
    line = tx.dump({"type": "message", "timestamp": tx.iso(T),
                    "message": {"role": "assistant", "content": [block]}})  # fmt: skip
    (ev,), _ = parse(line)
    assert isinstance(ev, Unrecognised) and "memory_search" in ev.sample
    custom = tx.dump({"type": "message", "timestamp": tx.iso(T), "message": {
        "role": "custom", "customType": "openclaw.tool-trace.v9",
        "details": {"tool": "memory_get", "path": "MEMORY.md"}}})  # fmt: skip
    (ev,), _ = parse(custom)
    assert isinstance(ev, Unrecognised)
    # Tool Search's own lookups name memory tools without calling them
    look = tx.dump({"type": "message", "timestamp": tx.iso(T), "message": {
        "role": "assistant", "content": [{"type": "toolCall", "id": "s1", "name": "tool_search",
                                          "arguments": {"query": "memory_search"}}]}})  # fmt: skip
    assert parse(look).events == ()


# --------------------------------------------------------------------------- counting


def test_the_default_shape_counts_each_call_once_and_a_rescan_adds_nothing(tmp_path):
    inst = Install(tmp_path)
    lines = [tx.header("s")]
    lines += default_mode("w1", [FILES[0], FILES[1]])
    lines += default_mode("w2", [FILES[1]], T + 60, seq=2)
    inst.append("s.jsonl", b"".join(lines))
    stats = inst.scan()
    assert counts(inst) == {FILES[0]: 1, FILES[1]: 2}
    assert stats.calls_by_route() == {"direct": 0, "tool_call": 2, "code": 0}
    assert inst.scan().new_hits == 0
    inst.restart()
    assert inst.scan().new_hits == 0 and counts(inst) == {FILES[0]: 1, FILES[1]: 2}


def test_2026_7_wrapper_without_a_nested_record_counts_from_its_result(tmp_path):
    inst = Install(tmp_path)
    lines = [
        tx.header("s"),
        ts.wrapper_call("w1", "memory_search", {"query": "q"}),
        ts.wrapper_result("w1", "memory_search", found(FILES[0], FILES[2]), details_kept=False),
        ts.wrapper_call("w2", "memory_get", {"path": FILES[3]}, T + 5),
        ts.wrapper_result("w2", "memory_get", got(FILES[3]), T + 6),
        ts.wrapper_call("w3", "memory_get", {"path": "memory/none.md"}, T + 7),
        ts.wrapper_result("w3", "memory_get", {"path": "memory/none.md", "text": ""}, T + 8),
    ]
    inst.append("s.jsonl", b"".join(lines))
    assert inst.scan().calls_by_route() == {"direct": 0, "tool_call": 3, "code": 0}
    assert counts(inst) == {FILES[0]: 1, FILES[2]: 1, FILES[3]: 1}


def test_code_mode_counts_every_inner_call_and_a_timed_out_one_finds_nothing(tmp_path):
    inst = Install(tmp_path)
    lines = [
        tx.header("s"),
        ts.code_call("c1", 'return await openclaw.tools.call("memory_search", {query: "q"})'),
        ts.nested("c1", 1, "memory_search", {"query": "q"}, found(FILES[0], FILES[1]), T + 0.2),
        ts.nested("c1", 2, "memory_get", {"path": FILES[4]}, got(FILES[4]), T + 0.3),
        ts.nested(
            "c1",
            3,
            "memory_search",
            {"query": "r"},
            None,
            T + 0.4,
            error="tool_search_code timed out",
        ),
        ts.nested("c1", 4, "memory_search", {"query": "s"}, found(FILES[1]), T + 0.5),
        ts.code_result(
            "c1",
            {"tool": {"name": "memory_search"}, "result": ts.tool_answer(found(FILES[1]))},
            T + 1,
        ),
    ]
    inst.append("s.jsonl", b"".join(lines))
    stats = inst.scan()
    assert stats.calls_by_route() == {"direct": 0, "tool_call": 0, "code": 4}
    assert counts(inst) == {FILES[0]: 1, FILES[1]: 2, FILES[4]: 1}
    answered = inst.store.conn.execute(
        "SELECT COUNT(*) FROM calls WHERE answered = 1 AND tool != 'cell'"
    ).fetchone()
    assert answered == (4,)  # the timed-out one too: answered, with nothing found


def envelope(tool: str, payload: dict[str, object]) -> dict[str, object]:
    """What ``openclaw.tools.call`` returns to the code: the tool and its whole answer."""
    return {"tool": {"id": f"openclaw:memory-core:{tool}", "name": tool, "source": "openclaw"},
            "result": ts.tool_answer(payload)}  # fmt: skip


def test_2026_7_code_mode_counts_the_envelopes_its_value_returned(tmp_path):
    """2026.7 writes no nested-tool record: the cell's value holds what its calls returned,
    as one envelope, a list of them or an object holding them."""
    inst = Install(tmp_path)
    value = {"a": envelope("memory_search", found(FILES[0], FILES[1])),
             "more": [envelope("memory_get", got(FILES[2])), {"x": 1}, "memory_"]}  # fmt: skip
    lines = [tx.header("s"), ts.code_call("c1", "…"), ts.code_result("c1", value)]
    lines += [ts.code_call("c2", "…", T + 5),
              ts.code_result("c2", envelope("memory_search", found(FILES[0])), T + 6)]  # fmt: skip
    inst.append("s.jsonl", b"".join(lines))
    assert inst.scan().calls_by_route() == {"direct": 0, "tool_call": 0, "code": 3}
    assert counts(inst) == {FILES[0]: 2, FILES[1]: 1, FILES[2]: 1}
    inst.restart()
    assert inst.scan().new_hits == 0


def timed_out_cell(cid: str, t: float) -> list[bytes]:
    """A cell whose inner call found something before the cell ran past its time: the model
    saw nothing of it (OpenClaw's result is an error), so it counts nothing."""
    return [
        ts.code_call(cid, "…", t),
        ts.nested(cid, 1, "memory_search", {"query": "late"}, found(FILES[4]), t + 0.5),
        tx.chatter(99, ts=t + 1),
        ts.code_failed(cid, t + 2),
    ]


def test_a_cell_that_timed_out_counts_nothing_its_inner_calls_found(tmp_path):
    inst = Install(tmp_path)
    lines = [tx.header("s"), *timed_out_cell("c9", T)]
    lines += [ts.code_call("c10", "…", T + 10),
              ts.nested("c10", 1, "memory_get", {"path": FILES[0]}, got(FILES[0]), T + 11),
              ts.code_result("c10", None, T + 12)]  # fmt: skip
    inst.append("s.jsonl", b"".join(lines))
    stats = inst.scan()
    assert counts(inst) == {FILES[0]: 1} and stats.new_hits == 1
    assert inst.scan().new_hits == 0 and counts(inst) == {FILES[0]: 1}


def test_a_cell_ending_in_a_later_scan_takes_back_what_it_found(tmp_path):
    """The daemon read the cell's records while it ran; its failure comes in the next scan."""
    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    lines = [tx.header("s"), *timed_out_cell("c9", T)]
    inst.append("s.jsonl", b"".join(lines[:3]))
    inst.scan()
    assert counts(inst) == {FILES[4]: 1}
    inst.restart()
    inst.append("s.jsonl", b"".join(lines[3:]))
    inst.scan()
    assert counts(inst) == {}


def test_a_failed_cell_keeps_the_hit_memoryd_counted_itself_under_its_inner_call(tmp_path):
    """The plugin's search hook answered an inner memory_search with an archived note and
    counted that hit itself (no source): the cell's failure takes back what the scanner
    found, never memoryd's own row."""
    from memoryd.ingest.tool_names import nested_prefix

    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    lines = [tx.header("s"), *timed_out_cell("c9", T)]
    inst.append("s.jsonl", b"".join(lines[:3]))
    inst.scan()
    with inst.store.transaction():
        inst.store.conn.execute(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query) "
            "VALUES ('main', ?, ?, 'search', ?, 'otter')",
            (nested_prefix("c9") + "memory_search:1", FILES[3], T + 0.4),
        )
    inst.restart()
    inst.append("s.jsonl", b"".join(lines[3:]))
    inst.scan()
    assert counts(inst) == {FILES[3]: 1}


def mixed_session() -> tuple[list[bytes], dict[str, int]]:
    """Direct calls, the wrapper and code mode in one session."""
    lines = [tx.header("m")]
    lines += [tx.call("d1", ts=T), tx.result("d1", found(FILES[0]), ts=T + 1)]
    lines += default_mode("w1", [FILES[0], FILES[1]], T + 10)
    lines += [
        ts.code_call("c1", "…", T + 20),
        ts.nested("c1", 1, "memory_get", {"path": FILES[2]}, got(FILES[2]), T + 21),
        ts.nested("c1", 2, "memory_search", {"query": "x"}, found(FILES[0]), T + 22),
        ts.code_result("c1", [], T + 23),
    ]
    lines += [tx.call("d2", tool="memory_get", path=FILES[3], ts=T + 30),
              tx.result("d2", got(FILES[3]), ts=T + 31, tool="memory_get")]  # fmt: skip
    return lines, {FILES[0]: 3, FILES[1]: 1, FILES[2]: 1, FILES[3]: 1}


def test_a_session_mixing_every_route_counts_each_call_once(tmp_path):
    inst = Install(tmp_path)
    lines, want = mixed_session()
    inst.append("s.jsonl", b"".join(lines))
    assert inst.scan().calls_by_route() == {"direct": 2, "tool_call": 1, "code": 2}
    assert counts(inst) == want
    (routed,) = inst.store.conn.execute(
        "SELECT group_concat(name || '=' || value) FROM counters WHERE name LIKE 'memory_calls_%'"
    ).fetchone()
    assert sorted(routed.split(",")) == ["memory_calls_code=2", "memory_calls_tool_call=1"]


def test_line_by_line_scans_with_restarts_count_the_same(tmp_path):
    """A checkpoint after any line (the record and the wrapper's result in later scans, read
    by a new process each time) changes nothing: the wrapper's call is found in the ledger."""
    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    lines, want = mixed_session()
    for line in lines:
        inst.append("s.jsonl", line)
        inst.scan()
        inst.restart()
    assert counts(inst) == want
    (routed,) = inst.store.conn.execute(
        "SELECT SUM(value) FROM counters WHERE name LIKE 'memory_calls_%'"
    ).fetchone()
    assert routed == 3


def test_the_same_lines_in_the_sqlite_store_count_the_same(tmp_path):
    inst = Install(tmp_path)
    _db, conn = openclaw_db(inst)
    lines, want = mixed_session()
    insert_events(conn, "s1", lines[:7])
    inst.scan()
    insert_events(conn, "s1", lines[7:], first_seq=7)
    inst.scan()
    assert counts(inst) == want
    assert inst.scan().new_hits == 0
    conn.close()


def test_reused_wrapper_ids_count_each_turn(tmp_path):
    """A provider that numbers its calls per turn reuses the wrapper's id every turn: the
    record of each turn goes to that turn's call (by its time), each counted once."""
    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    lines = [tx.header("s")]
    for turn in range(3):
        lines += default_mode("tool_call_0", [FILES[turn]], T + 60 * turn, seq=turn + 1)
    inst.append("s.jsonl", b"".join(lines))
    inst.scan()
    assert counts(inst) == {FILES[0]: 1, FILES[1]: 1, FILES[2]: 1}
    assert inst.scan().new_hits == 0


def test_unrecognised_shapes_are_counted_persisted_and_shown(tmp_path):
    inst = Install(tmp_path)
    block = {"type": "toolCall", "id": "x1", "name": "exec",
             "arguments": {"command": "openclaw memory_search boat"}}  # fmt: skip
    line = tx.dump({"type": "message", "timestamp": tx.iso(T),
                    "message": {"role": "assistant", "content": [block]}})  # fmt: skip
    inst.append("s.jsonl", tx.header("s") + line)
    stats = inst.scan()
    assert stats.unrecognised == 1 and "memory_search" in str(stats.unrecognised_example)
    assert stats.as_dict()["unrecognised"] == 1
    assert inst.scan().unrecognised == 0  # counted when read, once
    assert inst.store.counters()["unrecognised_memory_calls"] == 1
    assert "memory_search" in str(inst.store.get_meta("unrecognised.example"))


def _direct(cid: str, t: float) -> list[bytes]:
    """A direct memory_search that finds nothing, its message times kept (pi-ai's)."""
    return [tx.timed(tx.call(cid, ts=t), t), tx.timed(tx.result(cid, found(), ts=t + 1), t + 1)]


def test_a_reused_cell_id_after_a_timed_out_cell_does_not_count_its_value(tmp_path):
    """The example Hypothesis found: a provider numbering its calls per turn reuses ``call_1``
    for direct calls and two cells. The first cell (scope run5) times out, so what its records
    found counts nothing; the second (scope run7) wrote a record, so its value's envelope only
    repeats it and counts nothing either."""
    inst = Install(tmp_path, extra_config=ONE_PROCESS)
    t = [T + 60 * (i + 1) for i in range(8)]
    lines = [*_direct("call_0", t[0]), *_direct("call_1", t[1])]
    lines += [ts.code_call("call_0", "…", t[2]),
              ts.code_result("call_0", [envelope("memory_search", found())], t[2] + 1)]  # fmt: skip
    lines += [*_direct("call_1", t[3]), *_direct("call_0", t[4])]
    lines.append(ts.code_call("call_1", "…", t[5]))
    for k, sub in enumerate([[], [], [FILES[0], FILES[1]]]):
        lines.append(ts.nested("call_1", k + 1, "memory_search", {"query": f"c5{k}"},
                               found(*sub), t[5] + 0.1 * (k + 1), scope="run5"))  # fmt: skip
    lines.append(ts.code_failed("call_1", t[5] + 1))
    lines += _direct("call_0", t[6])
    lines += [ts.code_call("call_1", "…", t[7]),
              ts.nested("call_1", 1, "memory_search", {"query": "c70"}, found(), t[7] + 0.1,
                        scope="run7"),
              ts.code_result("call_1", [envelope("memory_search", found(FILES[0]))],
                             t[7] + 1)]  # fmt: skip
    inst.append("s.jsonl", b"".join(lines))
    inst.scan()
    inst.restart()
    assert counts(inst) == {}
    assert inst.scan().new_hits == 0
    inst.store.close()


def test_a_2026_7_cell_reusing_the_id_of_a_timed_out_cell_counts_its_value(tmp_path):
    """The other way round: the cell after the timed-out one wrote no record (2026.7), so its
    value's envelope is what its call found, and counts; the first cell's records do not."""
    inst = Install(tmp_path)  # (one region: the failed result is found after the value's line)
    lines = [ts.code_call("call_1", "…", T),
             ts.nested("call_1", 1, "memory_search", {"query": "a"}, found(FILES[1]), T + 0.1,
                       scope="run1"),
             ts.code_failed("call_1", T + 1),
             *_direct("call_0", T + 60),
             ts.code_call("call_1", "…", T + 120),
             ts.code_result("call_1", [envelope("memory_search", found(FILES[0]))],
                            T + 121)]  # fmt: skip
    inst.append("s.jsonl", b"".join(lines))
    inst.scan()
    inst.restart()
    assert counts(inst) == {FILES[0]: 1}
    assert inst.scan().new_hits == 0
    inst.store.close()


def test_a_cells_result_is_a_needle_line_where_a_record_tells_of_a_cell():
    """The failed cell's result names no memory tool: in a region with a nested-tool record
    it is prescanned with the needle lines (applied in its place); elsewhere it is left to
    the search by id, and the region costs no search more."""
    from memoryd.ingest.prescan import prescan_region
    from memoryd.ingest.tailer import Region

    record = ts.nested("call_1", 1, "memory_search", {"query": "q"}, found(FILES[0]), T + 0.1)
    failed = ts.code_failed("call_1", T + 1)
    for lines, want in (([record, failed], 2), ([tx.chatter(1), failed], 0)):
        data = b"".join([ts.code_call("call_1", "…", T), *lines])
        pre = prescan_region(Region(data, 0, len(data)))
        assert len([c for c in pre.lines if c.parsed.events]) == want
        assert [c.begin for c in pre.lines] == sorted(c.begin for c in pre.lines)


# --------------------------------------------------------------------------- property


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[bytes], dict[str, int], list[int]]:
    """Interleaved sessions of direct, wrapper (with or without its record) and code-mode
    calls, ids reused across turns, a cut line, and where to stop scanning (line ends)."""
    lines: list[bytes] = []
    want: dict[str, int] = {}
    n = draw(st.integers(1, 8))
    reuse = draw(st.booleans())
    t = T
    for i in range(n):
        kinds = ["direct", "wrapper", "wrapper_2026_7", "code", "code_2026_7"]
        kind = draw(st.sampled_from(kinds))
        cid = f"call_{i % 2}" if reuse else f"id{i}"
        t += 60
        picks = draw(st.lists(st.sampled_from(FILES), min_size=0, max_size=3, unique=True))
        if kind == "direct":
            lines += [tx.call(cid, ts=t), tx.result(cid, found(*picks), ts=t + 1)]
            for p in picks:
                want[p] = want.get(p, 0) + 1
            lines[-2] = _timed(lines[-2], t)
            lines[-1] = _timed(lines[-1], t + 1)
        elif kind.startswith("wrapper"):
            args = {"query": f"q{i}"}
            lines.append(ts.wrapper_call(cid, "memory_search", args, t))
            if kind == "wrapper":
                lines.append(ts.nested(cid, 1, "memory_search", args, found(*picks), t + 0.5,
                                       scope=f"run{i}"))  # fmt: skip
            lines.append(ts.wrapper_result(cid, "memory_search", found(*picks), t + 1))
            for p in picks:
                want[p] = want.get(p, 0) + 1
        elif kind == "code_2026_7":  # no records: the value's envelopes count
            lines.append(ts.code_call(cid, "…", t))
            subs = draw(st.lists(st.lists(st.sampled_from(FILES), max_size=2, unique=True),
                                 max_size=3))  # fmt: skip
            value = [envelope("memory_search", found(*sub)) for sub in subs]
            lines.append(ts.code_result(cid, value, t + 1))
            for sub in subs:
                for p in sub:
                    want[p] = want.get(p, 0) + 1
        else:
            inner = draw(st.integers(0, 3))
            cell_before = dict(want)
            lines.append(ts.code_call(cid, "…", t))
            for k in range(inner):
                sub = draw(st.lists(st.sampled_from(FILES), max_size=2, unique=True))
                failed = draw(st.booleans()) and k == 0
                lines.append(ts.nested(cid, k + 1, "memory_search", {"query": f"c{i}{k}"},
                                       found(*sub), t + 0.1 * (k + 1),
                                       error="timed out" if failed else None,
                                       scope=f"run{i}"))  # fmt: skip
                if not failed:
                    for p in sub:
                        want[p] = want.get(p, 0) + 1
            if draw(st.integers(0, 4)) == 0:  # the cell timed out: nothing it found counts
                lines.append(ts.code_failed(cid, t + 1))
                want = cell_before
            else:  # (the value repeats what the records told: not counted again)
                value = [envelope("memory_search", found(FILES[0]))] if inner else None
                lines.append(ts.code_result(cid, value, t + 1))
        if draw(st.booleans()):
            lines.append(tx.chatter(i, ts=t + 2))
    if draw(st.booleans()):  # a cut line (a crash mid-write), then the rest
        at = draw(st.integers(0, len(lines)))
        cut = lines[min(at, len(lines) - 1)]
        lines.insert(at, cut[: max(1, len(cut) // 2)] + b"\n")
    stops = sorted(set(draw(st.lists(st.integers(1, len(lines)), max_size=4))))
    return lines, want, stops


def _timed(line: bytes, t: float) -> bytes:
    entry = json.loads(line)
    entry["message"]["timestamp"] = int(t * 1000)
    return tx.dump(entry)


@settings(
    max_examples=int(os.environ.get("MEMORYD_TS_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(case=sessions())
def test_any_interleaving_counts_each_call_once(tmp_path_factory, case):
    lines, want, stops = case
    inst = Install(tmp_path_factory.mktemp("ts"), extra_config=ONE_PROCESS)
    done = 0
    for stop in [*stops, len(lines)]:
        inst.append("s.jsonl", b"".join(lines[done:stop]))
        done = stop
        inst.scan()
        inst.restart()
    assert counts(inst) == {p: n for p, n in want.items() if n}
    assert inst.scan().new_hits == 0
    inst.store.close()


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    kind=st.sampled_from(["wrapper_call", "nested", "wrapper_result", "code_result"]),
)
def test_the_fast_path_and_the_parser_agree_on_tool_search_lines(data, kind):
    """Every Tool Search line, whole or cut anywhere: both paths give the same answer."""
    picks = data.draw(st.lists(st.sampled_from(FILES), max_size=3, unique=True))
    line = {
        "wrapper_call": lambda: ts.wrapper_call("w", "memory_search", {"query": "q"}),
        "nested": lambda: ts.nested("w", 1, "memory_get", {"path": FILES[0]}, got(FILES[0])),
        "wrapper_result": lambda: ts.wrapper_result("w", "memory_search", found(*picks),
                                                    details_kept=data.draw(st.booleans())),
        "code_result": lambda: ts.code_result("w", {"tool": "memory_search"}),
    }[kind]().rstrip(b"\n")  # fmt: skip
    cut = line[: data.draw(st.integers(1, len(line)))]
    assert repr(parse(cut)) == repr(parse_line(cut))


# --------------------------------------------------------------------------- healthy stores


def test_schema_23_archive_tables_are_read_without_a_warning(tmp_path, capsys):
    """Both archive tables as 2026.9.6 creates them: extra columns, the cold table's archive
    named ``archive_name`` and kept in a file (no blob) or in the row."""
    import zstandard

    inst = Install(tmp_path)
    _db, conn = openclaw_db(inst)
    conn.executescript(
        """
        CREATE TABLE session_transcript_archives (
          session_id TEXT NOT NULL, generation TEXT NOT NULL, session_key TEXT NOT NULL,
          reason TEXT NOT NULL, encoding TEXT NOT NULL, archive_blob BLOB NOT NULL,
          archive_sha256 TEXT NOT NULL, archive_name TEXT NOT NULL UNIQUE,
          created_at INTEGER NOT NULL, published_at INTEGER,
          publish_attempts INTEGER NOT NULL DEFAULT 0, last_publish_attempt_at INTEGER,
          last_publish_error TEXT, PRIMARY KEY (session_id, generation));
        CREATE TABLE session_transcript_cold_archives (
          session_id TEXT NOT NULL PRIMARY KEY, generation TEXT NOT NULL,
          archive_name TEXT NOT NULL UNIQUE, archive_sha256 TEXT NOT NULL,
          event_count INTEGER NOT NULL, raw_bytes INTEGER NOT NULL,
          archive_bytes INTEGER NOT NULL, last_seq INTEGER NOT NULL,
          archived_at INTEGER NOT NULL, storage TEXT NOT NULL, archive_blob BLOB);
        PRAGMA user_version = 23;
        """
    )
    deleted = b"".join(default_mode("a1", [FILES[0]]))
    cold_rows = [{"kind": "header", "session_id": "c", "session_key": "agent:main:c"}] + [
        {"kind": "event", "row": {"seq": i, "event_json": ln.decode().strip(), "created_at": 0}}
        for i, ln in enumerate(default_mode("b1", [FILES[1]]))
    ]
    cold = b"".join(json.dumps(r).encode() + b"\n" for r in cold_rows)
    zc = zstandard.ZstdCompressor()
    conn.execute(
        "INSERT INTO session_transcript_archives VALUES "
        "('d', 'g1', 'agent:main:d', 'deleted', 'zstd', ?, ?, 'd.jsonl.deleted.zst', 1, 2, 1, 2, "
        "NULL)",
        (zc.compress(deleted), "0" * 64),
    )
    conn.execute(
        "INSERT INTO session_transcript_cold_archives VALUES "
        "('c', 'g1', 'c.jsonl.zst', ?, 3, 10, 10, 2, 1, 'sqlite', ?)",
        ("0" * 64, zc.compress(cold)),
    )
    conn.execute(
        "INSERT INTO session_transcript_cold_archives VALUES "
        "('f', 'g1', 'f.jsonl.zst', ?, 3, 10, 10, 2, 1, 'file', NULL)",
        ("0" * 64,),
    )
    insert_events(conn, "live", default_mode("l1", [FILES[2]]))
    stats = inst.scan()
    assert not stats.failed_sources and counts(inst) == {FILES[0]: 1, FILES[1]: 1, FILES[2]: 1}
    inst.scan()
    assert capsys.readouterr().err == ""
    conn.close()


def test_a_2026_7_agent_database_without_transcripts_is_no_failed_source(tmp_path, capsys):
    """2026.7 keeps auth, caches and the memory index in ``openclaw-agent.sqlite``
    (user_version 1) and its transcripts in JSONL: both are fine, nothing is said."""
    inst = Install(tmp_path)
    db = inst.sessions.parent / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE auth_profile_store(store_key TEXT PRIMARY KEY, store_json TEXT);"
        "CREATE TABLE cache_entries(scope TEXT, key TEXT, value_json TEXT);"
        "CREATE TABLE memory_index_chunks(id TEXT, path TEXT, text TEXT);"
        "PRAGMA user_version = 1;"
    )
    conn.close()
    inst.append("s.jsonl", b"".join([tx.header("s"), *default_mode("w1", [FILES[0]])]))
    stats = inst.scan()
    assert not stats.failed_sources and counts(inst) == {FILES[0]: 1}
    assert inst.scan().failed_sources == []
    assert capsys.readouterr().err == ""


def test_the_parser_module_names_its_routes():
    assert (events.TOOL_CALL, events.CODE) == ("tool_call", "code")


def test_status_shows_calls_by_route_and_the_unrecognised(tmp_path):
    """``status`` (text and --json) reads the persisted counters: what every scan counted."""
    import io

    from memoryd.commands.context import Context
    from memoryd.commands.status import cmd_status, collect_status

    inst = Install(tmp_path)
    lines, _want = mixed_session()
    block = {"type": "toolCall", "id": "x1", "name": "exec",
             "arguments": {"command": "openclaw memory_get MEMORY.md"}}  # fmt: skip
    odd = tx.dump({"type": "message", "timestamp": tx.iso(T + 99),
                   "message": {"role": "assistant", "content": [block]}})  # fmt: skip
    inst.append("s.jsonl", b"".join([*lines, odd]))
    inst.scan()
    inst.store.close()
    out = io.StringIO()
    ctx = Context(inst.cfg, str(inst.cfg.source), environ={}, out=out)
    doc = collect_status(ctx)
    assert doc["memory_calls"] == {"direct": 2, "tool_call": 1, "code": 2}
    assert doc["unrecognised"]["count"] == 1
    assert "memory_get MEMORY.md" in doc["unrecognised"]["example"]

    class Args:
        json = False

    cmd_status(Args(), ctx)  # type: ignore[arg-type]
    text = out.getvalue()
    assert "calls:       2 direct, 1 tool_call, 2 code" in text
    assert "unrecognised: 1, e.g. " in text
