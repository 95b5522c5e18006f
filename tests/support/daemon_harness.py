"""Helpers for tests that run the real daemon as a subprocess.

A test gets an OpenClaw install in a temporary folder, a config file, a notify socket of
its own (``NOTIFY_SOCKET``, as systemd would pass it) and a :class:`DaemonProcess` that
starts ``python -m memoryd run`` and reads its JSON log lines.

Fake jobs: the scheduled job modules belong to other parts of memoryd and may do real work,
so tests that watch the schedule put a ``sitecustomize`` on ``PYTHONPATH`` that registers
stand-in ``memoryd.jobs.<name>`` modules. Each writes ``start``/``done`` lines to a log
file, and can be told to sleep or fail through environment variables. The daemon itself is
unchanged: it imports the jobs the way it always does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support import transcripts as tx

SITECUSTOMIZE = """
import os, sys, time, types

def _fake_jobs():
    log = os.environ.get("FAKE_JOBS_LOG")
    if not log:
        return
    from memoryd.results import JobOutcome

    class Ran(JobOutcome):
        def __init__(self, summary):
            self.summary, self.changed = summary, False

        def as_dict(self):
            return {}

    def make(name):
        def run(cfg, paths, store, now, *, dry_run=False):
            with open(log, "a") as fh:
                fh.write(f"start {name} {now} {os.getpid()}\\n")
            time.sleep(float(os.environ.get("FAKE_JOB_SLEEP_" + name.upper(), "0")))
            if os.environ.get("FAKE_JOB_FAIL_" + name.upper()):
                raise RuntimeError(f"{name} failed on purpose")
            with open(log, "a") as fh:
                fh.write(f"done {name} {now} {os.getpid()}\\n")
            return Ran(f"{name} ran")
        return run

    for name in ("organize", "reflect", "expire", "promote"):
        mod = types.ModuleType("memoryd.jobs." + name)
        mod.run = make(name)
        sys.modules[mod.__name__] = mod

def _handler_boom():
    if not os.environ.get("FAKE_HANDLER_BOOM"):
        return
    import memoryd.service.ingest_worker as worker

    original = worker.TranscriptEvents._dispatch

    def exploding(self, event):
        if "boom" in str(event.src_path):
            raise RuntimeError("handler exploded on purpose")
        return original(self, event)

    worker.TranscriptEvents._dispatch = exploding

