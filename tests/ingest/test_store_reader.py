"""The SQLite transcript store reader on real stores: every layout, compressed rows, bad rows.

Each store is a real SQLite file written here with OpenClaw's DDL (openclaw-formats.md §2b),
compressed rows are real zstd frames. The counts are compared with the same conversations
read as JSONL.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memoryd.log
from memoryd.ingest import sqlite_source
from memoryd.ingest.tailer import HEAD_MAX
from support import transcripts as tx
from support.agent_rows import (
    STAMP,
    Store,
    archive_store,
    delete_session,
    frame,
    merge_counts,
    openclaw_compresses,
)
from support.scanner_install import FILES, Install, conversation, expected


def big_conversation(n: int, prefix: str) -> list[bytes]:
    """Like :func:`conversation`, with results of 2–4 KiB (OpenClaw compresses those)."""
    lines = [tx.header(prefix)]
    for i in range(n):
        cid = f"{prefix}{i}"
        paths = [FILES[i % len(FILES)], FILES[(i + 1) % len(FILES)]]
        results = [
            {
                "path": p,
                "startLine": 1,
                "endLine": 9,
                "score": 0.7,
                "source": "memory",
                "snippet": f"## note {i} " + "lorem ipsum dolor sit amet " * 40,
            }
            for p in paths
        ]
        lines += [tx.chatter(i), tx.call(cid, query=f"q{i}"), tx.decoy_result(i)]
        lines.append(tx.result(cid, {"results": results, "provider": "openai", "model": "m"}))
    return lines


@pytest.fixture
def inst(tmp_path):
    i = Install(tmp_path)
    yield i
    i.store.close()


@pytest.fixture(autouse=True)
def one_shot_logging(monkeypatch):
    """As in a one-shot ``memoryd scan``: logging is not set up, events go to stderr as JSON
    (another test of the session may have configured it for a daemon)."""
    monkeypatch.setattr(memoryd.log, "CONFIGURED", False)


# --------------------------------------------------------------------------- compressed rows


@pytest.mark.parametrize("schema", [13, 22, 24])
def test_every_layout_counts_what_the_jsonl_counts(tmp_path, schema):
    """The same conversations as a store of schema 13, 22 or 24 and as JSONL: same counts."""
    convs = {"s1": big_conversation(6, "a"), "s2": conversation(5, "b")}
    as_jsonl = Install(tmp_path / "jsonl")
    for sid, lines in convs.items():
        as_jsonl.append(f"{sid}.jsonl", b"".join(lines))
    as_jsonl.scan()
    as_store = Install(tmp_path / "store")
    store = Store(as_store, schema)
    for sid, lines in convs.items():
        store.add_session(sid)
        store.append(sid, lines)
    if schema >= 23:  # the results of big_conversation are stored compressed, as OpenClaw does
        packed = store.conn.execute(
            "SELECT COUNT(*) FROM transcript_events WHERE event_json IS NULL"
        ).fetchone()[0]
        assert packed == 6
    stats = as_store.scan()
    assert stats.errors == 0 and stats.malformed == 0
    assert as_store.counts() == as_jsonl.counts() == expected(6, 5)
    again = as_store.scan()
    assert again.files_read == 0 and again.new_hits == 0  # unchanged store: not even opened
    store.conn.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    packing=st.lists(st.booleans(), min_size=8 * 4, max_size=8 * 4),
    cuts=st.lists(st.integers(min_value=1, max_value=32), max_size=3),
)
def test_any_mix_of_plain_and_compressed_rows_any_scan_order_same_counts(
    tmp_path_factory, packing, cuts
):
    inst = Install(tmp_path_factory.mktemp("mix"))
    store = Store(inst)
    lines = conversation(8, "m")
    store.conn.execute(
        "INSERT INTO transcript_events(session_id, seq, event_json, created_at) "
        "VALUES (?, 0, ?, 0)",
        ("m", lines[0].rstrip(b"\n").decode()),
    )
    done = 1
    for cut in [*sorted(set(cuts)), len(lines)]:
        for seq in range(done, min(cut, len(lines))):
            store.insert("m", seq, lines[seq].rstrip(b"\n"), packing[seq - 1])
        done = max(done, min(cut, len(lines)))
        inst.scan()
    assert inst.counts() == expected(8)
    inst.restart()
    assert inst.scan().new_hits == 0
    store.conn.close()
    inst.store.close()


def test_bad_rows_are_counted_malformed_and_the_rest_is_read(inst, capsys):
    store = Store(inst)
    lines = big_conversation(4, "g")
    store.append("g", lines, compress="all")
    good = lines[4].rstrip(b"\n")  # a call: a frame that decodes but says the wrong length
    store.raw("g", 100, None, frame(good), len(good) + 3)
    store.raw("g", 101, None, b"\x28\xb5\x2f\xfd garbage, not a frame", 40)
    store.raw("g", 102, 12345, None, None)  # event_json an INTEGER (stored as text '12345')
    store.raw("g", 103, sqlite3.Binary(b"\xff\xfe binary junk"), None, None)  # a BLOB of garbage
    store.raw("g", 104, None, frame(good)[:-6], len(good))  # a frame cut short
    store.raw("g", 105, None, "not a blob", 10)  # event_zstd of the wrong type
    store.append("g", big_conversation(2, "h")[1:])  # and the conversation goes on
    stats = inst.scan()
    assert stats.malformed == 6 and stats.errors == 0
    assert inst.counts() == expected(4, 2)
    assert inst.store.counters()["malformed_lines"] == 6
    logged = [json.loads(ln) for ln in capsys.readouterr().err.splitlines()]
    assert {(e["session"], e["seq"]) for e in logged} == {("g", s) for s in range(100, 106)}
    assert inst.scan().malformed == 0  # behind the cursor: not counted again


def test_rows_whose_sizes_sum_past_64_bits_do_not_stop_the_store(inst):
    """Two compressed rows claiming 2**62 bytes each (a corrupt or hostile ``event_utf8_bytes``)
    are two malformed rows; the store is still read. (The batch's size, once summed by SQLite,
    then in Python as SQLite did, raised "integer overflow": the store failed at every scan
    and nothing after those rows was ever counted.)"""
    store = Store(inst)
    store.append("g", big_conversation(4, "g"), compress="all")
    store.raw("g", 100, None, b"junk", 2**62)
    store.raw("g", 101, None, b"junk", 2**62)
    store.append("g", big_conversation(2, "h")[1:])
    stats = inst.scan()
    assert stats.errors == 0 and stats.malformed == 2
    assert inst.counts() == expected(4, 2)
    store.conn.close()


def test_a_session_of_large_events_is_read_without_holding_a_whole_batch_of_them(inst):
    """A batch was 500 rows, every row handed over: a session of large events (OpenClaw
    stores those over 4 MiB plain) held 500 of them in memory at once, gigabytes, where
    SQLite's prefilter had passed only those naming ``memory_``. A batch now stops at
    ``sqlite_source.BATCH_BYTES`` of rows too; the counts are the same."""
    import tracemalloc

    store = Store(inst)
    lines = conversation(3, "b")
    big = [
        tx.dump({"type": "message", "message": {"role": "tool", "content": "x" * 400_000}})
        for _ in range(250)  # 100 MB of events that hold no memory call
    ]
    store.conn.execute("BEGIN")
    store.append("b", lines[:5] + big + lines[5:], compress="none")
    store.conn.execute("COMMIT")
    tracemalloc.start()
    try:
        stats = inst.scan()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert stats.errors == 0 and inst.counts() == expected(3)
    assert stats.bytes_read == sum(len(ln) - 1 for ln in lines + big)
    assert peak < 40 << 20, peak
    store.conn.close()


def test_the_zstd_binding_is_imported_only_for_a_compressed_row(tmp_path):
    """A one-shot scan of a store without compressed rows does not load the zstd module."""
    inst = Install(tmp_path)
    store = Store(inst, 22)
    store.append("p", conversation(3, "p"))
    code = (
        "import sys\nfrom memoryd.cli import main\n"
        f"rc = main(['--config', {str(inst.cfg.source)!r}, 'scan'])\n"
        "mods = [m for m in sys.modules if 'zstd' in m]\n"
        "print('ZSTD', mods)\nsys.exit(rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ZSTD []" in out.stdout
    store.conn.close()


@pytest.mark.parametrize("compressed", [False, True])
def test_zstandard_is_imported_only_when_a_row_is_compressed(tmp_path, compressed):
    """The row decoder's binding (``zstandard``) is loaded by a scan that meets a compressed
    row, and by no other."""
    inst = Install(tmp_path)
    store = Store(inst, 24)
    store.append("p", conversation(3, "p"), compress="all" if compressed else "none")
    code = (
        "import sys\nfrom memoryd.cli import main\n"
        f"rc = main(['--config', {str(inst.cfg.source)!r}, 'scan'])\n"
        "print('ZSTANDARD', 'zstandard' in sys.modules)\nsys.exit(rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"ZSTANDARD {compressed}" in out.stdout
    store.conn.close()


# --------------------------------------------------------------------------- layouts


def test_an_unknown_layout_fails_that_store_and_every_other_source_is_read(inst):
    db = inst.sessions.parent / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE journal(k TEXT, v TEXT)")
    conn.commit()
    conn.close()
    inst.append("s1.jsonl", b"".join(conversation(3)))
    config = str(inst.cfg.source)
    run = subprocess.run(
        [sys.executable, "-m", "memoryd", "--config", config, "scan", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1
    doc = json.loads(run.stdout)
    assert doc["errors"] == 1 and doc["new_hits"] == sum(expected(3).values())
    assert doc["failed_sources"] == [
        {"source": str(db), "reason": "unsupported layout (no transcript_events table)"}
    ]
    assert "1 source could not be read" in run.stderr.splitlines()[-1]
    logged = json.loads(run.stderr.splitlines()[0])
    assert logged["event"] == "ingest.source_failed" and logged["source"] == str(db)
    status = subprocess.run(
        [sys.executable, "-m", "memoryd", "--config", config, "status"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        f"transcript store {db}: unsupported layout (no transcript_events table)" in status.stdout
    )


def test_a_store_openclaw_is_still_creating_is_not_ready_yet_not_an_error(inst, capsys):
    """At the very first turn OpenClaw has made the file and some of its tables, not yet
    ``transcript_events`` nor ``user_version``: once an ``error`` line (unsupported layout)
    in the daemon's log. Now nothing is logged but at debug level, the scan is clean, and
    the store is read once it is made."""
    db = inst.sessions.parent / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE schema_meta(role TEXT, kind TEXT, version INTEGER)")
    conn.execute("CREATE TABLE session_windows(session_id TEXT, session_key TEXT)")
    conn.close()
    summary = inst.scan()
    assert summary.errors == 0 and summary.failed_sources == []
    assert "source_failed" not in capsys.readouterr().err
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TABLE session_windows")
    conn.close()
    store = Store(inst)  # the rest of its tables, and user_version
    store.add_session("s1")
    store.append("s1", conversation(3, "c"))
    summary = inst.scan()
    assert summary.errors == 0 and inst.counts() == expected(3)


def test_a_locked_store_fails_this_scan_and_is_read_by_the_next(inst, monkeypatch):
    monkeypatch.setattr(sqlite_source, "BUSY_TIMEOUT_S", 0.05)
    store = Store(inst, 24, journal="DELETE")
    store.append("k", big_conversation(3, "k"))
    inst.append("s1.jsonl", b"".join(conversation(2)))
    store.conn.execute("BEGIN EXCLUSIVE")  # OpenClaw writing, on a network file system
    stats = inst.scan()
    assert stats.errors == 1 and "locked" in stats.failed_sources[0]["reason"]
    assert inst.counts() == expected(2)
    store.conn.execute("COMMIT")
    stats = inst.scan()
    assert stats.errors == 0 and inst.counts() == expected(2, 3)
    assert inst.store.conn.execute("SELECT COUNT(*) FROM source_failures").fetchone()[0] == 0
    store.conn.close()


def test_a_corrupt_store_fails_alone(inst):
    db = inst.sessions.parent / "agent" / "openclaw-agent.sqlite"
    store = Store(inst, 22, journal="DELETE")
    for k in range(20):
        store.append(f"c{k}", conversation(10, f"c{k}x"))
    store.conn.close()
    data = bytearray(db.read_bytes())
    for page in range(2, len(data) // 4096):  # every b-tree page after the schema: garbage
        data[page * 4096 : page * 4096 + 16] = b"\x0d\xff" * 8
    db.write_bytes(bytes(data))
    inst.append("s1.jsonl", b"".join(conversation(2)))
    stats = inst.scan()
    assert stats.errors == 1 and stats.failed_sources[0]["source"] == str(db)
    assert inst.counts() == expected(2)


def test_cron_sessions_are_left_out_by_their_store_keys_without_sessions_json(inst):
    for schema in (24, 13):
        store = Store(inst, schema)
        store.add_session("user1")
        store.add_session("cron1", key="agent:main:cron:nightly")
        store.append("user1", conversation(3, "u"))
        store.append("cron1", conversation(4, "n"))
        inst.scan()
        assert inst.counts() == expected(3), schema
        store.conn.close()
        store.path.unlink()
        for side in store.path.parent.glob("openclaw-agent.sqlite-*"):
            side.unlink()
        inst.store.conn.execute("DELETE FROM hits")
        inst.store.conn.execute("DELETE FROM calls")
        inst.store.conn.execute("DELETE FROM sources")
        inst.store.conn.execute("DELETE FROM transcript_db_cursors")


def test_an_answer_in_a_continued_session_meets_the_call_of_the_one_it_continues(inst):
    """Claude-style answers name no tool: found by call id in the session and its predecessor."""
    store = Store(inst)
    store.add_session("old")
    store.add_session("new", previous="old")
    call = tx.claude_call("cc1", "mcp__openclaw__memory_search", {"query": "boat"})
    answer = tx.claude_result("cc1", tx.search_payload(["memory/a.md"]))
    store.append("new", [tx.header("new"), answer])  # "new" sorts before "old": read order
    store.append("old", [tx.header("old"), call])
    inst.scan()
    assert inst.counts() == {"memory/a.md": 1}


def test_a_header_parent_session_links_a_continued_session(inst):
    store = Store(inst)
    call = tx.claude_call("cc2", "mcp__openclaw__memory_get", {"path": "memory/b.md"})
    answer = tx.claude_result("cc2", {"path": "memory/b.md", "text": "x"})
    head = json.loads(tx.header("b-new"))
    head["parentSession"] = "/home/u/.openclaw/agents/main/sessions/a-old.jsonl"  # an old build
    store.append("a-old", [tx.header("a-old"), call])
    inst.scan()
    store.append("b-new", [tx.dump(head), answer])
    inst.scan()
    assert inst.counts() == {"memory/b.md": 1}


def test_a_forked_subagents_copies_of_the_parents_events_credit_the_parent(inst):
    """A forked subagent (``context: "fork"``) starts with byte-identical copies of its
    parent's events; its header names the parent as ``sqlite:<agent>:<sid>:<store path>``.
    The hits of the parent's calls are the parent's (the session that made the call), the
    child's own call is the child's, and the totals are those of the calls made."""
    store = Store(inst)
    parent, child = "p-parent", "a-child"  # the child's id sorts first
    store.add_session(parent, key="agent:main:main")
    store.add_session(child, key="agent:main:subagent:fork1")
    parent_events = conversation(2, "par")
    store.append(parent, parent_events)
    head = json.loads(tx.header(child))
    head["parentSession"] = f"sqlite:main:{parent}:{store.path}"
    own = [tx.call("kid0", query="boat"), tx.result("kid0", tx.search_payload(["memory/c.md"]))]
    store.append(child, [tx.dump(head), *parent_events[1:], *own])
    inst.scan()
    by_session = dict(
        inst.store.conn.execute(
            "SELECT session, COUNT(*) FROM hits GROUP BY session ORDER BY session"
        ).fetchall()
    )
    assert by_session == {parent: sum(expected(2).values()), child: 1}
    inst.scan()  # a rescan adds nothing
    assert sum(inst.counts().values()) == sum(expected(2).values()) + 1


def test_layout_is_found_by_column_names():
    tables = {
        "meta": ("k", "v"),
        "session_entries": ("session_id", "seq", "entry_json", "created_at"),
    }
    assert sqlite_source.pick_layout(tables) == sqlite_source.Layout(
        "session_entries", "session_id", "seq", "entry_json"
    )
    tables = {
        "transcript_events": (
            "session_id",
            "seq",
            "event_json",
            "created_at",
            "event_zstd",
            "event_utf8_bytes",
        ),
        "session_transcript_archives": ("archive_name", "session_id", "archive_blob"),
    }
    layout = sqlite_source.pick_layout(tables)
    assert layout is not None and (layout.zstd, layout.nbytes) == ("event_zstd", "event_utf8_bytes")
    assert sqlite_source.pick_layout({"entries": ("sid", "payload")}) is None
    assert sqlite_source.pick_layout({"log": ("session_id", "entry_json")}) == (
        sqlite_source.Layout("log", "session_id", "rowid", "entry_json")
    )


@given(st.binary(max_size=300), st.one_of(st.none(), st.integers(-5, 400)))
def test_decode_never_raises_and_never_returns_the_wrong_length(blob, n):
    event, why = sqlite_source.decode_event("null", None, blob, n, 1 << 20)
    assert (event is None) != (why is None)
    if event is not None and n is not None:
        assert len(event) == n


def test_parents_first_orders_a_chain_of_continued_sessions():
    todo = [("c", 0), ("a", 0), ("x", 0), ("b", 0)]
    order = sqlite_source.parents_first(todo, {"c": "b", "b": "a", "a": "c0"})
    assert [s for s, _ in order] == ["a", "b", "c", "x"]
    cyc = sqlite_source.parents_first([("p", 0), ("q", 0)], {"p": "q", "q": "p"})
    assert sorted(cyc) == [("p", 0), ("q", 0)]


def test_frame_helper_matches_openclaw_rule():
    assert not openclaw_compresses(b"x" * 100)
    assert openclaw_compresses(b'{"a":"' + b"y" * 2000 + b'"}')


# --------------------------------------------------------------------------- import archive


SID = "3f0c2a9e-6b1d-4e57-9a43-0d8b6f2e7c11"
SUCC = "9a1b2c3d-0000-4e57-9a43-0d8b6f2e7c11"


def test_the_import_archive_by_its_real_names_is_counted_once_with_the_store(inst):
    """The upgrade moved the JSONL files beside the store, renamed; the store holds the same."""
    live = big_conversation(5, "i")
    live[0] = tx.header(SID)
    succ = conversation(3, "j")
    succ[0] = tx.header(SUCC)
    archive = inst.sessions.parent / "session-sqlite-import-archive"
    archive.mkdir()
    stamp = "imported-2026-09-07T10-00-00.000Z"
    (archive / f"agent_main_main.{SID}.jsonl.{stamp}").write_bytes(b"".join(live))
    succ_name = f"agent_main_main.2026-03-06T05-00-00.000Z_{SUCC}.jsonl.{stamp}"
    (archive / succ_name).write_bytes(b"".join(succ))
    (archive / f"agent_main_main.{SID}.trajectory.jsonl.{stamp}").write_bytes(b"".join(live))
    first = inst.scan()
    assert first.files_seen == 2
    assert inst.counts() == expected(5, 3)
    store = Store(inst)
    store.add_session(SID)
    store.append(SID, live)
    store.add_session(SUCC, previous=SID)
    store.append(SUCC, succ)
    assert inst.scan().new_hits == 0
    assert inst.counts() == expected(5, 3)
    sessions = dict(
        inst.store.conn.execute("SELECT call_id, session FROM hits GROUP BY call_id").fetchall()
    )
    assert {sessions[f"i{k}"] for k in range(5)} == {SID}  # the header's id, as in the store
    assert {sessions[f"j{k}"] for k in range(3)} == {SUCC}
    store.conn.close()


def test_an_archive_copy_without_a_header_is_named_by_its_file_name(inst):
    archive = inst.sessions.parent / "session-sqlite-import-archive"
    archive.mkdir()
    name = f"agent_main_main.{SID}.jsonl.reset.2026-03-06T05-00-00.000Z.imported-2026-09-07T10"
    (archive / name).write_bytes(b"".join(conversation(2)[1:]))
    inst.scan()
    assert inst.counts() == expected(2)
    assert {r[0] for r in inst.store.conn.execute("SELECT session FROM hits")} == {SID}


# --------------------------------------------------------------------------- JSONL rewrite


def test_a_transcript_rewritten_in_place_with_the_same_start_and_a_longer_tail_is_reread(inst):
    lines = conversation(6)
    p = inst.append("s1.jsonl", b"".join(lines[:9]))  # calls c0 and c1
    inst.scan()
    # `cat new > F`: the first 1.6 KB (more than the head fingerprint) are the same, the lines
    # after them differ, and the file is longer than the offset read
    rewritten = lines[:5] + conversation(6, "z")[5:]
    assert sum(map(len, lines[:5])) > HEAD_MAX
    with open(p, "r+b") as fh:
        fh.write(b"".join(rewritten))
        fh.truncate()
    assert p.stat().st_size > sum(map(len, lines[:9]))
    stats = inst.scan()
    assert stats.resets == 1
    want = expected(2)
    for path, n in expected(6).items():  # z1..z5 are new; c0 is the first call of both
        want[path] = want.get(path, 0) + n
    for path, n in expected(1).items():
        want[path] -= n
    assert inst.counts() == want
    calls = {r[0] for r in inst.store.conn.execute("SELECT DISTINCT call_id FROM hits")}
    assert calls == {"c0", "c1"} | {f"z{k}" for k in range(1, 6)}


def test_an_append_is_still_read_from_the_offset(inst):
    lines = conversation(6)
    inst.append("s1.jsonl", b"".join(lines[:9]))
    inst.scan()
    inst.append("s1.jsonl", b"".join(lines[9:]))
    stats = inst.scan()
    assert stats.resets == 0 and stats.bytes_read == sum(map(len, lines[9:]))
    assert inst.counts() == expected(6)


# --------------------------------------------------------------------------- archived events

def cold_records(sid: str, lines: list[bytes], key: str = "agent:main:main") -> bytes:
    """A cold archive's JSONL records, zstd-compressed, as OpenClaw's cold storage writes."""
    recs = [{"kind": "header", "sessionId": sid, "session_key": key}]
    recs += [{"kind": "identity", "value": {"id": sid}}]
    for seq, line in enumerate(lines):
        text = line.rstrip(b"\n").decode()
        recs.append({"kind": "event", "row": {"seq": seq, "event_json": text, "created_at": 0}})
    recs.append({"kind": "fts", "rows": 3})
    return frame(b"".join(json.dumps(r).encode() + b"\n" for r in recs))


def test_sessions_deleted_or_cold_stored_while_memoryd_was_stopped_are_counted_once(inst):
    store = archive_store(inst)
    seen = big_conversation(6, "d")
    store.add_session("del")
    store.append("del", seen[:9])  # memoryd sees the first two calls, then stops
    inst.scan()
    assert inst.counts() == expected(2)
    inst.restart()
    # While it is stopped: the session goes on, then is deleted (table row + derived file)
    store.append("del", seen[9:])
    text = delete_session(store, "del")
    store.conn.execute(
        "INSERT INTO session_transcript_archives VALUES (?, 'del', 'agent:main:main', "
        "'deleted', 'zstd', ?, 1)",
        (f"del.jsonl.deleted.{STAMP}", frame(text)),
    )
    (inst.sessions / f"del.jsonl.deleted.{STAMP}.zst").write_bytes(frame(text))
    # ... a session never seen is deleted too (stored uncompressed) ...
    store.add_session("gone")
    store.append("gone", conversation(3, "g"))
    text = delete_session(store, "gone")
    store.conn.execute(
        "INSERT INTO session_transcript_archives VALUES ('gone-archive', 'gone', "
        "'agent:main:main', 'reset', 'identity', ?, 2)",
        (text,),
    )
    # ... one goes to cold storage as a file, one into the cold table ...
    store.add_session("ice")
    store.append("ice", conversation(4, "i"))
    cold = store.path.parent / "cold"
    cold.mkdir()
    (cold / f"{'ab' * 32}.jsonl.zst").write_bytes(cold_records("ice", conversation(4, "i")))
    delete_session(store, "ice")
    store.conn.execute(
        "INSERT INTO session_transcript_cold_archives VALUES ('k1', 'frost', ?, 3)",
        (cold_records("frost", big_conversation(2, "f")),),
    )
    # ... and a cron session's archive, whose hits are not the user's
    store.conn.execute(
        "INSERT INTO session_transcript_archives VALUES ('cron-a', 'cronA', "
        "'agent:main:cron:nightly', 'deleted', 'zstd', ?, 4)",
        (frame(b"".join(conversation(5, "n"))),),
    )
    stats = inst.scan()
    assert stats.errors == 0 and stats.malformed == 0
    assert inst.counts() == expected(6, 3, 4, 2)
    again = inst.scan()
    assert again.files_read == 0 and again.new_hits == 0
    store.conn.execute("INSERT INTO transcript_events VALUES ('x', 0, '{}', 0, NULL, NULL, NULL)")
    again = inst.scan()  # the store changed: its archives are listed, none read again
    assert again.files_read == 1 and again.new_hits == 0 and again.bytes_read == 2
    store.conn.close()


def test_a_corrupt_archive_is_counted_malformed_and_not_read_again(inst, capsys):
    store = archive_store(inst)
    good = frame(b"".join(conversation(3, "c")))
    store.conn.execute(
        "INSERT INTO session_transcript_archives VALUES ('bad', 'b', NULL, 'deleted', 'zstd', "
        "?, 0)",
        (good[: len(good) // 2] + b"\0" * 40,),
    )
    store.conn.execute(
        "INSERT INTO session_transcript_archives VALUES ('ok', 'o', NULL, 'deleted', 'zstd', ?, 0)",
        (frame(b"".join(conversation(2, "o"))),),
    )
    stats = inst.scan()
    assert stats.malformed == 1 and stats.errors == 0
    assert {"memory/a.md", "memory/b.md"} <= set(inst.counts())
    assert "ingest.malformed_archive" in capsys.readouterr().err
    store.conn.execute("INSERT INTO transcript_events VALUES ('x', 0, '{}', 0, NULL, NULL, NULL)")
    assert inst.scan().malformed == 0
    store.conn.close()


def test_unknown_archive_columns_are_read_past_without_a_warning(inst, capsys):
    store = Store(inst)
    store.conn.execute(
        "CREATE TABLE session_transcript_archives(archive_name TEXT UNIQUE, session_id TEXT, "
        "encoding TEXT, archive_blob BLOB, checksum TEXT, byte_count INTEGER)"
    )
    store.conn.execute(
        "INSERT INTO session_transcript_archives VALUES ('a', 's', 'zstd', ?, 'x', 1)",
        (frame(b"".join(conversation(2))),),
    )
    inst.scan()
    assert inst.counts() == expected(2)
    assert capsys.readouterr().err == ""  # nothing the user could act on: logged at debug
    store.conn.close()


def test_a_session_rewritten_in_place_is_read_again_from_its_start(inst):
    store = Store(inst)
    store.append("r", conversation(4, "r"))
    inst.scan()
    # the rows are removed and written again, shorter, with other calls
    store.conn.execute("DELETE FROM transcript_events WHERE session_id = 'r'")
    store.append("r", conversation(2, "w"))
    inst.scan()
    assert inst.counts() == merge_counts(expected(4), expected(2))
    # rows below the cursor rewritten in place, with a watermark saying so
    store.conn.execute(
        "CREATE TABLE transcript_rewrite_watermarks(session_id TEXT PRIMARY KEY, seq INTEGER, "
        "rewritten_at INTEGER)"
    )
    store.conn.execute("INSERT INTO transcript_rewrite_watermarks VALUES ('r', 4, 1)")
    inst.scan()  # a watermark first seen for a session read from its start: read again
    before = inst.counts()
    line = tx.call("v0", query="x")
    store.conn.execute(
        "UPDATE transcript_events SET event_json = ? WHERE session_id = 'r' AND seq = 2",
        (line.rstrip(b"\n").decode(),),
    )
    store.conn.execute(
        "UPDATE transcript_events SET event_json = ? WHERE session_id = 'r' AND seq = 4",
        (tx.result("v0", tx.search_payload(["memory/deep/c.md"])).rstrip(b"\n").decode(),),
    )
    store.conn.execute("UPDATE transcript_rewrite_watermarks SET rewritten_at = 2")
    inst.scan()
    after = inst.counts()
    assert after.get("memory/deep/c.md", 0) == before.get("memory/deep/c.md", 0) + 1
    store.conn.close()


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    plan=st.lists(
        st.tuples(
            st.sampled_from(["grow", "scan", "delete", "cold", "restart"]),
            st.integers(0, 2),
            st.booleans(),
        ),
        max_size=14,
    )
)
def test_any_order_of_writes_scans_and_deletions_gives_the_jsonl_counts(tmp_path_factory, plan):
    """Sessions grow (plain or compressed rows), get scanned, deleted into an archive or sent
    to cold storage while memoryd is stopped: the final counts are the conversations' counts."""
    inst = Install(tmp_path_factory.mktemp("ops"))
    store = archive_store(inst)
    convs = [big_conversation(3, f"x{k}_") for k in range(3)]
    written = [0, 0, 0]
    gone = [False, False, False]
    archived = 0

    def grow(k: int, packed: bool, upto: int | None = None) -> None:
        lines = convs[k]
        stop = len(lines) if upto is None else min(upto, len(lines))
        for seq in range(written[k], stop):
            store.insert(f"s{k}", seq, lines[seq].rstrip(b"\n"), packed and seq > 0)
        written[k] = max(written[k], stop)

    for op, k, flag in plan:
        if gone[k]:
            continue
        if op == "grow":
            grow(k, flag, written[k] + 5)
        elif op == "scan":
            inst.scan()
        elif op == "restart":
            inst.restart()
        elif op in ("delete", "cold"):
            grow(k, flag)  # the session ends, then leaves the live table
            text = delete_session(store, f"s{k}")
            archived += 1
            if op == "delete":
                blob, encoding = (frame(text), "zstd") if flag else (text, "identity")
                store.conn.execute(
                    "INSERT INTO session_transcript_archives VALUES (?, ?, NULL, 'deleted', ?, "
                    "?, 0)",
                    (f"a{archived}", f"s{k}", encoding, blob),
                )
            else:
                store.conn.execute(
                    "INSERT INTO session_transcript_cold_archives VALUES (?, ?, ?, 0)",
                    (f"c{archived}", f"s{k}", cold_records(f"s{k}", convs[k])),
                )
            gone[k] = True
    for k in range(3):
        if not gone[k]:
            grow(k, True)
    inst.scan()
    assert inst.counts() == expected(3, 3, 3)
    assert inst.scan().new_hits == 0
    store.conn.close()
    inst.store.close()


