"""OpenClaw's SQLite transcript store, read by the real ``memoryd`` (issue 9).

Current OpenClaw installs keep transcripts in ``agents/<id>/agent/openclaw-agent.sqlite``
(openclaw-formats.md §2b): rows in three layouts (schema 13, 22, 24), most memory
results zstd-compressed, sessions deleted into archive rows and ``.zst`` files, moved
to cold storage, rewritten in place, and the JSONL files of the upgrade kept in an
import archive. The stores here are written by :mod:`support.openclaw_store`
from a :mod:`support.corpus` install, so the corpus's reference counts apply: whatever
layout and whatever OpenClaw did between scans, memoryd must count exactly those hits,
once. The first tests check the writer itself with plain ``sqlite3`` and ``zstd``;
every other test runs the ``memoryd`` command on real files (in the pytest process,
:mod:`support.inprocess`; a locked store is locked by another process).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from support import transcripts as tx
from support.corpus import CorpusTruth, generate, iso_ms
from support.inprocess import memoryd as run_memoryd
from support.openclaw_store import (
    AgentStore,
    CorpusSession,
    sessions_from_corpus,
    store_from_corpus,
)
from support.report_counts import counts_of, diff

try:
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:
    from backports import zstd  # type: ignore[no-redef]

NOW = 1_790_000_000.0  # 2026-09-21T12:53:20Z: the corpus spans the 90 days before it
DB = "openclaw-agent.sqlite"


# ------------------------------------------------------------------------ running memoryd


def write_config(root: Path, state_dir: Path, workspace: Path, name: str) -> Path:
    """A memoryd config of its own (own state folder) for one OpenClaw state folder."""
    cfg = root / f"memoryd-{name}.toml"
    cfg.write_text(
        f"[openclaw]\nstate_dir = {json.dumps(str(state_dir))}\n"
        f"workspace = {json.dumps(str(workspace))}\n"
        f"[state]\ndir = {json.dumps(str(root / f'md-{name}'))}\n",
        encoding="utf-8",
    )
    return cfg


def memoryd(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))
    return run_memoryd(args, env=env)


def scan(cfg: Path) -> tuple[int, dict]:
    """``memoryd scan --json``: (exit code, summary). A traceback is a failure in itself."""
    proc = memoryd(cfg, "scan", "--json")
    assert "Traceback" not in proc.stderr, f"scan crashed:\n{proc.stderr[-3000:]}"
    try:
        summary = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"scan exited {proc.returncode} without a JSON summary:\n"
            f"{proc.stdout[-1000:]}\n{proc.stderr[-2000:]}"
        ) from None
    return proc.returncode, summary


def scan_ok(cfg: Path) -> dict:
    """A scan that must read every source: exit 0 and no failed source."""
    code, summary = scan(cfg)
    assert code == 0, f"scan exited {code}: {summary}"
    assert summary.get("failed_sources", []) == [], summary
    return summary


def counts(cfg: Path, window: str = "all") -> dict[str, int]:
    """Hits per memory file (zeros included), from ``memoryd hits --json --no-scan``."""
    flag = ["--all"] if window == "all" else ["--days", window]
    proc = memoryd(cfg, "hits", *flag, "--json", "--no-scan")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return counts_of(json.loads(proc.stdout))


def assert_exact_twice(cfg: Path, truth: CorpusTruth) -> None:
    """The counts are the corpus's, and a scan of the unchanged install adds nothing and
    reads nothing (archives already read are remembered, an unchanged store not reopened)."""
    assert diff(truth.counts(None), counts(cfg)) == {}
    again = scan_ok(cfg)
    assert again["new_hits"] == 0, again
    assert again["bytes_read"] == 0, again
    assert diff(truth.counts(None), counts(cfg)) == {}


# ------------------------------------------------------------------------ the corpus


@dataclass(frozen=True)
class Corpus:
    truth: CorpusTruth
    root: Path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """~1.5 MB of conversations with every variant, two agents, one workspace."""
    root = tmp_path_factory.mktemp("store-corpus")
    truth = generate(
        root / "corpus",
        seed=20269,
        sessions=24,
        target_bytes=1_500_000,
        now=NOW,
        agents=("main", "ops"),
    )
    return Corpus(truth, root)


def jsonl_lines(path: Path) -> list[str]:
    """A transcript's JSON lines as text: the test's own reading of a JSONL file."""
    out = []
    for raw in path.read_bytes().split(b"\n"):
        text = raw.rstrip(b"\r").decode("utf-8", "replace")
        if not text.strip():
            continue
        try:
            rec = json.loads(text)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(text)
    return out


def read_store(db: Path) -> dict[str, list[str]]:
    """Every live session's events in seq order, decompressed: plain sqlite3 and zstd."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "transcript_events" not in tables:
        rows = conn.execute(
            "SELECT session_id, seq, entry_json, NULL, NULL FROM session_entries"
        ).fetchall()
    elif "event_zstd" in {r[1] for r in conn.execute("PRAGMA table_info(transcript_events)")}:
        rows = conn.execute(
            "SELECT session_id, seq, event_json, event_zstd, event_utf8_bytes "
            "FROM transcript_events"
        ).fetchall()
    else:
        rows = conn.execute(
            "SELECT session_id, seq, event_json, NULL, NULL FROM transcript_events"
        ).fetchall()
    conn.close()
    out: dict[str, list[tuple[int, str]]] = {}
    for sid, seq, text, frame, size in rows:
        if frame is not None:
            assert text is None
            data = zstd.decompress(frame)
            assert len(data) == size
            text = data.decode("utf-8")
        out.setdefault(sid, []).append((seq, text))
    return {sid: [t for _, t in sorted(evs)] for sid, evs in out.items()}


