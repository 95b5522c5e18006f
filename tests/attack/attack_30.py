"""Issue 30's outside attack, run again: hostile files and racing restores against a real demo
install (``memoryd demo``), real commands, a real daemon, the real plugin code in Node.

Each case redoes what the issue describes and records what happens now, with a verdict: ``ok``
(the issue's fault is gone) or ``FAULT`` (it is still there). Every command runs in a process
of its own under a timeout (``HANG`` s): a command that blocks is killed and counted as hung.

    .venv/bin/python -m tests.attack.attack_30                 # every case, 5-10 min loaded
    .venv/bin/python -m tests.attack.attack_30 --quick         # fewer rounds, 2-4 min
    .venv/bin/python -m tests.attack.attack_30 --only race_restores --rounds 30
    .venv/bin/python -m tests.attack.attack_30 --json out.json # the table and the figures

It writes only under its own temporary folder (``--keep`` keeps it) and, for the read-only
case, bind-mounts inside a private mount namespace (``unshare -m``: needs root or
CAP_SYS_ADMIN, else that case says so). Results: ``docs/attack.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from support import transcripts as tx  # noqa: E402  (the folder above is on the path now)

HANG = 30.0  # a command that has not ended by then is stuck: normal runs take under 2 s loaded
PLUGIN = ROOT / "daemon" / "memoryd" / "openclaw_plugin"
BOAT_REL = "memory/boat.md"
BOAT = (
    "# Sailing to the Lofoten islands\n"
    "Chartered the ketch Albatross from Svolvaer harbour; skipper Ingrid Halvorsen.\n"
    "Anchored in the fjord at Reine; tide tables for the Raftsundet strait.\n"
)
BOAT_QUERY = "ketch Albatross Lofoten harbour"


# =========================================================================== processes


@dataclass
class Ran:
    """One finished (or killed) command: its exit code (None: killed as hung) and output."""

    rc: int | None
    out: str
    err: str
    secs: float

    @property
    def hung(self) -> bool:
        return self.rc is None

    def brief(self) -> str:
        if self.hung:
            return f"HUNG (killed after {self.secs:.0f} s)"
        first = (self.err.strip().splitlines() or [""])[-1][:160]
        return f"exit {self.rc} in {self.secs:.2f} s" + (f": {first}" if self.rc else "")


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.pop("NOTIFY_SOCKET", None)
    env.pop("WATCHDOG_USEC", None)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def finish(proc: subprocess.Popen[bytes], started: float, timeout: float = HANG) -> Ran:
    try:
        out, err = proc.communicate(timeout=max(0.1, started + timeout - time.monotonic()))
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        rc = None
    return Ran(
        rc,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        time.monotonic() - started,
    )


def spawn(
    argv: list[str | bytes], env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[subprocess.Popen[bytes], float]:
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env or clean_env(),
        cwd=cwd,
    )
    return proc, time.monotonic()


def wait_for(pred: Callable[[], Any], timeout: float, step: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(step)


# =========================================================================== the demo install


@dataclass
class Demo:
    """A ``memoryd demo`` install, with the note memory/boat.md added (90 days old)."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / "memoryd.toml"

    @property
    def ws(self) -> Path:
        return self.root / "workspace"

    @property
    def db(self) -> Path:
        return self.root / "memoryd-state" / "state.db"

    @property
    def tiers(self) -> Path:
        return self.root / "state" / "memory_fs"

    @property
    def live(self) -> Path:
        return self.root / "state" / "agents" / "main" / "sessions" / "attack-live.jsonl"

    @property
    def boat(self) -> Path:
        return self.ws / BOAT_REL

    def argv(self, *args: str | bytes) -> list[str | bytes]:
        return [sys.executable, "-m", "memoryd", "--config", str(self.config), *args]

    def run(
        self, *args: str | bytes, env: dict[str, str] | None = None, timeout: float = HANG
    ) -> Ran:
        proc, t = spawn(self.argv(*args), env, self.root)
        return finish(proc, t, timeout)

    def spawn(self, *args: str, env: dict[str, str] | None = None) -> tuple[Any, float]:
        return spawn(self.argv(*args), env, self.root)

    def add_config(self, text: str) -> None:
        with open(self.config, "a", encoding="utf-8") as fh:
            fh.write("\n" + text + "\n")

    def archive_copies(self) -> list[Path]:
        return sorted(self.ws.glob(f"memory-archive/*/{BOAT_REL}"))

    def where_is_boat(self) -> str:
        places = (["workspace"] if self.boat.is_file() else []) + [
            str(p.relative_to(self.ws)) for p in self.archive_copies()
        ]
        return " + ".join(places) or "nowhere"

    def hits(self) -> int:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=10)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM hits").fetchone()[0])
        finally:
            conn.close()

    def append(self, data: bytes) -> None:
        if not self.live.exists():
            data = tx.header("attack-live", ts=time.time() - 1) + data
        with open(self.live, "ab") as fh:
            fh.write(data)

    def hit(self, paths: list[str] | None = None) -> None:
        """A memory_search whose query asks for nothing archived, returning ``paths``."""
        cid = f"toolu_{uuid.uuid4().hex[:12]}"
        t = time.time()
        self.append(
            tx.call(cid, query="zzqx", ts=t)
            + tx.result(cid, tx.search_payload(paths or ["MEMORY.md"]), ts=t + 0.2)
        )

    def search(self, query: str = BOAT_QUERY) -> None:
        """A memory_search that asks for the boat note (the restore on demand's request)."""
        cid = f"toolu_{uuid.uuid4().hex[:12]}"
        t = time.time() + 0.002
        self.append(
            tx.call(cid, query=query, ts=t) + tx.result(cid, tx.search_payload([]), ts=t + 0.2)
        )