_fake_jobs()
_handler_boom()
"""


def write_hooks(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    return folder


@dataclass
class Install:
    """An OpenClaw install with one agent (``main``) and a memoryd config."""

    root: Path
    sessions: Path
    workspace: Path
    config: Path
    db: Path
    jobs_log: Path
    hooks: Path
    base_config: str = ""

    def write_config(self, extra: str = "") -> None:
        self.config.write_text(self.base_config + extra, encoding="utf-8")

    def transcript(self, name: str = "s1") -> Path:
        return self.sessions / f"{name}.jsonl"


def make_install(
    root: Path,
    extra_config: str = "",
    memory_files: int = 20,
    scheduled_since: str | None = "2026-01-01T00:00:00Z",
) -> Install:
    """An install; ``scheduled_since`` says since when memoryd has been running on it.

    The default (long ago) lets a daemon started at any test time catch up the
    periods it "missed"; None is a brand-new install, where nothing was missed.
    """
    files = [f"memory/n{i:03d}.md" for i in range(memory_files)] + ["MEMORY.md"]
    sessions, ws, cfg = tx.make_install(root, files)
    base = cfg.read_text(encoding="utf-8")
    # Defaults the tests rely on: UTC periods, no periodic rescan unless asked.
    if "[schedule]" not in extra_config:
        base += '[schedule]\ntimezone = "UTC"\n'
    if "[daemon]" not in extra_config:
        base += "[daemon]\nrescan_seconds = 3600.0\n"
    inst = Install(
        root=root,
        sessions=sessions,
        workspace=ws,
        config=cfg,
        db=root / "md" / "state.db",
        jobs_log=root / "jobs.log",
        hooks=write_hooks(root / "hooks"),
        base_config=base,
    )
    inst.write_config(extra_config)
    if scheduled_since is not None:
        from memoryd.clock import parse_instant
        from memoryd.service.schedule import SCHEDULED_SINCE
        from memoryd.store import Store

        with Store.open(inst.db) as store, store.transaction():
            store.set_meta(SCHEDULED_SINCE, repr(parse_instant(scheduled_since)))
    return inst


# --------------------------------------------------------------------------- transcripts

_counter = 0


def hit_lines(paths: list[str], call_id: str | None = None, ts: float | None = None) -> bytes:
    """A memory_search call and its result returning ``paths`` (one hit per path)."""
    global _counter
    _counter += 1
    cid = call_id or f"toolu_{os.getpid()}_{_counter}_{time.monotonic_ns()}"
    t = ts if ts is not None else time.time()
    return tx.call(cid, ts=t) + tx.result(cid, tx.search_payload(paths), ts=t + 0.5)


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


# --------------------------------------------------------------------------- state db


def hit_count(db: Path, where: str = "", args: tuple[Any, ...] = ()) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        sql = "SELECT COUNT(*) FROM hits" + (f" WHERE {where}" if where else "")
        return int(conn.execute(sql, args).fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # not created yet
    finally:
        conn.close()


SETTLE = "settle-"


def real_hits(db: Path) -> int:
    """Hits, without the markers :func:`settle` adds."""
    return hit_count(db, "call_id NOT LIKE ?", (SETTLE + "%",))


def settle(inst: Install, tag: str, timeout: float = 60.0) -> None:
    """Wait until the daemon has handled every transcript change made before this call.

    Instead of sleeping "long enough" (never long enough on a loaded machine, and a
    check after a short sleep passes without checking anything), a hit on a transcript
    of its own is the marker: the worker takes file events in order and commits a
    batch's files together, so once the marker's hit is stored, every earlier change
    has been read. Count the other hits with :func:`real_hits`.
    """
    cid = SETTLE + tag
    append(inst.transcript(cid), hit_lines(["MEMORY.md"], call_id=cid))
    wait_until(lambda: hit_count(inst.db, "call_id = ?", (cid,)) == 1, timeout)


def job_rows(db: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return [
            tuple(r)
            for r in conn.execute("SELECT job, period, status FROM jobs ORDER BY job, period")
        ]
    finally:
        conn.close()


def wait_until(predicate: Callable[[], Any], timeout: float = 60.0, step: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(step)


def clear_of_fires(tz_name: str = "UTC", margin: float = 30.0, *, shifted: float = 0.0) -> None:
    """Wait, if need be, until no job of the default schedule fires within ``margin`` seconds.

    A daemon's scheduler fires on the real clock, even when a test pins memoryd's own
    clock: a fire in the middle of a test that counts job runs would add one it does not
    expect (an hourly organize at xx:05, say). Tests that count runs start clear of fires.
    ``shifted``: the test also moves memoryd's clock that far ahead and counts the fires it
    passes; that moved clock must be clear too (a wake at 03:29:58 + a few seconds is past
    03:30's reflect, which the test, reckoning a moment earlier, did not expect).
    """
    from zoneinfo import ZoneInfo

    from memoryd.config import Config
    from memoryd.service.cron_trigger import build_triggers
    from memoryd.service.schedule import next_fire_time

    tz = ZoneInfo(tz_name)
    triggers = build_triggers(Config(), tz).values()
    while True:
        now = time.time()
        waits = [
            fire.timestamp() - (now + shift)
            for shift in {0.0, shifted}
            for fire in (next_fire_time(t, now + shift, tz) for t in triggers)
            if fire is not None
        ]
        if min(waits) > margin:
            return
        time.sleep(min(waits) + 1.0)


# --------------------------------------------------------------------------- notify socket


class NotifySocket:
    """A datagram socket standing in for systemd's notify socket."""

    def __init__(self) -> None:
        # AF_UNIX paths are limited to ~107 bytes: keep it short, outside pytest's tmp_path.
        self.dir = tempfile.mkdtemp(prefix="mdn")
        self.path = os.path.join(self.dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.05)
        self.messages: list[dict[str, str]] = []

    def drain(self) -> None:
        while True:
            try:
                data = self.sock.recv(65536)
            except (TimeoutError, BlockingIOError):
                return
            fields = {}
            for line in data.decode().splitlines():
                key, _, value = line.partition("=")
                fields[key] = value
            self.messages.append(fields)

    def wait_for(
        self, key: str, value: str | None = None, *, after: int = 0, timeout: float = 60.0
    ) -> dict[str, str]:
        """The first message (index >= after) carrying ``key`` (= ``value``)."""

        def find() -> dict[str, str] | None:
            self.drain()
            for msg in self.messages[after:]:
                if key in msg and (value is None or msg[key] == value):
                    return msg
            return None

        return wait_until(find, timeout)

    def index(self) -> int:
        self.drain()
        return len(self.messages)

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
            os.rmdir(self.dir)


# --------------------------------------------------------------------------- the daemon


@dataclass
class DaemonProcess:
    """``python -m memoryd --config FILE run`` with its stderr in a file."""

    inst: Install
    env_extra: dict[str, str] = field(default_factory=dict)
    notify: NotifySocket | None = None
    fake_jobs: bool = True
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    _log_offset: int = 0

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
        env.pop("NOTIFY_SOCKET", None)
        env.pop("WATCHDOG_USEC", None)
        env["PYTHONUNBUFFERED"] = "1"
        if self.fake_jobs:
            env["FAKE_JOBS_LOG"] = str(self.inst.jobs_log)
            env["PYTHONPATH"] = str(self.inst.hooks)
        if self.notify is not None:
            env["NOTIFY_SOCKET"] = self.notify.path
        env.update(self.env_extra)
        return env

    def start(self) -> DaemonProcess:
        n = 0
        while (self.inst.root / f"daemon{n}.log").exists():
            n += 1
        self.log_path = self.inst.root / f"daemon{n}.log"
        with open(self.log_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "memoryd", "--config", str(self.inst.config), "run"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=self.env(),
                cwd=self.inst.root,
            )
        return self

    def logs(self) -> list[dict[str, Any]]:
        """Every JSON line logged so far (non-JSON lines kept as {"raw": ...})."""
        assert self.log_path is not None
        out = []
        for line in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"raw": line})
        return out

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.logs() if e.get("event") == name]

    def wait_event(self, name: str, count: int = 1, timeout: float = 60.0) -> list[dict[str, Any]]:
        def enough() -> list[dict[str, Any]] | None:
            self.check_alive()
            found = self.events(name)
            return found if len(found) >= count else None

        return wait_until(enough, timeout, step=0.05)

    def wait_ready(self, timeout: float = 90.0) -> None:
        self.wait_event("daemon.ready", timeout=timeout)

    def check_alive(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            tail = self.log_path.read_text(errors="replace")[-3000:] if self.log_path else ""
            raise AssertionError(f"daemon exited with {self.proc.returncode}:\n{tail}")

    def send(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 90.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def cleanup(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def run_cli(
    inst: Install, *args: str, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A one-shot command beside the daemon, run in the pytest process (:mod:`support.inprocess`):
    the daemon is the process these tests are about; a command's own start-up is not."""
    from support.inprocess import memoryd

    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(env_extra or {})
    return memoryd(["--config", str(inst.config), *args], env=env, cwd=inst.root)


def jobs_log_lines(inst: Install) -> list[str]:
    try:
        return inst.jobs_log.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []


def done_jobs(inst: Install) -> list[str]:
    """Names of the fake jobs that completed, in order."""
    return [ln.split()[1] for ln in jobs_log_lines(inst) if ln.startswith("done ")]


def start(
    inst: Install,
    daemons: list[DaemonProcess],
    notify: NotifySocket | None = None,
    **env: str,
) -> DaemonProcess:
    """Start a daemon on ``inst`` and hand it to the ``daemons`` fixture to clean up."""
    d = DaemonProcess(inst, env_extra=env, notify=notify).start()
    daemons.append(d)
    return d


def process_state(pid: int) -> str:
    """The kernel's state letter of ``pid`` (``T``: stopped by a signal)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0]