def everything_kept(state: Path) -> dict[str, list[str]]:
    """Every session's events wherever OpenClaw keeps them: live rows, archive rows, derived
    ``.zst`` files, cold files and rows (plain sqlite3 + zstd, the test's own reading).

    A session found in several places must read the same in each (or be a prefix: rows
    seen live before the rest was archived); the longest is returned.
    """
    found: dict[str, list[list[str]]] = {}

    def add(sid: str, lines: list[str]) -> None:
        found.setdefault(sid, []).append(lines)

    def jsonl(data: bytes) -> list[str]:
        return [ln for ln in data.decode("utf-8").split("\n") if ln]

    for agent_dir in sorted((state / "agents").iterdir()):
        db = agent_dir / "agent" / DB
        if db.exists():
            for sid, lines in read_store(db).items():
                add(sid, lines)
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            for sid, enc, blob in conn.execute(
                "SELECT session_id, encoding, archive_blob FROM session_transcript_archives"
            ):
                add(sid, jsonl(zstd.decompress(blob) if enc == "zstd" else blob))
            cold_blobs = [
                r[0]
                for r in conn.execute("SELECT archive_blob FROM session_transcript_cold_archives")
            ]
            conn.close()
            cold_blobs += [p.read_bytes() for p in (agent_dir / "agent" / "cold").glob("*.zst")]
            for blob in cold_blobs:
                recs = [json.loads(r) for r in zstd.decompress(blob).splitlines()]
                sid = recs[0]["session_id"]
                rows = sorted(
                    (r["row"]["seq"], r["row"]["event_json"])
                    for r in recs[1:]
                    if r["kind"] == "event"
                )
                add(sid, [t for _, t in rows])
        for f in (agent_dir / "sessions").glob("*.jsonl.*.zst"):
            add(f.name.split(".jsonl", 1)[0], jsonl(zstd.decompress(f.read_bytes())))
    out = {}
    for sid, copies in found.items():
        longest = max(copies, key=len)
        for c in copies:
            assert c == longest[: len(c)], f"two copies of {sid} disagree"
        out[sid] = longest
    return out


def assert_every_conversation_is_kept(state: Path, sessions: list[CorpusSession]) -> None:
    """The install holds every corpus line (so the corpus's counts are reachable): the
    check that a failing count is memoryd's, not the fixture's."""
    kept = everything_kept(state)
    for s in sessions:
        assert kept.get(s.session_id) == list(s.lines), s.session_id


def without_parent(line: str) -> dict:
    head = json.loads(line)
    head.pop("parentSession", None)
    return head


# ------------------------------------------------------------------------ the writer itself


@pytest.mark.parametrize("schema", [13, 22, 24])
def test_the_store_holds_every_line_of_the_corpus_exactly(corpus: Corpus, tmp_path, schema):
    """Read back with plain sqlite3 + zstd, each session is its JSONL file's lines."""
    inst = store_from_corpus(corpus.truth, tmp_path, schema=schema, import_archive=True)
    stored: dict[str, list[str]] = {}
    for db in inst.stores.values():
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == schema
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()
        stored.update(read_store(db))
    assert not (inst.state_dir / "agents" / "main" / "sessions" / "sessions.json").exists()
    assert len(stored) == len(corpus.truth.transcripts)
    for t in corpus.truth.transcripts:
        want = jsonl_lines(t.path)
        sid = json.loads(want[0])["id"]
        got = stored[sid]
        assert len(got) == len(want), t.path.name
        assert got[1:] == want[1:], t.path.name  # seq 0 is the header, then every line
        head = json.loads(got[0])
        if "parentSession" in json.loads(want[0]):  # a successor: its parent, by path or id
            parent = json.loads(want[0])["parentSession"].rsplit("/", 1)[-1].split(".jsonl")[0]
            assert head["parentSession"] in (parent, json.loads(want[0])["parentSession"])
        assert without_parent(got[0]) == without_parent(want[0])
    # the import archive: byte-for-byte copies under OpenClaw's names
    names = sorted(p.name for p in inst.import_archive)
    assert len(names) == len(corpus.truth.transcripts)
    for t in corpus.truth.transcripts:
        (copy,) = [p for p in inst.import_archive if f".{t.path.name}.imported-" in p.name]
        assert copy.read_bytes() == t.path.read_bytes()
        assert copy.parent.name == "session-sqlite-import-archive"
        assert copy.parent.parent.name == t.agent
        assert copy.name.startswith("agent_")