def test_unnamed_answers_in_plain_rows_are_found_by_id_within_and_across_batches(inst):
    """Claude-style answers name no tool and hold no ``memory_``: SQLite's prefilter passes
    them by the waiting call's id, in the same batch of rows or a later one."""
    store = Store(inst)
    lines = [tx.header("cc")]
    for i in range(700):  # more needle rows than one batch of the reader (500)
        path = FILES[i % len(FILES)]
        lines.append(tx.claude_call(f"u{i}", "mcp__openclaw__memory_get", {"path": path}))
        lines.append(tx.chatter(i))
        lines.append(tx.claude_result(f"u{i}", {"path": path, "text": "x"}))
    store.conn.execute("BEGIN")
    store.append("cc", lines, compress="none")
    store.conn.execute("COMMIT")
    stats = inst.scan()
    assert sum(inst.counts().values()) == 700 and stats.malformed == 0
    assert stats.bytes_read == sum(len(ln) - 1 for ln in lines)


def test_a_store_written_just_before_it_was_read_is_looked_at_again(inst):
    """Rows committed a moment before a read may not be visible yet: the read is provisional
    (the daemon scans again after SETTLE_S) until the store's files are older than that."""
    import os
    import time

    store = Store(inst)
    store.append("p", conversation(2, "p"))
    soon = time.time() + 600  # "just written", however slow this machine is today
    for f in store.path.parent.glob("openclaw-agent.sqlite*"):
        os.utime(f, (soon, soon))
    first = inst.scan()
    assert first.retry_in == sqlite_source.SETTLE_S and inst.counts() == expected(2)
    recorded = "SELECT mtime_ns FROM sources WHERE kind = 'sqlite'"
    assert inst.store.conn.execute(recorded).fetchone()[0] == -1
    old = 1_700_000_000
    for f in store.path.parent.glob("openclaw-agent.sqlite*"):
        os.utime(f, (old, old))
    again = inst.scan()  # looked at again: nothing new, not counted as read, now final
    assert again.files_read == 0 and again.retry_in == 0 and again.new_hits == 0
    assert inst.store.conn.execute(recorded).fetchone()[0] == old * 10**9
    store.conn.close()


