"""A bounded soak: the real daemon under an OpenClaw-like writer, signals, kills and commands.

One seeded plan of steps (:func:`plan`, pure) is played against a running ``memoryd run``:
memory_search / memory_get calls and their results appended to several sessions in two
writes each (a line is cut at a random byte, flushed, finished later, sometimes after a
restart), answers arriving steps after their calls, new sessions, a reset (renamed to
``.jsonl.reset.<ts>``, a fresh file at the same name), a delete (``.jsonl.deleted.<ts>``), a
compaction into a successor that copies its parent's tail, bursts of calls, notes edited
(saved as editors do), moved, and written again at a name expire archived, searches whose
words ask restore on demand for an archived note, SIGHUP with a changed config, SIGTERM and
SIGKILL with restarts, and ``expire --force`` / ``restore --last`` / ``organize`` / ``scan``
run in a thread beside the writer, against the same state, while the daemon runs (a tier
store with notes of several ages gives organize work).

The writer keeps its own truth (hits per file, each note's bytes), never read back from what
it wrote. At the end: ``hits --all --json`` equals that truth exactly, every note's bytes are
in place or archived with a journal entry, no traceback in any log, and the daemon's memory
stays bounded. Every wait is on a condition (the notify socket, a log line, a marker hit).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from typing import IO, Any

import pytest

from support import transcripts as tx
from support.daemon_harness import (
    DaemonProcess,
    Install,
    NotifySocket,
    hit_count,
    make_install,
    run_cli,
    wait_until,
)

pytestmark = pytest.mark.timeout(240)

# More seeds for a longer soak by hand: MEMORYD_SOAK_SEEDS=1,2,3,4,5
SEEDS = [int(x) for x in os.environ.get("MEMORYD_SOAK_SEEDS", "20261130,7").split(",")]
STEPS = 300
# One daemon, no restart: its memory after the first 100 steps vs the end (more by hand).
LONG_STEPS = int(os.environ.get("MEMORYD_SOAK_LONG_STEPS", "700"))
RSS_GROWTH_LIMIT_KB = 30_000
SESSIONS_AT_START = 3
NOTES = 12  # memory/n000.md …, written now: never old enough for expire
OLD_NOTES = ("memory/2025-01-03.md", "memory/2025-02-14.md", "memory/2025-03-09.md")
RSS_LIMIT_KB = 200_000  # measured: about 37 MB
EXTRA = '[expire]\npolicy = "seed"\nmin_age_days = 30\n[log]\nformat = "json"\n'
# Every other SIGHUP: a rescan every 2 s and polling instead of inotify (the observer is
# replaced while the writer writes), then back.
RELOADED = "2.0\npolling = true\npolling_interval = 0.2"
BIG_TEXT = "a long note read whole by memory_get\n" * 12_000  # ~440 kB: one line, many writes
TIER_AGES_DAYS = (0.0, 1.0, 2.0, 10.0, 12.0, 20.0, 25.0)

# ----------------------------------------------------------------------------- the plan (pure)

COMMANDS = {
    "expire": ("expire", "--force"),
    "restore": ("restore", "--last"),
    "organize": ("organize",),
    "scan": ("scan",),
}
ACTIONS = {
    "hit": 30,
    "burst": 3,
    "answer": 12,
    "new_session": 3,
    "reset": 2,
    "delete": 1,
    "compact": 2,
    "edit_note": 3,
    "move_note": 2,
    "sighup": 2,
    "sigterm": 2,
    "sigkill": 2,
    "expire": 1,
    "restore": 1,
    "organize": 1,
    "scan": 1,
    "recreate_note": 1,
}


def plan(seed: int, steps: int, without: tuple[str, ...] = ()) -> list[str]:
    """The actions of a soak, in order: a seeded draw, with every kind present at least once."""
    rng = random.Random(seed)
    kinds = [k for k in ACTIONS if k not in without]
    drawn = rng.choices(kinds, weights=[ACTIONS[k] for k in kinds], k=steps - len(kinds))
    for k in kinds:  # each kind at least once, at a seeded place
        drawn.insert(rng.randrange(len(drawn) + 1), k)
    # A restore undoes the last batch: keep it after the first expire.
    first_expire = drawn.index("expire") if "expire" in kinds else len(drawn)
    if "restore" in kinds and drawn.index("restore") < first_expire:
        drawn.remove("restore")
        drawn.insert(rng.randrange(first_expire, len(drawn) + 1), "restore")
    return drawn


# ----------------------------------------------------------------------------- the writer


@dataclass
class Session:
    sid: str
    path: Path
    fh: IO[bytes]
    written: list[bytes] = field(default_factory=list)  # complete lines, for compaction copies
    tail: bytes = b""  # the second half of a line cut in two


@dataclass
class Pending:
    call_id: str
    session: str  # sid of the session the call was made in
    tool: str
    paths: list[str]


class Writer:
    """Writes like OpenClaw does and keeps its own truth of what it wrote."""

    def __init__(self, inst: Install, rng: random.Random) -> None:
        self.inst = inst
        self.rng = rng
        self.sessions: dict[str, Session] = {}  # live sessions by sid
        self.pending: list[Pending] = []
        self.hits: Counter[str] = Counter()
        self.answered: dict[str, tuple[str, list[str]]] = {}  # call id: (file, paths)
        self.notes = sorted(
            str(p.relative_to(inst.workspace)) for p in inst.workspace.rglob("*.md")
        )
        self.searchable = [n for n in self.notes if n not in OLD_NOTES]
        # Every version of a note the user has not replaced: each must survive somewhere.
        self.versions = {(inst.workspace / n).read_bytes() for n in self.notes}
        self.n = 0

    # -- lines

    def _next_id(self) -> str:
        self.n += 1
        return f"toolu_soak_{self.n:04d}"

    def write_line(self, s: Session, line: bytes) -> None:
        """Finish the line left cut, then write ``line`` in two writes with a flush between."""
        self.finish(s)
        cut = self.rng.randrange(1, len(line))
        s.fh.write(line[:cut])
        s.fh.flush()
        s.tail = line[cut:]
        s.written.append(line)
        if self.rng.random() < 0.5:  # most of the time the rest follows at once
            self.finish(s)
        if self.rng.random() < 0.1:
            self.side_files(s, line)

    def side_files(self, s: Session, line: bytes) -> None:
        """What OpenClaw writes beside a transcript, never to be counted: its write lock,
        ``sessions.json`` (replaced whole), and the trajectory copy of the same line."""
        lock = s.path.with_name(s.path.name + ".lock")
        lock.write_text(str(os.getpid()))
        index = self.inst.sessions / "sessions.json"
        tmp = index.with_name(f"sessions.json.{self.n}.tmp")
        tmp.write_text(
            json.dumps({f"agent:main:{sid}": {"sessionId": sid} for sid in self.sessions})
        )
        os.replace(tmp, index)
        with open(s.path.with_name(s.path.name.replace(".jsonl", ".trajectory.jsonl")), "ab") as fh:
            fh.write(line)
        lock.unlink()

    def finish(self, s: Session) -> None:
        if s.tail:
            s.fh.write(s.tail)
            s.fh.flush()
            s.tail = b""

    def finish_all(self) -> None:
        for s in self.sessions.values():
            self.finish(s)

    # -- sessions

    def new_session(self, name: str | None = None, header: bytes | None = None) -> Session:
        sid = str(uuid.UUID(int=self.rng.getrandbits(128)))
        path = self.inst.sessions / f"{name or sid}.jsonl"
        s = Session(sid, path, open(path, "ab"))  # noqa: SIM115 - closed in close()/retire()
        self.sessions[sid] = s
        self.write_line(s, header or tx.header(sid, ts=now()))
        return s

    def retire(self, s: Session) -> None:
        self.finish(s)
        s.fh.close()
        del self.sessions[s.sid]

    def pick_session(self) -> Session:
        return self.sessions[self.rng.choice(sorted(self.sessions))]

    def hit(self) -> None:
        s = self.pick_session()
        cid = self._next_id()
        if self.rng.random() < 0.7:
            tool, paths = "memory_search", self.rng.sample(self.searchable, self.rng.randint(1, 3))
            # Now and then the words of an archived note: restore on demand brings it back.
            query = "zebra crossing minutes" if self.rng.random() < 0.2 else "boat trip"
            line = tx.call(cid, query=query, ts=now())
        else:
            tool, paths = "memory_get", [self.rng.choice(self.searchable)]
            line = tx.call(cid, "memory_get", path=paths[0], ts=now())
        self.write_line(s, line)
        p = Pending(cid, s.sid, tool, paths)
        if self.rng.random() < 0.6:
            self.answer(p)
        else:
            self.pending.append(p)  # answered steps later, maybe after a restart

    def burst(self) -> None:
        """A busy agent: many calls and answers at once, so a signal finds the daemon reading."""
        for _ in range(self.rng.randint(30, 120)):
            self.hit()

    def answer(self, p: Pending | None = None) -> None:
        if p is None:
            live = [q for q in self.pending if q.session in self.sessions]
            if not live:
                return self.hit()
            p = self.rng.choice(live)
            self.pending.remove(p)
        if p.tool == "memory_search":
            payload: dict[str, Any] = tx.search_payload(p.paths)
        else:
            big = self.rng.random() < 0.05
            payload = {"path": p.paths[0], "text": BIG_TEXT if big else "what the note says\n"}
        s = self.sessions[p.session]
        self.write_line(s, tx.result(p.call_id, payload, ts=now(), tool=p.tool))
        self.hits.update(p.paths)
        self.answered[p.call_id] = (s.path.name, p.paths)

    def reset(self) -> None:
        """OpenClaw's /reset: the transcript renamed aside, a fresh one at its name."""
        s = self.pick_session()
        name = s.path.name
        self.retire(s)
        s.path.rename(aside_name(s.path, "reset"))
        self.pending = [p for p in self.pending if p.session != s.sid]
        self.new_session(name.removesuffix(".jsonl"))

    def delete(self) -> None:
        if len(self.sessions) < 2:
            return self.new_session() and None
        s = self.pick_session()
        self.retire(s)
        s.path.rename(aside_name(s.path, "deleted"))
        self.pending = [p for p in self.pending if p.session != s.sid]

    def compact(self) -> None:
        """A successor that copies its parent's last lines; answers still due go there."""
        parent = self.pick_session()
        self.finish(parent)
        iso = tx.iso(now()).replace(":", "-")
        child_sid = str(uuid.UUID(int=self.rng.getrandbits(128)))
        head = tx.dump(
            {
                "type": "session",
                "version": 3,
                "id": child_sid,
                "timestamp": tx.iso(now()),
                "cwd": "/w",
                "parentSession": parent.sid,
            }
        )
        copied = parent.written[1:][-6:]
        self.retire(parent)
        path = self.inst.sessions / f"{iso}_{child_sid}.jsonl"
        child = Session(child_sid, path, open(path, "ab"))  # noqa: SIM115
        self.sessions[child_sid] = child
        for line in [head, *copied]:
            self.write_line(child, line)
        for p in self.pending:
            if p.session == parent.sid:
                p.session = child_sid

    def edit_note(self, truth: dict[str, bytes]) -> None:
        rel = self.rng.choice(sorted(truth))
        p = self.inst.workspace / rel
        if not p.exists():  # archived right now: the user edits another one
            return
        before = p.read_bytes()
        data = before + f"edited at step {self.n}\n".encode()
        tmp = p.with_name(f".{p.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, p)  # as an editor saves: the version it read is the user's to replace
        self.versions.discard(before)
        self.versions.add(data)
        truth[rel] = data

    def move_note(self, truth: dict[str, bytes]) -> None:
        rel = self.rng.choice([n for n in self.searchable if "/moved/" not in n])
        new = rel.replace("memory/", "memory/moved/", 1)
        (self.inst.workspace / new).parent.mkdir(exist_ok=True)
        (self.inst.workspace / rel).rename(self.inst.workspace / new)
        truth[new] = truth.pop(rel)
        self.searchable[self.searchable.index(rel)] = new

    def recreate_note(self, truth: dict[str, bytes]) -> None:
        """The user writes a note again at a name expire archived (restore must not clobber it)."""
        gone = [rel for rel in OLD_NOTES if not (self.inst.workspace / rel).exists()]
        if not gone:
            return self.edit_note(truth)
        rel = self.rng.choice(gone)
        data = f"# {rel}\nwritten again at step {self.n}\n".encode()
        p = self.inst.workspace / rel
        with open(p, "xb") as fh:  # never over a note put back meanwhile
            fh.write(data)
        self.versions.add(data)
        truth[rel] = data

    def close(self) -> None:
        for s in list(self.sessions.values()):
            self.retire(s)


def now() -> float:
    import time

    return time.time()


def aside_name(path: Path, why: str) -> Path:
    """``<name>.<why>.<ms timestamp>``, as OpenClaw names it; never a name already taken
    (two resets in one millisecond would otherwise rename one over the other)."""
    t = now()
    while True:
        target = path.with_name(f"{path.name}.{why}.{tx.iso(t).replace(':', '-')}")
        if not target.exists():
            return target
        t += 0.001


# ----------------------------------------------------------------------------- the daemon


class Supervisor:
    """Starts the daemon the way systemd does, and knows when it is ready."""

    def __init__(self, inst: Install, notify: NotifySocket, daemons: list[DaemonProcess]):
        self.inst, self.notify, self.daemons = inst, notify, daemons
        self.current: DaemonProcess | None = None
        self.rss_kb: list[int] = []

    def start(self) -> DaemonProcess:
        mark = self.notify.index()
        d = DaemonProcess(self.inst, notify=self.notify, fake_jobs=False).start()
        self.daemons.append(d)
        self.current = d
        self.wait_notify("READY", "1", mark, d)
        return d

    def wait_notify(self, key: str, value: str, mark: int, d: DaemonProcess) -> None:
        def seen() -> bool:
            d.check_alive()
            self.notify.drain()
            return any(m.get(key) == value for m in self.notify.messages[mark:])

        wait_until(seen, timeout=90)

    def sample_rss(self) -> None:
        assert self.current is not None and self.current.proc is not None
        status = Path(f"/proc/{self.current.proc.pid}/status")
        for line in status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                self.rss_kb.append(int(line.split()[1]))

    def reload(self) -> None:
        assert self.current is not None
        mark = self.notify.index()
        self.current.send(signal.SIGHUP)
        self.wait_notify("RELOADING", "1", mark, self.current)
        self.wait_notify("READY", "1", mark, self.current)

    def restart(self, sig: int) -> None:
        assert self.current is not None
        self.sample_rss()
        code = self.current.stop(sig)
        assert code == (0 if sig == signal.SIGTERM else -signal.SIGKILL), code
        self.start()


def settle(inst: Install, writer: Writer, tag: str) -> None:
    """Every change written so far is read: a marker hit of its own has been counted."""
    cid = f"settle-{tag}"
    with open(inst.transcript(cid), "ab") as fh:
        fh.write(tx.call(cid, ts=now()) + tx.result(cid, tx.search_payload(["MEMORY.md"]), now()))
    writer.hits["MEMORY.md"] += 1
    wait_until(lambda: hit_count(inst.db, "call_id = ?", (cid,)) == 1, timeout=90)


def cli_ok(inst: Install, *args: str) -> dict[str, Any]:
    r = run_cli(inst, *args, "--json")
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    return json.loads(r.stdout)


class Commands:
    """One-shot commands run beside the writer, one at a time, as a person (or cron) would."""

    def __init__(self, inst: Install) -> None:
        self.inst = inst
        self.thread: threading.Thread | None = None
        self.results: list[tuple[tuple[str, ...], int, str, str]] = []

    def run(self, *args: str) -> None:
        self.wait()

        def go() -> None:
            r = run_cli(self.inst, *args, "--json")
            self.results.append((args, r.returncode, r.stdout, r.stderr))

        self.thread = threading.Thread(target=go, name=" ".join(args))
        self.thread.start()

    def wait(self) -> None:
        if self.thread is not None:
            self.thread.join(120)
            assert not self.thread.is_alive(), self.thread.name
            self.thread = None


def calls_counted(inst: Install) -> dict[str, set[str]]:
    """The memory files counted for each call, from the state database."""
    conn = sqlite3.connect(f"file:{inst.db}?mode=ro", uri=True, timeout=10)
    try:
        rows = conn.execute("SELECT call_id, memory_path FROM hits").fetchall()
    finally:
        conn.close()
    out: dict[str, set[str]] = {}
    for cid, path in rows:
        if not str(cid).startswith("settle-"):
            out.setdefault(str(cid), set()).add(str(path))
    return out


def journaled(inst: Install) -> set[tuple[str, str]]:
    """(src, sha256) of every finished move out of the workspace's notes."""
    conn = sqlite3.connect(f"file:{inst.db}?mode=ro", uri=True, timeout=10)
    try:
        rows = conn.execute("SELECT src, sha256 FROM moves WHERE state = 'done'").fetchall()
    finally:
        conn.close()
    return {(str(src), str(digest)) for src, digest in rows}


# ----------------------------------------------------------------------------- the test


def make_tier_store(inst: Install) -> dict[str, bytes]:
    """Tier-store notes of several ages, for organize (by hand and hourly) to move."""
    hot = inst.root / "state" / "memory_fs" / "hot"
    hot.mkdir(parents=True)
    notes = {}
    for i, age in enumerate(TIER_AGES_DAYS):
        p = hot / f"t{i}.md"
        p.write_text(f"# checkpoint {i}\n" + "we talked about the ferry timetable\n" * 20)
        t = now() - age * 86400
        os.utime(p, (t, t))
        notes[p.name] = p.read_bytes()
    return notes


@pytest.mark.parametrize(
    ("seed", "steps", "restarts"),
    [*((s, STEPS, True) for s in SEEDS), (SEEDS[0] + 1, LONG_STEPS, False)],
    ids=[*(f"restarts-{s}" for s in SEEDS), "one-daemon"],
)
def test_soak_openclaw_writer_signals_kills_and_commands_against_the_live_daemon(
    seed: int,
    steps: int,
    restarts: bool,
    tmp_path: Path,
    notify: NotifySocket,
    daemons: list[DaemonProcess],
) -> None:
    """With restarts: SIGTERM / SIGKILL among the steps. One daemon: none, more steps, and its
    memory must not grow with the traffic (a leak shows there, not across restarts)."""
    inst = make_install(tmp_path, EXTRA, memory_files=NOTES)
    tier_notes = make_tier_store(inst)
    for rel in OLD_NOTES:  # dated long ago: what expire --force archives
        p = inst.workspace / rel
        p.write_text(f"# {rel}\nzebra crossing minutes, {rel}\n", encoding="utf-8")
    truth = {
        str(p.relative_to(inst.workspace)): p.read_bytes()
        for p in sorted(inst.workspace.rglob("*.md"))
    }
    rng = random.Random(seed)
    writer = Writer(inst, rng)
    for _ in range(SESSIONS_AT_START):
        writer.new_session()
    sup = Supervisor(inst, notify, daemons)
    sup.start()

    commands = Commands(inst)
    reloads = 0
    without = () if restarts else ("sigterm", "sigkill")
    for i, action in enumerate(plan(seed, steps, without)):
        if action == "hit":
            writer.hit()
        elif action == "burst":
            writer.burst()
        elif action == "answer":
            writer.answer()
        elif action == "new_session":
            writer.new_session()
        elif action == "reset":
            writer.reset()
        elif action == "delete":
            writer.delete()
        elif action == "compact":
            writer.compact()
        elif action == "edit_note":
            writer.edit_note(truth)
        elif action == "move_note":
            writer.move_note(truth)
        elif action == "recreate_note":
            with contextlib.suppress(FileExistsError):  # restore on demand put it back first
                writer.recreate_note(truth)
        elif action == "sighup":  # a config change each time: rescans, polling on and off
            reloads += 1
            # Replaced whole, as an editor saves: a command running beside the writer must
            # never read a half-written config (an empty one names no OpenClaw: exit 2).
            new_config = inst.config.with_name(inst.config.name + ".tmp")
            new_config.write_text(
                inst.base_config.replace("3600.0", RELOADED if reloads % 2 else "3600.0") + EXTRA,
                encoding="utf-8",
            )
            os.replace(new_config, inst.config)
            sup.reload()
        elif action == "sigterm":
            sup.restart(signal.SIGTERM)
        elif action == "sigkill":
            sup.restart(signal.SIGKILL)
        elif action in COMMANDS:
            commands.run(*COMMANDS[action])
        if i % 10 == 0:
            sup.sample_rss()
        if i == 100:
            settle(inst, writer, "warm")
            sup.sample_rss()
            warm_rss = sup.rss_kb[-1]

    commands.wait()
    for args, code, out, err in commands.results:
        assert "Traceback" not in err, (args, err)
        # restore --last may find nothing left to undo, or a note back in place: exit 1, said
        if code != 0:  # refused (nothing to undo, a note there again): said, per file
            # and expire --force may meet a note the writer is changing: left in place, said
            if args[0] == "expire":
                failed = json.loads(out)["failed"]
                assert code == 1 and failed, (args, out, err)
                assert all("changed during the operation" in f["error"] for f in failed), out
                continue
            assert args[0] == "restore" and code == 1, (args, out, err)
            assert all(e["error"] for e in json.loads(out)["errors"]), out
    # Every answer still due arrives, every cut line is finished.
    while any(p.session in writer.sessions for p in writer.pending):
        writer.answer()
    writer.finish_all()
    settle(inst, writer, "end")
    sup.sample_rss()

    counted = calls_counted(inst)
    missing = {c: a for c, a in writer.answered.items() if set(a[1]) != counted.get(c, set())}
    assert not missing, missing
    assert set(counted) <= set(writer.answered), set(counted) - set(writer.answered)

    # (the marker's file may be read before another file's last bytes: wait for those too;
    # bytes the daemon never reads still fail here, after the timeout)
    status = wait_until(
        lambda: (st := cli_ok(inst, "status"))["pending_bytes"] == 0 and st, timeout=90, step=0.5
    )
    assert sup.current is not None and sup.current.proc is not None
    assert status["daemon"]["running"] and status["daemon"]["pid"] == sup.current.proc.pid
    assert (status["pending_bytes"], status["malformed_lines"]) == (0, 0), status
    assert status["hits"]["total"] == sum(writer.hits.values()), status["hits"]

    report = cli_ok(inst, "hits", "--all")
    got = {f["path"]: f["hits"] for f in report["files"] if f["hits"]}
    in_place = {rel for rel in truth if (inst.workspace / rel).exists()}
    want = {rel: n for rel, n in writer.hits.items() if rel in in_place}
    assert got == want

    # No note lost: every version the user did not replace is in the workspace, or in the
    # archive with a journal entry; notes memoryd never moves (young ones) hold their bytes.
    moved = {digest for _, digest in journaled(inst)}
    archived, present = set(), set()
    for p in inst.workspace.rglob("*"):
        if p.is_file():
            digest = sha256(p.read_bytes()).hexdigest()
            (archived if "memory-archive" in p.parts else present).add(digest)
    for data in writer.versions:
        digest = sha256(data).hexdigest()
        assert digest in present or (digest in archived and digest in moved), data
    for rel, data in truth.items():
        if rel not in OLD_NOTES:
            assert (inst.workspace / rel).read_bytes() == data, rel

    # The tier store's notes: each original still somewhere in the store.
    store = inst.root / "state" / "memory_fs"
    kept = {sha256(p.read_bytes()).hexdigest() for p in store.rglob("*.md") if p.is_file()}
    for name, data in tier_notes.items():
        assert sha256(data).hexdigest() in kept, name

    assert sup.current is not None
    assert sup.current.stop() == 0
    writer.close()
    for d in daemons:
        for e in d.logs():
            assert "raw" not in e or "Traceback" not in e["raw"], e
            assert "exception" not in e and e.get("level") not in ("error", "critical"), e
    assert max(sup.rss_kb) < RSS_LIMIT_KB, sup.rss_kb
    if not restarts:
        assert len(daemons) == 1
        assert sup.rss_kb[-1] - warm_rss < RSS_GROWTH_LIMIT_KB, (warm_rss, sup.rss_kb)
    print(f"soak seed {seed}: {len(daemons)} daemons, RSS kB peak {max(sup.rss_kb)}, ", end="")
    print(f"after 100 steps {warm_rss}, end {sup.rss_kb[-1]}")