def test_the_layouts_have_the_real_columns(tmp_path):
    want = {
        13: {
            "sessions": ["session_id", "session_key", "created_at", "updated_at"],
            "session_entries": ["session_id", "seq", "entry_json", "created_at"],
        },
        22: {
            "session_nodes": ["session_key", "current_session_id", "entry_json", "updated_at"],
            "session_windows": [
                "session_id", "session_key", "previous_session_id", "reason", "created_at"
            ],
            "transcript_events": ["session_id", "seq", "event_json", "created_at"],
        },
    }  # fmt: skip
    want[24] = {
        **want[22],
        "transcript_events": [
            *want[22]["transcript_events"], "event_zstd", "event_utf8_bytes", "navigation_json"
        ],
        "session_transcript_archives": [
            "archive_name", "session_id", "session_key", "reason", "encoding", "archive_blob",
            "created_at",
        ],
        "session_transcript_cold_archives": [
            "archive_key", "session_id", "archive_blob", "created_at"
        ],
        "transcript_rewrite_watermarks": ["session_id", "seq", "rewritten_at"],
    }  # fmt: skip
    for schema, tables in want.items():
        with AgentStore(tmp_path / str(schema), schema=schema) as store:
            found = {
                r[0]
                for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            assert found == set(tables), schema
            for table, columns in tables.items():
                info = store.conn.execute(f"PRAGMA table_info({table})").fetchall()
                assert [c[1] for c in info] == columns, (schema, table)
            if schema >= 22:
                with pytest.raises(sqlite3.IntegrityError):  # the reason CHECK is there
                    store.conn.execute(
                        "INSERT INTO session_windows VALUES ('s', 'k', NULL, 'nope', 0)"
                    )


def test_rows_are_compressed_as_openclaw_compresses_them(corpus: Corpus, tmp_path):
    inst = store_from_corpus(corpus.truth, tmp_path, schema=24)
    conn = sqlite3.connect(inst.stores["main"])
    rows = conn.execute(
        "SELECT seq, event_json, event_zstd, event_utf8_bytes, navigation_json "
        "FROM transcript_events"
    ).fetchall()
    compressed = results = results_compressed = mid_sized = 0
    for seq, text, frame, size, nav in rows:
        assert isinstance(json.loads(nav), dict)  # navigation, never the event itself
        data = text.encode() if frame is None else zstd.decompress(frame)
        is_result = b"memory_" in data and (b'"toolResult"' in data or b'"tool_result"' in data)
        results += is_result
        mid_sized += is_result and 1024 <= len(data) <= 4096
        if frame is None:
            assert size is None
            if seq > 0 and 1024 <= len(data) <= 4 << 20:  # eligible, but not worth it
                p = zstd.CompressionParameter
                trial = zstd.compress(data, options={p.compression_level: 1, p.checksum_flag: 1})
                saved = len(data) - len(trial)
                assert saved < 64 or saved < 0.1 * len(data)
            continue
        compressed += 1
        results_compressed += is_result
        assert seq > 0, "the header is never compressed"
        assert text is None and size == len(data)
        assert 1024 <= len(data) <= 4 << 20
        assert len(data) - len(frame) >= max(64, 0.1 * len(data))
        assert frame[:4] == b"\x28\xb5\x2f\xfd" and frame[4] & 0x04, "a zstd frame, checksummed"
    assert compressed >= 50
    assert mid_sized >= 15, "many memory results are 1-4 KiB"
    assert results_compressed >= 0.6 * results, "most memory results sit in compressed rows"


def test_deletes_cold_storage_and_rewrites_leave_what_openclaw_leaves(corpus: Corpus, tmp_path):
    sessions = [s for s in sessions_from_corpus(corpus.truth) if s.agent == "main"]
    a, b, c, d = sessions[:4]
    state = tmp_path / "state"
    with AgentStore(state, schema=24) as store:
        for s in (a, b, c, d):
            store.add_session(s.lines, key=s.key, previous=s.previous)
        gone = store.delete_session(a.session_id, at_ms=int(NOW * 1000))
        kept = store.delete_session(b.session_id, encoding="identity", derived_file=False)
        key = store.cold_store(c.session_id, into="file")
        store.rewrite(d.session_id, 2, d.lines[3:])
        conn = store.conn
        live = {r[0] for r in conn.execute("SELECT DISTINCT session_id FROM transcript_events")}
        assert live == {d.session_id}  # deleted, deleted, moved to cold storage, rewritten
        # a deleted session: an archive row and a derived .zst file, both its JSONL text
        text = "".join(line + "\n" for line in a.lines).encode()
        row = conn.execute(
            "SELECT session_id, session_key, reason, encoding, archive_blob "
            "FROM session_transcript_archives WHERE archive_name = ?",
            (gone.archive_name,),
        ).fetchone()
        assert row[:4] == (a.session_id, a.key, "deleted", "zstd")
        assert zstd.decompress(row[4]) == text
        assert gone.file == state / "agents/main/sessions" / f"{gone.archive_name}.zst"
        assert gone.file.name.startswith(f"{a.session_id}.jsonl.deleted.2026-09-21T")
        assert zstd.decompress(gone.file.read_bytes()) == text
        blob = conn.execute(
            "SELECT archive_blob FROM session_transcript_archives WHERE session_id = ?",
            (b.session_id,),
        ).fetchone()[0]
        assert blob == "".join(line + "\n" for line in b.lines).encode()
        assert kept.file is None
        # cold storage: zstd JSONL records, the events' text in seq order
        cold = state / "agents/main/agent/cold" / f"{key}.jsonl.zst"
        records = [json.loads(r) for r in zstd.decompress(cold.read_bytes()).splitlines()]
        assert records[0] == {"kind": "header", "session_id": c.session_id, "session_key": c.key}
        assert records[-1]["kind"] == "index"
        events = [r["row"] for r in records if r["kind"] == "event"]
        assert [e["seq"] for e in events] == list(range(len(c.lines)))
        assert [e["event_json"] for e in events] == list(c.lines)
        # an in-place rewrite: fewer rows than before, and a watermark
        assert read_store(store.path)[d.session_id] == [*d.lines[:2], *d.lines[3:]]
        assert conn.execute(
            "SELECT session_id, seq FROM transcript_rewrite_watermarks"
        ).fetchall() == [(d.session_id, 2)]


def test_a_schema_22_store_with_its_sessions_json_left_gives_the_jsonl_counts(
    corpus: Corpus, tmp_path
):
    """An upgraded install that kept sessions.json: plain rows, the oldest store layout read."""
    inst = store_from_corpus(corpus.truth, tmp_path, schema=22)
    for agent in ("main", "ops"):
        folder = inst.state_dir / "agents" / agent / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        index = corpus.truth.state_dir / "agents" / agent / "sessions" / "sessions.json"
        shutil.copyfile(index, folder / "sessions.json")
    cfg = write_config(tmp_path, inst.state_dir, inst.workspace, "s22")
    scan_ok(cfg)
    assert_exact_twice(cfg, corpus.truth)


# ------------------------------------------------------------------------ every layout


@pytest.mark.parametrize(
    ("schema", "compress"),
    [(13, "never"), (22, "never"), (24, "openclaw"), (24, "always")],
)
def test_every_store_layout_gives_the_jsonl_counts(corpus: Corpus, tmp_path, schema, compress):
    """Same conversations, store instead of files: the same counts, all time and 30 days."""
    inst = store_from_corpus(corpus.truth, tmp_path, schema=schema, compress=compress)
    cfg = write_config(tmp_path, inst.state_dir, inst.workspace, f"s{schema}")
    first = scan_ok(cfg)
    assert first["new_hits"] == corpus.truth.total_hits
    assert diff(corpus.truth.counts(30), counts(cfg, "30")) == {}
    assert_exact_twice(cfg, corpus.truth)


def test_the_jsonl_corpus_itself_gives_its_counts(corpus: Corpus, tmp_path):
    """The reference the store tests stand on: the same corpus as JSONL files."""
    cfg = write_config(tmp_path, corpus.truth.state_dir, corpus.truth.workspace, "jsonl")
    code, summary = scan(cfg)
    assert code == 0, summary
    assert diff(corpus.truth.counts(None), counts(cfg)) == {}


@pytest.mark.parametrize("schema", [22, 24])
def test_an_upgraded_install_with_its_import_archive_counts_each_call_once(
    corpus: Corpus, tmp_path, schema
):
    """Store rows and the JSONL files the upgrade moved aside hold the same calls.

    The archive's copy of a cron session must not count either: its key is in the
    file name (``agent_<id>_cron_<job>.``) and in the store, not in a sessions.json.
    """
    inst = store_from_corpus(corpus.truth, tmp_path, schema=schema, import_archive=True)
    assert any("_cron_" in p.name for p in inst.import_archive)
    cfg = write_config(tmp_path, inst.state_dir, inst.workspace, "imported")
    scan_ok(cfg)
    assert_exact_twice(cfg, corpus.truth)


# ------------------------------------------------------------------------ while memoryd was stopped


def busiest(sessions: list[CorpusSession], agent: str = "main", skip: int = 0) -> CorpusSession:
    """A counted session with many memory results, neither a parent nor a successor."""
    parents = {s.previous for s in sessions if s.previous}
    plain = [
        s
        for s in sessions
        if s.agent == agent
        and not s.previous
        and s.session_id not in parents
        and ":cron:" not in s.key
    ]
    plain.sort(key=lambda s: -sum('"memory_' in line for line in s.lines))
    return plain[skip]


def cron_session(sessions: list[CorpusSession]) -> CorpusSession:
    return next(s for s in sessions if ":cron:" in s.key)


class Replay:
    """A store install written step by step, as OpenClaw writes it, between memoryd scans."""

    def __init__(self, corpus: Corpus, root: Path, schema: int = 24, compress="openclaw"):
        self.truth = corpus.truth
        self.sessions = sessions_from_corpus(corpus.truth, parent_as_id=schema >= 24)
        self.state = root / "state"
        self.state.mkdir(parents=True)
        shutil.copyfile(corpus.truth.state_dir / "openclaw.json", self.state / "openclaw.json")
        self.stores: dict[str, AgentStore] = {}
        self.schema = schema
        self.compress = compress
        self.cfg = write_config(root, self.state, corpus.truth.workspace, "replay")

    def store(self, agent: str) -> AgentStore:
        if agent not in self.stores:
            self.stores[agent] = AgentStore(
                self.state, agent, schema=self.schema, compress=self.compress
            )
        return self.stores[agent]

    def add(self, s: CorpusSession, upto: int | None = None, **kw) -> None:
        self.store(s.agent).add_session(
            s.lines[: upto or len(s.lines)], key=s.key, previous=s.previous, **kw
        )

    def rest(self, s: CorpusSession, start: int, **kw) -> None:
        self.store(s.agent).append(s.session_id, s.lines[start:], **kw)

    def close(self) -> None:
        for store in self.stores.values():
            store.close()


@pytest.fixture
def replay(corpus: Corpus, tmp_path) -> Iterator[Replay]:
    r = Replay(corpus, tmp_path)
    yield r
    r.close()


@pytest.mark.parametrize(
    "copies",
    [
        {"archive_row": True, "derived_file": True},
        {"archive_row": True, "derived_file": False},
        {"archive_row": False, "derived_file": True},
        {"archive_row": True, "derived_file": True, "encoding": "identity"},
        {"archive_row": True, "derived_file": True, "reason": "reset"},
    ],
    ids=["row+file", "row", "file", "identity-row+file", "reset-row+file"],
)
def test_sessions_deleted_while_memoryd_was_stopped_count_once(replay: Replay, copies):
    """Half a session seen, then the rest written and the session deleted; another
    session written and deleted unseen; a cron session deleted: each counted once."""
    seen_half = busiest(replay.sessions)
    half = len(seen_half.lines) // 2
    assert any('"memory_' in line for line in seen_half.lines[half:])
    removed_while_stopped(
        replay, lambda s: replay.store(s.agent).delete_session(s.session_id, **copies)
    )


@pytest.mark.parametrize("into", ["file", "table"])
def test_sessions_moved_to_cold_storage_while_memoryd_was_stopped_count_once(replay: Replay, into):
    removed_while_stopped(
        replay, lambda s: replay.store(s.agent).cold_store(s.session_id, into=into)
    )


def removed_while_stopped(replay: Replay, remove: Callable[[CorpusSession], object]) -> None:
    """Half of the busiest session read; memoryd stopped; that session's rest and a second,
    unseen session written; those two and a cron session then taken out of the live table
    by ``remove`` (a delete, cold storage). The next scans count each call once."""
    seen_half = busiest(replay.sessions)
    never_seen = busiest(replay.sessions, skip=1)
    cron = cron_session(replay.sessions)
    half = len(seen_half.lines) // 2
    for s in replay.sessions:
        if s is seen_half:
            replay.add(s, upto=half)
        elif s is not never_seen:
            replay.add(s)
    scan_ok(replay.cfg)
    # memoryd stopped: OpenClaw goes on, then takes the sessions out
    replay.rest(seen_half, half)
    replay.add(never_seen)
    for s in (seen_half, never_seen, cron):
        remove(s)
    assert_every_conversation_is_kept(replay.state, replay.sessions)
    scan_ok(replay.cfg)
    assert_exact_twice(replay.cfg, replay.truth)


def filler(i: int, ms: int, size: int = 3000) -> str:
    """An ordinary user message of about ``size`` bytes, compressible, with no memory call."""
    words = " ".join(
        random.Random(i).choices(["boat", "trip", "engine", "sail", "dock"], k=size // 5)
    )
    rec = {
        "type": "message",
        "id": f"f{i:07x}",
        "parentId": None,
        "timestamp": iso_ms(ms),
        "message": {"role": "user", "content": [{"type": "text", "text": words}], "timestamp": ms},
    }
    return orjson.dumps(rec).decode()


def test_a_session_rewritten_in_place_is_read_again_from_its_watermark(replay: Replay):
    """Rows replaced with fewer rows: max(seq) does not grow, but new calls are there."""
    x = busiest(replay.sessions)
    k = len(x.lines) // 2
    tail = x.lines[k:]
    assert any('"memory_' in line for line in tail)
    t0 = int(NOW * 1000) - 86_400_000 * 95
    branch = [filler(i, t0 + i) for i in range(len(tail) + 2)]  # a branch, later pruned
    for s in replay.sessions:
        if s is x:
            replay.store(s.agent).add_session([*x.lines[:k], *branch], key=s.key)
        else:
            replay.add(s)
    scan_ok(replay.cfg)
    replay.store(x.agent).rewrite(x.session_id, k, tail)
    assert_every_conversation_is_kept(replay.state, replay.sessions)
    scan_ok(replay.cfg)
    assert_exact_twice(replay.cfg, replay.truth)


@pytest.mark.parametrize(
    ("schema", "parent_as"), [(24, "id"), (22, "path"), (13, "path")], ids=["24", "22", "13"]
)
def test_a_continued_session_meets_its_parents_call(tmp_path, schema, parent_as):
    """The answer at the start of a continued session (a ``tool_result`` block that does not
    name its tool) meets the call at the end of the session it continues, whichever id
    sorts first: from ``session_windows.previous_session_id`` and the header's
    ``parentSession`` (an id in newer builds, a file path in older ones; at schema 13 the
    header is all there is)."""
    sessions, _ws, cfg = tx.make_install(tmp_path, ["memory/a.md", "memory/b.md"])
    state = sessions.parent.parent.parent

    def text(line: bytes) -> str:
        return line.decode().rstrip("\n")

    parent, child = "zz-parent-0001", "aa-child-0002"
    payload = tx.search_payload(["memory/a.md", "memory/b.md"])
    answer = tx.dump(
        {
            "type": "message",
            "id": "ans",
            "timestamp": tx.iso(tx.T0 + 60),
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_P",
                        "content": json.dumps(payload),
                    }
                ],
            },
        }
    )
    head = json.loads(tx.header(child, tx.T0 + 50))
    head["parentSession"] = parent if parent_as == "id" else str(sessions / f"{parent}.jsonl")
    with AgentStore(state, schema=schema) as store:
        store.add_session(
            [text(tx.header(parent)), text(tx.chatter(1)), text(tx.call("toolu_P", ts=tx.T0 + 5))],
            key="agent:main:main",
        )
        store.add_session([json.dumps(head), text(answer)], key="agent:main:main", previous=parent)
    scan_ok(cfg)
    assert counts(cfg) == {"memory/a.md": 1, "memory/b.md": 1}