def test_a_cron_session_deleted_into_a_zst_file_is_left_out_by_the_store_keys(inst):
    """No sessions.json: the store's session_windows name the cron session, and its archive
    file (read after the store in a scan) is left out too."""
    store = Store(inst)
    store.add_session("cronZ", key="agent:main:cron:hourly")
    store.add_session("userZ")
    store.append("userZ", conversation(2, "u"))
    (inst.sessions / f"cronZ.jsonl.deleted.{STAMP}.zst").write_bytes(
        frame(b"".join(conversation(3, "z")))
    )
    inst.scan()
    assert inst.counts() == expected(2)
    store.conn.close()


@given(st.binary(max_size=400))
def test_archive_records_and_lines_never_raise(data):
    import io

    from memoryd.ingest import archives

    rec = archives.read_record(data)
    assert rec.kind in ("header", "event", "ignored", "line")
    lines = list(archives.iter_lines(io.BytesIO(data), 64))
    assert sum(len(x) for x in lines if x is not None) <= len(data)
    assert all(x is None or len(x) <= 64 for x in lines)


def test_cold_records_say_what_they_hold():
    from memoryd.ingest import archives

    header = archives.read_record(b'{"kind":"header","sessionId":"s1","session_key":"k"}')
    assert header == archives.Record("header", b"", "s1", "k")
    event = archives.read_record(
        json.dumps({"kind": "event", "row": {"seq": 3, "event_json": '{"a":"memory_"}'}}).encode()
    )
    assert event == archives.Record("event", b'{"a":"memory_"}')
    assert archives.read_record(b'{"kind":"fts","rows":[]}').kind == "ignored"
    line = b'{"type":"message","kind":"header","message":{}}'  # a transcript line, not a record
    assert archives.read_record(line) == archives.Record("line", line)