def build_demo(root: Path, archived: bool = True) -> Demo:
    """``memoryd demo ROOT``, the boat note added, and (``archived``) ``expire --force``."""
    made = subprocess.run(
        [sys.executable, "-m", "memoryd", "demo", str(root)],
        capture_output=True,
        env=clean_env(),
        timeout=300,
    )
    if made.returncode != 0:
        raise SystemExit(f"memoryd demo failed: {made.stderr.decode()[-2000:]}")
    demo = Demo(root)
    demo.add_config('[schedule]\ntimezone = "UTC"')
    demo.boat.parent.mkdir(parents=True, exist_ok=True)
    demo.boat.write_text(BOAT, encoding="utf-8")
    old = time.time() - 90 * 86400
    os.utime(demo.boat, (old, old))
    if archived:
        forced = demo.run("expire", "--force")
        if forced.rc != 0 or not demo.archive_copies():
            raise SystemExit(f"expire --force did not archive the boat note: {forced.brief()}")
    return demo


class Templates:
    """Where each case builds its own demo install (a fresh ``memoryd demo`` every time: the
    state database names its paths, so a copy would not be the same install)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._n = 0

    def fresh(self, name: str, archived: bool = True) -> Demo:
        self._n += 1
        return build_demo(self.base / f"{self._n:03d}-{name}", archived)


# =========================================================================== the daemon


@dataclass
class Daemon:
    """``memoryd run`` on a demo, its JSON log lines in a file."""

    demo: Demo
    env_extra: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    def start(self, timeout: float = 120) -> Daemon:
        self.log = self.demo.root / f"daemon-{uuid.uuid4().hex[:6]}.log"
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                self.demo.argv("run"),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=clean_env(self.env_extra),
                cwd=self.demo.root,
            )
        if not wait_for(lambda: self.events("daemon.ready") or not self.alive(), timeout):
            raise SystemExit("the daemon never got ready")
        if not self.alive():
            raise SystemExit(f"the daemon died at start: {self.tail()}")
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-1500:] if self.log else ""

    def events(self, name: str) -> list[dict[str, Any]]:
        out = []
        assert self.log is not None
        for line in self.log.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict) and doc.get("event") == name:
                out.append(doc)
        return out

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 90) -> tuple[int | None, float]:
        assert self.proc is not None
        t = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc: int | None = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        return rc, time.monotonic() - t

    def kill(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait()


def counted_after(demo: Demo, d: Daemon, n: int, timeout: float = 60) -> bool:
    """Append ``n`` hit lines one by one; True when all were counted in time."""
    before = demo.hits()
    for _ in range(n):
        demo.hit()
    return bool(wait_for(lambda: demo.hits() >= before + n or not d.alive(), timeout)) and (
        demo.hits() >= before + n
    )


# =========================================================================== the plugin, in Node

PLUGIN_CALL = """
import { pathToFileURL } from "node:url";
const [dir, command, config, what, arg] = process.argv.slice(2);
const plugin = (await import(pathToFileURL(dir + "/index.js").href)).default;
const logic = await import(pathToFileURL(dir + "/logic.js").href);
const api = { pluginConfig: { command, config }, hooks: {}, tools: [], commands: [], logs: [] };
api.on = (name, handler) => { api.hooks[name] = handler; };
api.registerTool = (tool) => api.tools.push(tool);
api.registerCommand = (cmd) => api.commands.push(cmd);
api.logger = { info: () => {}, warn: (m) => api.logs.push(m), error: (m) => api.logs.push(m) };
plugin.register(api);
const t = Date.now();
if (what === "recall") {
  const res = await api.tools[0].execute("c1", { query: JSON.parse(arg) });
  console.log(JSON.stringify({ text: res.content[0].text, ms: Date.now() - t, logs: api.logs }));
} else if (what === "sessions") {  // the gateway starts, then five sessions' first turns
  await api.hooks.gateway_start({}, {});
  await new Promise((r) => setTimeout(r, Number(arg)));  // its warm-up run, unawaited, ends
  const got = [];
  for (let i = 0; i < 5; i++) {
    const s = Date.now();
    const res = await api.hooks.before_prompt_build({ messages: [] }, { agentId: "" });
    got.push({ ms: Date.now() - s, text: res?.prependContext ?? null });
  }
  console.log(JSON.stringify({ got, logs: api.logs }));
} else if (what === "still-valid" || what === "still-valid-all") {
  const { readFileSync, readdirSync } = await import("node:fs");
  const doc = JSON.parse(readFileSync(arg, "utf-8"));
  doc.fetchedAtMs = Date.now();
  if (what === "still-valid-all") {  // every note of hot/ stamped: what memoryd answered before
    const hot = process.argv[7];
    const paths = readdirSync(hot).map((n) => hot + "/" + n);
    const stamp = async (p) => ({ path: p, stamp: await logic.stampOf(p) });
    doc.session.watch = await Promise.all(paths.map(stamp));
    delete doc.session.watch_partial;
  }
  const times = [];
  for (let i = 0; i < 21; i++) {
    const s = process.hrtime.bigint();
    await logic.stillValid(doc);
    times.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ median_ms: times[10] }));
}
"""


def node() -> str | None:
    found = shutil.which("node")
    if found:
        return found
    live = sorted((Path.home() / ".cache" / "memoryd-live").glob("node-*/bin/node"))
    return str(live[-1]) if live else None


def plugin_call(demo: Demo, what: str, arg: str, *more: str) -> dict[str, Any]:
    exe = node()
    if exe is None:
        return {"text": "(no node here)", "ms": 0}
    script = demo.root / "plugin_call.mjs"
    script.write_text(PLUGIN_CALL, encoding="utf-8")
    memoryd = str(Path(sys.executable).with_name("memoryd"))
    proc, t = spawn([exe, str(script), str(PLUGIN), memoryd, str(demo.config), what, arg, *more])
    ran = finish(proc, t, 120)
    if ran.rc != 0:
        return {"text": f"(node: {ran.brief()} {ran.err[-300:]})", "ms": ran.secs * 1000}
    doc: dict[str, Any] = json.loads(ran.out.strip().splitlines()[-1])
    return doc


# =========================================================================== results


@dataclass
class Result:
    case: str
    issue: str  # the issue's words for what went wrong
    now: str  # what happens now
    ok: bool
    figures: dict[str, Any] = field(default_factory=dict)


def fifo_over(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def recall_doc(ran: Ran) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = json.loads(ran.out)
        return doc
    except ValueError:
        return {}


# =========================================================================== case 1: FIFOs


def case_fifo_archived(t: Templates, rounds: int) -> Result:
    demo = t.fresh("fifo_archived")
    [copy] = demo.archive_copies()
    fifo_over(copy)
    first = demo.run("recall", "--json", "albatross")
    organize = demo.run("organize")
    again = demo.run("recall", "albatross")
    via_plugin = plugin_call(demo, "recall", json.dumps("albatross"))
    runs = [first, organize, again]
    hung = [r for r in runs if r.hung] + ([1] if via_plugin.get("ms", 0) > 25_000 else [])
    said = "skipped unread" in via_plugin.get("text", "")  # not only "never recorded"
    ok = not hung and all(r.rc == 0 for r in runs) and copy.is_fifo() and said
    now = (
        f"recall {first.brief()}, organize {organize.brief()}, recall again {again.brief()}; "
        f"through the plugin {via_plugin.get('ms', 0):.0f} ms: "
        f"“{via_plugin.get('text', '')[:60]}…”, says a file was skipped unread: {said}; "
        f"FIFO left in place: {copy.is_fifo()}"
    )
    return Result(
        "fifo_archived",
        "recall blocks forever holding the tier-store lock; organize "
        "and later recalls block; the plugin times out",
        now,
        ok,
    )


def case_fifo_archived_daemon(t: Templates, rounds: int) -> Result:
    demo = t.fresh("fifo_daemon")
    [copy] = demo.archive_copies()
    fifo_over(copy)
    d = Daemon(demo).start()
    try:
        warm = counted_after(demo, d, 1)
        demo.search()  # asks for the FIFO'd note: the restore on demand opens it
        went_on = counted_after(demo, d, 5)
        named = wait_for(lambda: d.events("note.not_a_note"), 30)
        status = demo.run("status", "--json")
        stalled = (recall_doc(status).get("daemon") or {}).get("ingest_stalled")
        rc, secs = d.stop()
    finally:
        d.kill()
    ok = warm and went_on and bool(named) and status.rc == 0 and not stalled and secs < 10
    ok = ok and rc == 0 and copy.is_fifo()
    now = (
        f"hits after the search counted: {went_on}; note.not_a_note logged: {len(named or [])}; "
        f"status exit {status.rc}, stalled: {stalled}; SIGTERM → exit {rc} in {secs:.1f} s"
    )
    return Result(
        "fifo_archived_daemon",
        "a memory_search naming the note blocks the ingest "
        "worker: hits stop, status exits 0, no log line, SIGTERM takes 20 s",
        now,
        ok,
        {"sigterm_s": round(secs, 2)},
    )


def case_stalled_worker(t: Templates, rounds: int) -> Result:
    demo = t.fresh("stalled")
    demo.add_config("[daemon]\nstall_seconds = 2.0")
    spec = demo.root / "fault.spec"
    spec.write_text("", encoding="utf-8")
    d = Daemon(demo, {"MEMORYD_FAULT": f"@{spec}"}).start()
    try:
        counted_after(demo, d, 1)
        spec.write_text("scan.planned:*:hang", encoding="utf-8")  # a read that never returns

        def seen() -> Any:
            demo.hit()
            return d.events("ingest.worker_stalled")

        stalled = wait_for(seen, 90, step=0.5)
        status = demo.run("status")
        spec.write_text("", encoding="utf-8")
        moving = wait_for(lambda: d.events("ingest.worker_moving"), 60)
        caught_up = counted_after(demo, d, 1)
        rc, secs = d.stop()
    finally:
        d.kill()
    said = "stalled:" in status.out
    ok = bool(stalled) and status.rc == 1 and said and bool(moving) and caught_up and rc == 0
    line = next((ln.strip() for ln in status.out.splitlines() if "stalled" in ln), "")
    now = (
        f"ingest.worker_stalled logged: {bool(stalled)}; status exit {status.rc}: “{line[:100]}”; "
        f"moving again and counting: {bool(moving) and caught_up}; SIGTERM {secs:.1f} s"
    )
    return Result(
        "stalled_worker",
        "the watchdog checks only that threads are alive; status exits 0 while no hit is counted",
        now,
        ok,
    )


def _flipper(victim: Path, stop: threading.Event, text: bytes) -> threading.Thread:
    """Rename a FIFO over ``victim``, then a regular file, as fast as it goes."""

    def loop() -> None:
        fifo = victim.with_name(".attack.fifo")
        plain = victim.with_name(".attack.tmp")
        while not stop.is_set():
            try:
                os.mkfifo(fifo)
                os.rename(fifo, victim)
                plain.write_bytes(text)
                os.rename(plain, victim)
            except OSError:
                for p in (fifo, plain):
                    p.unlink(missing_ok=True)

    th = threading.Thread(target=loop, daemon=True)
    th.start()
    return th


def case_fifo_race_hot(t: Templates, rounds: int) -> Result:
    demo = t.fresh("fifo_race", archived=False)
    hot = demo.tiers / "hot"
    hot.mkdir(parents=True, exist_ok=True)
    victim = hot / "victim.md"
    text = b"# Victim\nalbatross sighted off the headland\n"
    victim.write_bytes(text)
    # Older notes beside it: the listing stats and sorts them all before the victim (the
    # newest) is opened, and recall reads them all, so the race has a window to land in.
    old = time.time() - 3600
    for i in range(300):
        filler = hot / f"filler-{i:03d}.md"
        filler.write_text(f"# Filler {i}\nnothing to see\n", encoding="utf-8")
        os.utime(filler, (old - i, old - i))
    stop = threading.Event()
    th = _flipper(victim, stop, text)
    hung = {"inject": 0, "recall": 0}
    failed = {"inject": 0, "recall": 0}
    met = {"inject": 0, "recall": 0}
    try:
        for _ in range(rounds):
            for kind, args in (
                ("inject", ("inject", "--session", "--json")),
                ("recall", ("recall", "--json", "albatross")),
            ):
                r = demo.run(*args, timeout=20)
                hung[kind] += r.hung
                failed[kind] += (r.rc not in (0, None)) or "Traceback" in r.err
                met[kind] += "note.not_a_note" in r.err  # it opened the FIFO, and went on
    finally:
        stop.set()
        th.join(5)
    ok = not any(hung.values()) and not any(failed.values())
    now = (
        f"{rounds} inject --session and {rounds} recall while a FIFO and a file take turns at "
        f"hot/victim.md: hung {hung['inject']} + {hung['recall']}, failed {failed['inject']} + "
        f"{failed['recall']} (the FIFO was there when read in {met['inject']} + {met['recall']})"
    )
    return Result(
        "fifo_race_hot",
        "hung inject in 1 of 118 calls and recall in 4 of 118",
        now,
        ok,
        {"calls": 2 * rounds, "hung": hung, "failed": failed, "met_fifo": met},
    )


# =========================================================================== case 2: big notes


def _inject(demo: Demo) -> tuple[Ran, dict[str, Any]]:
    r = demo.run("inject", "--session", "--json")
    return r, recall_doc(r)


def _median_inject(demo: Demo, n: int) -> tuple[float, dict[str, Any], Ran]:
    times, doc, last = [], {}, None
    for _ in range(n):
        last, doc = _inject(demo)
        times.append(last.secs)
    assert last is not None
    return statistics.median(times), doc, last


def case_huge_note(t: Templates, rounds: int) -> Result:
    demo = t.fresh("huge", archived=False)
    hot = demo.tiers / "hot"
    hot.mkdir(parents=True, exist_ok=True)
    n = max(3, rounds // 20)
    base_s, _, _ = _median_inject(demo, n)
    big = hot / "big.md"
    line = b"The harbour log: wind NW 5, swell 2 m, engine hours 1432, all well aboard.\n"
    with open(big, "wb") as fh:
        fh.write(b"# Big log\n")
        for _ in range((50 << 20) // len(line)):
            fh.write(line)
    later = time.time() + 60
    os.utime(big, (later, later))
    big_s, doc, last = _median_inject(demo, n)
    text = doc.get("text", "")
    sessions = plugin_call(demo, "sessions", "8000").get("got", [])
    fed = sum(bool(g.get("text")) and "hot/big.md" in g["text"] for g in sessions)
    slowest = max((g.get("ms", 0) for g in sessions), default=0)
    ok = last.rc == 0 and "big.md" in doc.get("included", []) and big_s < max(1.0, 3 * base_s)
    ok = ok and len(text) <= doc.get("max_chars", 0) and fed == len(sessions) == 5
    now = (
        f"inject --session with a 50 MB note: median {big_s:.2f} s vs {base_s:.2f} s without "
        f"(same run, {n} each; ratio {big_s / base_s:.2f}); answer {len(text)} chars of "
        f"{doc.get('max_chars')} (big.md included, truncated: {doc.get('truncated')}); "
        f"through the plugin, {fed} of {len(sessions)} new sessions get the notes (slowest "
        f"first turn {slowest} ms)"
    )
    return Result(
        "huge_note",
        "inject reads all 50 MB first (p50 1.5 s): the plugin's deadline passes on every session",
        now,
        ok,
        {"inject_s": round(big_s, 3), "baseline_s": round(base_s, 3)},
    )


def case_binary_md(t: Templates, rounds: int) -> Result:
    demo = t.fresh("binary", archived=False)
    hot = demo.tiers / "hot"
    hot.mkdir(parents=True, exist_ok=True)
    (hot / "photo.md").write_bytes(bytes(range(256)) * 40)
    r, doc = _inject(demo)
    text = doc.get("text", "")
    bad = text.count("\ufffd")
    ok = r.rc == 0 and bad == 0 and "photo.md" in doc.get("not_notes", [])
    now = (
        f"inject {r.brief()}: {bad} replacement characters; photo.md in not_notes: "
        f"{'photo.md' in doc.get('not_notes', [])}"
    )
    return Result("binary_md", "a binary .md is injected as 4,000 replacement characters", now, ok)


def case_many_hot(t: Templates, rounds: int) -> Result:
    demo = t.fresh("many_hot", archived=False)
    hot = demo.tiers / "hot"
    hot.mkdir(parents=True, exist_ok=True)
    now_t = time.time()
    for i in range(5000):
        p = hot / f"note-{i:04d}.md"
        p.write_text(f"# Note {i}\nsomething noted, number {i}\n", encoding="utf-8")
        os.utime(p, (now_t - i, now_t - i))
    r, doc = _inject(demo)
    answer = demo.root / "answer.json"
    answer.write_text(r.out, encoding="utf-8")
    capped = plugin_call(demo, "still-valid", str(answer)).get("median_ms")
    every = plugin_call(demo, "still-valid-all", str(answer), str(hot)).get("median_ms")
    watch = len((doc.get("session") or {}).get("watch", []))
    ratio = every / capped if capped and every else None
    ok = r.rc == 0 and len(r.out) < 100_000 and ratio is not None and ratio > 4
    now = (
        f"5,000 notes in hot/: answer {len(r.out) / 1000:.0f} KB in {r.secs:.2f} s, "
        f"{watch} stamps; the plugin's cache check (stillValid, median of 21) {capped:.1f} ms, "
        f"against {every:.1f} ms with every note stamped as before (same run: {ratio:.1f}x)"
    )
    return Result(
        "many_hot",
        "a 566 KB answer and a 46-57 ms cache check (1 ms normally)",
        now,
        ok,
        {"answer_kb": round(len(r.out) / 1000, 1), "check_ms": capped, "all_ms": every},
    )


# =========================================================================== case 3: restores


def case_restore_after_recall(t: Templates, rounds: int) -> Result:
    demo = t.fresh("restore_after_recall")
    rec = demo.run("recall", "albatross")
    res = demo.run("restore", BOAT_REL)
    where = demo.where_is_boat()
    ok = rec.rc == 0 and res.rc == 0 and where == "workspace" and "→ memory-archive" not in res.out
    now = f"restore {BOAT_REL} → exit {res.rc}: “{res.out.strip()[:120]}”; note now: {where}"
    return Result(
        "restore_after_recall",
        "“restored memory/boat.md → memory-archive/…”: the note went back into the archive",
        now,
        ok,
    )


def case_race_restores(t: Templates, rounds: int) -> Result:
    """The daemon's restore on demand, ``restore PATH`` and a recall, all at once, each round
    on a fresh copy of the archived demo."""
    n = max(15, rounds // 7)
    lost, bad_words, failed = [], [], []
    won = {"restore on demand": 0, "restore PATH": 0, "recall": 0}
    rng = random.Random(30)
    for i in range(n):
        demo = t.fresh("race")
        d = Daemon(demo).start()
        try:
            counted_after(demo, d, 1)
            # The search lands before, among or after the two commands' starts (a command
            # takes 0.3-1 s to start on a loaded machine; the daemon reads a line in ms).
            delay = [0.0, None][i % 2] if i < 2 else rng.uniform(-0.2, 1.5)
            if delay is not None and delay <= 0:
                demo.search()
            procs = [demo.spawn("restore", BOAT_REL), demo.spawn("recall", "albatross")]
            if delay is None or delay > 0:
                time.sleep(delay or 0.0)
                demo.search()
            ran = [finish(p, s) for p, s in procs]
            counted_after(demo, d, 1)  # the daemon has read the search by now
            d.stop()
        finally:
            d.kill()
        won["restore on demand"] += any(
            e.get("outcome") == "restored" for e in d.events("restore.on_demand")
        )
        won["restore PATH"] += "restored memory-archive/" in ran[0].out
        won["recall"] += "restored to the workspace" in ran[1].out
        where = demo.where_is_boat()
        if where != "workspace" or demo.boat.read_text(encoding="utf-8") != BOAT:
            lost.append((i, where))
        words = " ".join(r.out for r in ran) + " ".join(
            json.dumps(e) for e in d.events("restore.on_demand_conflict")
        )
        if any(w in words for w in ("failed", "conflict", "left alone", "edited since")):
            bad_words.append(i)
        failed += [(i, r.brief()) for r in ran if r.rc != 0]
    ok = not lost and not bad_words and not failed
    now = (
        f"{n} rounds (daemon's restore on demand + restore PATH + recall, real processes): "
        f"note in the workspace, once, in {n - len(lost)}; lost {lost or 'none'}; misleading "
        f"words in rounds {bad_words or 'none'}; failures {failed or 'none'}; who moved it: "
        + ", ".join(f"{k} {v}" for k, v in won.items())
    )
    return Result(
        "race_restores",
        "2 of 15 rounds ended with the note archived though all three asked for it back",
        now,
        ok,
        {"rounds": n, "lost": len(lost), "won": won},
    )


def case_two_live_rows(t: Templates, rounds: int) -> Result:
    demo = t.fresh("two_rows")
    demo.add_config('[expire]\npolicy = "seed"')
    demo.run("recall", "fjord")
    edited = BOAT + "Ferry back from Svolvaer on Sunday.\n"
    demo.boat.write_text(edited, encoding="utf-8")
    old = time.time() - 90 * 86400
    os.utime(demo.boat, (old, old))
    again = demo.run("expire", "--force")
    peek = recall_doc(demo.run("recall", "--peek", "--json", "fjord"))
    shown = [s.get("note") for s in peek.get("shown", []) if s.get("note") == BOAT_REL]
    d = Daemon(demo).start()
    try:
        counted_after(demo, d, 1)
        demo.search("ketch Albatross Lofoten fjord Reine")
        outcome = wait_for(
            lambda: d.events("restore.on_demand") + d.events("restore.on_demand_conflict"), 60
        )
        d.stop()
    finally:
        d.kill()
    outcomes = [e.get("outcome") for e in outcome or []]
    back = demo.boat.is_file() and demo.boat.read_text(encoding="utf-8") == edited
    ok = again.rc == 0 and len(shown) == 1 and outcomes == ["restored"] and back
    now = (
        f"second expire {again.brief()}; recall --peek shows the note {len(shown)}x; the "
        f"daemon's restore on demand: {outcomes or 'nothing'}; edited note back: {back}"
    )
    return Result(
        "two_live_rows",
        "two live rows: recall shows the note twice; on demand picks "
        "the older row, logs a false conflict, the note stays archived",
        now,
        ok,
    )


# =========================================================================== case 5: faults


def case_io_error_ingest(t: Templates, rounds: int) -> Result:
    demo = t.fresh("io_error")
    spec = demo.root / "fault.spec"
    spec.write_text("", encoding="utf-8")
    d = Daemon(demo, {"MEMORYD_FAULT": f"@{spec}"}).start()
    try:
        counted_after(demo, d, 1)
        spec.write_text("store.check_header:*:eio", encoding="utf-8")
        demo.hit()
        failed = wait_for(lambda: d.events("ingest.scan_failed") or not d.alive(), 60)
        status = demo.run("status", "--json")
        reason = ((recall_doc(status).get("daemon") or {}).get("scan_failing") or {}).get("reason")
        spec.write_text("", encoding="utf-8")
        recovered = wait_for(lambda: d.events("ingest.scan_recovered") or not d.alive(), 120)
        counted = counted_after(demo, d, 1)
        died = d.events("ingest.worker_died")
        rc, _ = d.stop()
    finally:
        d.kill()
    ok = bool(failed) and bool(recovered) and counted and not died and rc == 0
    ok = ok and status.rc == 1
    now = (
        f"EIO at every header check: ingest.scan_failed logged, status exit {status.rc} "
        f"(“{reason}”); fault cleared → scan_recovered {bool(recovered)}, counting {counted}; "
        f"worker_died {len(died)}; the daemon exits {rc} on SIGTERM"
    )
    return Result(
        "io_error_ingest",
        "ingest.worker_died (an exception with no message); the daemon exits 1",
        now,
        ok,
    )


def case_read_only_state(t: Templates, rounds: int) -> Result:
    demo = t.fresh("read_only")
    state = demo.db.parent
    script = f'mount --bind "{state}" "{state}" && mount -o remount,bind,ro "{state}" && exec "$@"'
    if shutil.which("unshare") is None:
        return Result(
            "read_only_state",
            "…tiers.lock: Read-only file system",
            "no unshare here: not run",
            False,
        )
    lines: dict[str, str] = {}
    good = 0
    commands = (
        ["recall", "albatross"],
        ["recall", "--json", "albatross"],
        ["expire", "--force"],
        ["restore", "--last"],
        ["restore", BOAT_REL],
        ["organize"],
        ["scan"],
    )
    for args in commands:
        proc, s = spawn(["unshare", "-m", "sh", "-c", script, "sh", *demo.argv(*args)])
        r = finish(proc, s)
        line = (r.err.strip().splitlines() or [""])[-1]
        lines[" ".join(args)] = f"exit {r.rc}: {line}"
        if "mount" in line and r.rc not in (0, 1, 2):
            return Result(
                "read_only_state",
                "…/tiers.lock: Read-only file system",
                f"cannot bind-mount here ({line}): not run",
                False,
            )
        good += (
            r.rc == 1
            and line.startswith(f"memoryd: state database {demo.db}")
            and line.endswith("(check owner, mode and mount)")
        )
    moved = demo.where_is_boat()
    ok = good == len(commands) and moved != "workspace"
    sample = lines["recall albatross"]
    now = (
        f"read-only bind mount of the state folder (unshare -m; mount --bind + remount,ro): "
        f"{good} of {len(commands)} commands give the documented line, e.g. “{sample[:150]}”; "
        "nothing moved"
    )
    return Result(
        "read_only_state",
        "“…/tiers.lock: Read-only file system” instead of the documented line",
        now,
        ok,
        {"lines": lines},
    )


def case_garbage_db(t: Templates, rounds: int) -> Result:
    demo = t.fresh("garbage")
    d = Daemon(demo).start()
    try:
        counted_after(demo, d, 1)
        size = demo.db.stat().st_size
        with open(demo.db, "r+b") as fh:  # 8 KiB of garbage in the middle, header intact
            fh.seek(max(4096, size // 2 // 4096 * 4096))
            fh.write(os.urandom(8192))
        for _ in range(20):
            demo.hit(["MEMORY.md", "memory/projects/memoryd.md"])
        wait_for(lambda: not d.alive(), 30)
        damaged = d.events("state.database_damaged")
        status = demo.run("status")
        rc, _ = d.stop()
        again = Daemon(demo)
        try:
            again.start(timeout=60)
            restarted = again.alive()
        except SystemExit:
            restarted = False
        second = again.events("state.database_damaged") if again.log else []
        again.kill()
    finally:
        d.kill()
    status_says = "damaged" in status.out + status.err
    ok = bool(damaged) or bool(second)  # found at the next write, or at the next start
    now = (
        f"8 KiB of garbage mid-file while the daemon runs: the daemon "
        f"{'stopped with state.database_damaged' if damaged else 'went on'} (exit {rc}); "
        f"status exit {status.rc}, says damaged: {status_says}; the next start "
        f"{'refuses it: state.database_damaged' if second else ('runs' if restarted else 'fails')}"
    )
    return Result(
        "garbage_db",
        "unnoticed while the daemon runs: say so in docs/service.md, or check at the next write",
        now,
        ok,
    )


# =========================================================================== case 6: messages


def case_utf8_argv(t: Templates, rounds: int) -> Result:
    demo = t.fresh("utf8", archived=False)
    r = demo.run("recall", "--json", "--", b"caf\xff")
    doc = recall_doc(r)
    line = (r.err.strip().splitlines() or [""])[-1]
    ok = r.rc == 2 and "codec" not in r.err and "Traceback" not in r.err and "error" in doc
    now = f"exit {r.rc}, “{line[:120]}”; JSON on stdout: {bool(doc)}"
    return Result("utf8_argv", "exit 1 with a codec error and no JSON", now, ok)


def case_nul_query(t: Templates, rounds: int) -> Result:
    demo = t.fresh("nul", archived=False)
    via = plugin_call(demo, "recall", json.dumps("caf\u0000e"))
    text = via.get("text", "")
    ok = "null bytes" not in text and "NUL" in text
    return Result(
        "nul_query",
        "the agent reads “must be a string without null bytes”",
        f"through the plugin: “{text[:130]}”",
        ok,
    )


def case_parallel_recalls(t: Templates, rounds: int) -> Result:
    demo = t.fresh("parallel")
    procs = [demo.spawn("recall", "--json", "albatross") for _ in range(20)]
    ran = [finish(p, s) for p, s in procs]
    docs = [recall_doc(r) for r in ran]
    never = sum("never recorded" in d.get("message", "") for d in docs)
    shown = sum(bool(d.get("shown")) and d["shown"][0].get("text") == BOAT for d in docs)
    restored = sum(d.get("hits_recorded") == 1 for d in docs)
    bad = [r.brief() for r in ran if r.rc != 0]
    where = demo.where_is_boat()
    ok = never == 0 and not bad and shown == 20 and restored == 1 and where == "workspace"
    now = (
        f"20 identical recalls at once: {never} say “never recorded”; {shown} show the note; "
        f"{restored} moved it; failures {bad or 'none'}; note now: {where}"
    )
    return Result(
        "parallel_recalls",
        "19 of 20 answer “Nothing about … never recorded, or "
        "deleted” while the note was just restored",
        now,
        ok,
    )


def case_user_file_at_target(t: Templates, rounds: int) -> Result:
    demo = t.fresh("user_file")
    mine = "# Boat (my new notes)\nnothing about birds\n"
    demo.boat.write_text(mine, encoding="utf-8")
    doc = recall_doc(demo.run("recall", "--json", "albatross"))
    via = plugin_call(demo, "recall", json.dumps("albatross"))
    msg, text = doc.get("message", ""), via.get("text", "")
    kept = demo.boat.read_text(encoding="utf-8") == mine and len(demo.archive_copies()) == 1
    ok = "the restore failed" not in msg + text and "already at memory/boat.md" in text and kept
    now = (
        f"recall: “{msg[:110]}”; the plugin passes it on: {'already at' in text}; both kept: {kept}"
    )
    return Result(
        "user_file_at_target",
        "only “the restore failed” (the reason sits in rotations, which the plugin does not show)",
        now,
        ok,
    )


def case_restore_after_on_demand(t: Templates, rounds: int) -> Result:
    demo = t.fresh("after_on_demand")
    d = Daemon(demo).start()
    try:
        counted_after(demo, d, 1)
        demo.search()
        got = wait_for(lambda: d.events("restore.on_demand"), 60)
        d.stop()
    finally:
        d.kill()
    r = demo.run("restore", BOAT_REL)
    ok = bool(got) and r.rc == 0 and "no journaled move" not in r.out + r.err
    ok = ok and "already back at" in r.out and demo.where_is_boat() == "workspace"
    msg = (r.out + r.err).strip()
    now = f"restored on demand: {bool(got)}; then restore {BOAT_REL} → exit {r.rc}: “{msg[:130]}”"
    return Result("restore_after_on_demand", "“no journaled move of this path to undo”", now, ok)


# =========================================================================== case 7: symlink


def case_symlink_hot(t: Templates, rounds: int) -> Result:
    demo = t.fresh("symlink", archived=False)
    hot = demo.tiers / "hot"
    hot.mkdir(parents=True, exist_ok=True)
    link = hot / "passwd.md"
    link.symlink_to("/etc/passwd")
    r, doc = _inject(demo)
    watch = {w["path"]: w["stamp"] for w in (doc.get("session") or {}).get("watch", [])}
    st = os.stat("/etc/passwd")
    target_stamp = f"{st.st_mtime_ns}:{st.st_size}"
    leaked = "root:" in doc.get("text", "")
    stamped = str(link) in watch and watch[str(link)] == target_stamp
    ok = r.rc == 0 and not leaked and target_stamp not in watch.values()
    now = (
        f"inject {r.brief()}: /etc/passwd text injected: {leaked}; the link in session.watch: "
        f"{str(link) in watch}; the target's mtime:size stamped: "
        f"{stamped or target_stamp in watch.values()}"
    )
    return Result(
        "symlink_hot",
        "the target's mtime and size go into session.watch, stat'ed every session",
        now,
        ok,
    )


CASES: dict[str, Callable[[Templates, int], Result]] = {
    "fifo_archived": case_fifo_archived,
    "fifo_archived_daemon": case_fifo_archived_daemon,
    "stalled_worker": case_stalled_worker,
    "fifo_race_hot": case_fifo_race_hot,
    "huge_note": case_huge_note,
    "binary_md": case_binary_md,
    "many_hot": case_many_hot,
    "restore_after_recall": case_restore_after_recall,
    "race_restores": case_race_restores,
    "two_live_rows": case_two_live_rows,
    "io_error_ingest": case_io_error_ingest,
    "read_only_state": case_read_only_state,
    "garbage_db": case_garbage_db,
    "utf8_argv": case_utf8_argv,
    "nul_query": case_nul_query,
    "parallel_recalls": case_parallel_recalls,
    "user_file_at_target": case_user_file_at_target,
    "restore_after_on_demand": case_restore_after_on_demand,
    "symlink_hot": case_symlink_hot,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds (20 calls, 15 races)")
    ap.add_argument("--rounds", type=int, default=None, help="calls per looping case (100)")
    ap.add_argument("--only", action="append", choices=sorted(CASES), help="run only this case")
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args(argv)
    rounds = args.rounds or (20 if args.quick else 100)
    base = Path(tempfile.mkdtemp(prefix="memoryd-attack30-"))
    templates = Templates(base)
    results: list[Result] = []
    started = time.monotonic()
    load = os.getloadavg()[0]
    try:
        for name in args.only or list(CASES):
            t = time.monotonic()
            try:
                res = CASES[name](templates, rounds)
            except Exception as exc:  # one broken case must not hide the others
                res = Result(name, "", f"the driver failed: {type(exc).__name__}: {exc}", False)
            res.figures["secs"] = round(time.monotonic() - t, 1)
            results.append(res)
            print(f"{'ok   ' if res.ok else 'FAULT'} {res.case}: {res.now}", flush=True)
    finally:
        if args.keep:
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    total = time.monotonic() - started
    faults = [r.case for r in results if not r.ok]
    print(
        f"\n{len(results) - len(faults)} of {len(results)} cases ok in {total:.0f} s "
        f"(load {load:.1f} at start, {os.getloadavg()[0]:.1f} at the end)"
        + (f"; still faulty: {', '.join(faults)}" if faults else "")
    )
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in results], indent=1), "utf-8")
    return 1 if faults else 0


if __name__ == "__main__":
    raise SystemExit(main())