# ------------------------------------------------------------------------ any history


def _plan_strategy(n: int) -> st.SearchStrategy:
    fates = st.sampled_from(
        ["live", "live", "deleted", "deleted-row", "deleted-file", "cold-file", "cold-table"]
    )
    return st.tuples(
        st.integers(0, 3),  # scans before the last
        st.lists(
            st.tuples(
                st.integers(0, 3),  # slot the session starts in
                st.floats(0.0, 1.0),  # where it is cut in two appends
                st.integers(0, 3),  # slots later, the rest
                fates,
                st.integers(0, 3),  # slots later, its fate
            ),
            min_size=n,
            max_size=n,
        ),
        st.integers(0, 100),  # percent of rows compressed (beyond OpenClaw's own rule)
        st.integers(0, 2**16),  # which rows
    )


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],  # no shrinking: every example costs scans
)
@given(data=st.data())
def test_any_history_of_rows_archives_and_scans_gives_the_same_counts(corpus: Corpus, data):
    """Any mix of plain / compressed / archived rows, any order of scans and deletions."""
    sessions = sessions_from_corpus(corpus.truth, parent_as_id=True)
    scans, plan, pct, salt = data.draw(_plan_strategy(len(sessions)))

    def rule(seq: int, utf8: bytes) -> bool:
        return zlib.crc32(utf8, salt) % 100 < pct

    root = Path(tempfile.mkdtemp(dir=corpus.root))
    r = Replay(corpus, root, compress=rule)
    try:
        last = scans  # slot `scans` runs before the final scan
        steps: dict[int, list[tuple[str, int]]] = {}
        done_by: dict[str, int] = {}
        cuts: list[int] = []
        for i, (s, (start, cut, later, fate, after)) in enumerate(
            zip(r.sessions, plan, strict=True)
        ):
            cuts.append(max(1, int(len(s.lines) * cut)))
            start = min(start, last)
            if s.previous in done_by:  # a successor starts once its parent is written
                start = max(start, done_by[s.previous])
            rest_at = min(start + later, last)
            done_by[s.session_id] = rest_at
            steps.setdefault(start, []).append(("add", i))
            steps.setdefault(rest_at, []).append(("rest", i))
            if fate == "deleted-file" and ":cron:" in s.key:
                # Only the archive row keeps a deleted session's key (cron or not): a derived
                # file alone of a cron session never read says nothing that tells it apart.
                fate = "deleted"
            if fate != "live":
                steps.setdefault(min(rest_at + after, last), []).append((fate, i))
        for slot in range(last + 1):
            for op, i in sorted(steps.get(slot, []), key=lambda o: (o[1], _ORDER[o[0]])):
                s = r.sessions[i]
                store = r.store(s.agent)
                if op == "add":
                    r.add(s, upto=cuts[i])
                elif op == "rest":
                    if cuts[i] < len(s.lines):
                        r.rest(s, cuts[i])
                elif op.startswith("deleted"):
                    store.delete_session(
                        s.session_id,
                        archive_row=op != "deleted-file",
                        derived_file=op != "deleted-row",
                    )
                else:
                    store.cold_store(s.session_id, into=op.removeprefix("cold-"))
            if slot == last:
                assert_every_conversation_is_kept(r.state, r.sessions)
            scan_ok(r.cfg)
        assert_exact_twice(r.cfg, corpus.truth)
    finally:
        r.close()
        shutil.rmtree(root, ignore_errors=True)