def test_a_cron_archive_file_read_by_a_later_process_is_left_out_too(inst):
    """The store is unchanged (not opened by the scan), yet its keys still name the cron
    session of an archive file that appears later."""
    store = Store(inst)
    store.add_session("cronY", key="agent:main:cron:daily")
    store.append("userY", conversation(1, "u"))
    inst.scan()
    inst.restart()
    old = 1_700_000_000
    for f in store.path.parent.glob("openclaw-agent.sqlite*"):
        os.utime(f, (old, old))
    inst.scan()  # the store's signature is now final: the next scans do not open it
    inst.restart()
    (inst.sessions / f"cronY.jsonl.deleted.{STAMP}.zst").write_bytes(
        frame(b"".join(conversation(3, "y")))
    )
    inst.scan()
    assert inst.counts() == expected(1)
    store.conn.close()


# ------------------------------------------------------------------------ import-archive names

_KEYS = st.one_of(
    st.builds(lambda a, j: f"agent:{a}:cron:{j}", st.from_regex(r"[a-z]{1,8}", fullmatch=True),
              st.from_regex(r"[0-9a-f]{8}", fullmatch=True)),
    st.builds(lambda a, s: f"agent:{a}:{s}", st.from_regex(r"[a-z]{1,8}", fullmatch=True),
              st.sampled_from(["main", "telegram:dm:42", "heartbeat", "session:x",
                               "heartbeat-notes", "main:heartbeat", "cron-notes",
                               "dreaming-narrative-light-3f9a0c1d2e4b-1772010842000"])),
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    key=_KEYS,
    sid=st.uuids().map(str),
    successor=st.booleans(),
    renamed=st.sampled_from(["", ".reset.2026-03-06T05-00-00.000Z"]),
)
def test_an_import_archive_name_gives_back_its_key_slug(key, sid, successor, renamed):
    """``<keySlug>.<original file>.imported-<ts>``: the slug, whatever the original name,
    and whether it is cron / heartbeat / dream-diary traffic exactly when the key says so."""
    from memoryd.ingest import sources as src
    from support.openclaw_store import key_slug

    original = f"2026-08-11T22-27-27.137Z_{sid}.jsonl" if successor else f"{sid}.jsonl"
    name = f"{key_slug(key)}.{original}{renamed}.imported-2026-09-21T14-13-20.000Z"
    assert src.classify_name(name) == src.IMPORTED
    assert src.imported_session_id(name) == sid
    slug = src.imported_key_slug(name, sid)
    assert slug == key_slug(key)
    assert src.is_synthetic_slug(slug) == src.is_synthetic_key(key)
    # by the key's structure, never a substring: `heartbeat-notes` is a user's session
    assert src.is_synthetic_key(key) == (
        ":cron:" in key or key.endswith(":heartbeat") or ":dreaming-narrative-" in key
    )