_ORDER = {
    "add": 0,
    "rest": 1,
    "deleted": 2,
    "deleted-row": 2,
    "deleted-file": 2,
    "cold-file": 2,
    "cold-table": 2,
}


# ------------------------------------------------------------------------ faults


@dataclass(frozen=True)
class Faulty:
    """A schema-24 install whose busiest session carries one extra row, to be spoiled."""

    cfg: Path
    db: Path
    session: str
    seq: int
    frame: bytes


def faulty_install(corpus: Corpus, root: Path) -> Faulty:
    sessions = sessions_from_corpus(corpus.truth, parent_as_id=True)
    x = busiest(sessions)
    k = len(x.lines) // 2
    assert any('"memory_' in line for line in x.lines[k:]), "hits after the spoiled row"
    state = root / "state"
    state.mkdir(parents=True)
    shutil.copyfile(corpus.truth.state_dir / "openclaw.json", state / "openclaw.json")
    stores: dict[str, AgentStore] = {}
    try:
        for s in sessions:
            store = stores.get(s.agent) or stores.setdefault(
                s.agent, AgentStore(state, s.agent, schema=24)
            )
            lines = s.lines
            if s is x:
                extra = filler(7, int(NOW * 1000) - 86_400_000 * 95)
                lines = (*x.lines[:k], extra, *x.lines[k:])
            store.add_session(lines, key=s.key, previous=s.previous)
        db = stores[x.agent].path
    finally:
        for store in stores.values():
            store.close()
    conn = sqlite3.connect(db)
    frame = conn.execute(
        "SELECT event_zstd FROM transcript_events WHERE session_id = ? AND seq = ?",
        (x.session_id, k),
    ).fetchone()[0]
    conn.close()
    assert frame is not None, "the extra row is stored compressed"
    cfg = write_config(root, state, corpus.truth.workspace, "faulty")
    return Faulty(cfg, db, x.session_id, k, frame)