@pytest.mark.parametrize("compress", ["none", "all"])
def test_an_event_over_max_line_bytes_is_skipped_as_the_same_jsonl_line_is(tmp_path, compress):
    """``ingest.max_line_bytes`` holds for the store's events as for transcript lines: a
    memory search answer over it is not counted, plain or compressed, exactly as its line in
    a JSONL transcript is skipped; the rest of the session is read. (A plain row over it was
    read whole.)"""
    limit = 20_000
    lines = conversation(4, "b")
    huge = {"path": FILES[0], "score": 0.9, "source": "memory", "snippet": "x" * (2 * limit)}
    # A first answer to call b2, before its own: counted, it would stand for b2's hits.
    lines.insert(-4, tx.result("b2", {"results": [huge]}))
    config = f"[ingest]\nchunk_bytes = 4096\nmax_line_bytes = {limit}\n"
    files = Install(tmp_path / "jsonl", extra_config=config)
    files.append("b.jsonl", b"".join(lines))
    store_inst = Install(tmp_path / "store", extra_config=config)
    store = Store(store_inst)
    store.append("b", lines, compress=compress)
    assert files.scan().oversized == 1
    stats = store_inst.scan()
    assert stats.errors == 0 and stats.malformed == 1
    assert store_inst.counts() == files.counts() == expected(4)
    store.conn.close()
    files.store.close()
    store_inst.store.close()


def _user(text: str, **extra) -> bytes:
    """A user message as 2026.9.6 writes it (tests/live/OBSERVED.md)."""
    msg = {"role": "user", "content": text, "timestamp": 1796160039627, **extra}
    return tx.dump({"type": "message", "id": f"u-{len(text)}", "message": msg})


_HEARTBEAT_POLL = {"provenance": {"kind": "internal_system", "sourceTool": "heartbeat"}}


def _lookup(cid: str, path: str) -> list[bytes]:
    return [tx.call(cid, query=cid), tx.result(cid, tx.search_payload([path]))]


@pytest.mark.parametrize("count_heartbeat", [False, True])
def test_runs_are_told_by_their_turns_markers_never_by_a_word_in_the_key(tmp_path, count_heartbeat):
    """Issue 29: a user session keyed ``agent:main:heartbeat-notes`` was dropped, while the
    heartbeat that runs in ``agent:main:main`` and a cron job pinned to a named session
    were counted. The heartbeat poll and the ``[cron:<jobId> <name>]`` turn are left out
    (by default), in whatever session they run; the user's turns around them count. A scan
    that stops inside a heartbeat turn leaves its answer out in the next process too."""
    extra = f"count_heartbeat = {str(count_heartbeat).lower()}"
    inst = Install(tmp_path, openclaw_extra=extra)
    store = Store(inst)
    store.add_session("s-main", key="agent:main:main")
    store.add_session("s-notes", key="agent:main:heartbeat-notes")
    store.add_session("s-pinned", key="agent:main:t4-pinned")
    store.append("s-notes", [tx.header("s-notes"), _user("notes"), *_lookup("n1", FILES[0])])
    store.append(
        "s-main",
        [
            tx.header("s-main"),
            _user("main, from the user"),
            *_lookup("m1", FILES[1]),
            _user("[OpenClaw heartbeat poll]", **_HEARTBEAT_POLL),
            tx.call("hb1", query="hb"),
        ],
    )
    store.append(
        "s-pinned",
        [
            tx.header("s-pinned"),
            _user("[cron:7f9304e5-7bf0-49e0-816a-2d93a2103a7e t4] cron pinned\nCurrent time: …"),
            *_lookup("c1", FILES[2]),
        ],
    )
    inst.scan()
    inst.restart()  # the next scan is another process: the turn it resumes in is read back
    store.append(
        "s-main",
        [
            tx.result("hb1", tx.search_payload([FILES[3]])),
            _user("back to the user"),
            *_lookup("m2", FILES[4]),
        ],
    )
    inst.scan()
    want = {FILES[0]: 1, FILES[1]: 1, FILES[4]: 1}
    if count_heartbeat:
        want[FILES[3]] = 1
    assert inst.counts() == want
    inst.scan()
    assert inst.counts() == want  # a rescan adds nothing