@pytest.fixture(scope="module")
def clean_malformed(corpus: Corpus, tmp_path_factory) -> int:
    """What a scan of the unspoiled install reports as malformed (the baseline)."""
    f = faulty_install(corpus, tmp_path_factory.mktemp("clean"))
    summary = scan_ok(f.cfg)
    assert diff(corpus.truth.counts(None), counts(f.cfg)) == {}
    return summary["malformed"]


def spoil(f: Faulty, sql: str, *args: object) -> None:
    conn = sqlite3.connect(f.db, isolation_level=None)
    conn.execute(
        f"UPDATE transcript_events SET {sql} WHERE session_id = ? AND seq = ?",
        (*args, f.session, f.seq),
    )
    conn.close()


def _corrupt(frame: bytes) -> bytes:
    bad = bytearray(frame)
    for i in range(len(bad) // 2, len(bad) // 2 + 8):
        bad[i] ^= 0x5A
    with pytest.raises(zstd.ZstdError):
        zstd.decompress(bytes(bad))
    return bytes(bad)


@pytest.mark.parametrize("fault", ["corrupt-frame", "wrong-length"])
def test_a_bad_frame_is_one_malformed_row_and_the_rest_is_counted(
    corpus: Corpus, tmp_path, clean_malformed, fault
):
    f = faulty_install(corpus, tmp_path)
    if fault == "corrupt-frame":
        spoil(f, "event_zstd = ?", _corrupt(f.frame))
    else:
        spoil(f, "event_utf8_bytes = event_utf8_bytes + 7")
    summary = scan_ok(f.cfg)
    assert summary["malformed"] == clean_malformed + 1, summary
    assert_exact_twice(f.cfg, corpus.truth)


@pytest.mark.parametrize(
    ("fault", "sql", "value"),
    [
        ("integer event_json", "event_json = ?, event_zstd = NULL, event_utf8_bytes = NULL", 12345),
        ("garbage blob", "event_zstd = ?", bytes(random.Random(3).randbytes(200))),
        ("text in event_zstd", "event_zstd = ?", "not a zstd frame at all"),
        ("blob in event_json", "event_json = ?, event_zstd = NULL, event_utf8_bytes = NULL",
         b"\xff\xfe\x00garbage"),
        ("no event at all", "event_json = NULL, event_zstd = NULL", None),
    ],
    ids=["integer-event_json", "garbage-blob", "text-in-event_zstd", "blob-in-event_json",
         "no-event"],
)  # fmt: skip
def test_a_row_of_the_wrong_type_is_skipped_and_said(
    corpus: Corpus, tmp_path, clean_malformed, fault, sql, value
):
    """The scan ends, every other row is counted, and the summary says what it skipped:
    a malformed row, or the store listed in failed_sources (then exit 1)."""
    f = faulty_install(corpus, tmp_path)
    if value is None:
        spoil(f, sql)
    else:
        spoil(f, sql, value)
    code, summary = scan(f.cfg)
    failed = summary.get("failed_sources")
    assert isinstance(failed, list), "scan --json lists failed_sources"
    said = summary["malformed"] == clean_malformed + 1 or any(
        DB in item["source"] and item["reason"] for item in failed
    )
    assert said, summary
    assert code == (1 if failed else 0), (code, summary)
    assert diff(corpus.truth.counts(None), counts(f.cfg)) == {}
    again = scan(f.cfg)[1]
    assert again["new_hits"] == 0
    assert diff(corpus.truth.counts(None), counts(f.cfg)) == {}


def split_install(corpus: Corpus, root: Path, name: str) -> tuple[Path, Path, Path]:
    """Agent main in a store, agent ops in JSONL files; and the ops part alone for reference.

    Returns (config of the whole install, main's store, config of the ops-only copy).
    """
    inst = store_from_corpus(corpus.truth, root / name, schema=24, jsonl_agents=("ops",))
    ops_only = root / f"{name}-ops"
    shutil.copytree(inst.state_dir, ops_only / "state")
    shutil.rmtree(ops_only / "state" / "agents" / "main")
    ref = write_config(root, ops_only / "state", corpus.truth.workspace, f"{name}-ops")
    scan_ok(ref)
    assert sum(counts(ref).values()) > 0, "agent ops has hits of its own"
    cfg = write_config(root, inst.state_dir, corpus.truth.workspace, name)
    return cfg, inst.stores["main"], ref


_LOCKER = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("PRAGMA locking_mode = EXCLUSIVE")
conn.execute("BEGIN EXCLUSIVE")
conn.execute("CREATE TABLE IF NOT EXISTS memoryd_test_lock(x)")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
conn.close()
"""


def test_a_locked_store_is_a_failed_source_and_the_rest_is_counted(
    corpus: Corpus, tmp_path, monkeypatch
):
    from memoryd.ingest import sqlite_source

    # The scan runs in this process: it waits 0.5 s for the lock, not the 5 s of a real one.
    monkeypatch.setattr(sqlite_source, "BUSY_TIMEOUT_S", 0.5)
    cfg, db, ref = split_install(corpus, tmp_path, "locked")
    locker = subprocess.Popen(
        [sys.executable, "-c", _LOCKER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        code, summary = scan(cfg)
        assert code == 1, summary
        assert [f["source"] for f in summary["failed_sources"]] == [str(db)], summary
        assert all(f["reason"] for f in summary["failed_sources"])
        assert diff(counts(ref), counts(cfg)) == {}
    finally:
        assert locker.stdin is not None
        locker.stdin.close()
        locker.wait(timeout=60)
    scan_ok(cfg)  # the lock is gone: the store is read now, nothing lost
    assert_exact_twice(cfg, corpus.truth)


def test_an_unknown_layout_is_said_and_every_other_source_is_read(corpus: Corpus, tmp_path):
    cfg, db, ref = split_install(corpus, tmp_path, "unknown")
    for side in (db, db.with_name(DB + "-wal"), db.with_name(DB + "-shm")):
        side.unlink(missing_ok=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript(
        "PRAGMA journal_mode = WAL; PRAGMA user_version = 31;"
        "CREATE TABLE session_windows(session_id TEXT PRIMARY KEY, session_key TEXT);"
        "CREATE TABLE transcript_log(session_id TEXT, seq INTEGER, body BLOB);"
        "INSERT INTO transcript_log VALUES ('s', 0, x'00');"
    )
    conn.close()
    code, summary = scan(cfg)
    assert code == 1, summary
    (failed,) = summary["failed_sources"]
    assert failed["source"] == str(db) and "layout" in failed["reason"].lower(), failed
    assert diff(counts(ref), counts(cfg)) == {}
    plain = memoryd(cfg, "scan")
    assert plain.returncode == 1 and "Traceback" not in plain.stderr
    assert str(db) in plain.stdout + plain.stderr
    status = memoryd(cfg, "status")
    assert "Traceback" not in status.stderr
    assert "unsupported layout" in status.stdout + status.stderr
