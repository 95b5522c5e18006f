"""Real ``memoryd`` processes that stop themselves at a fault point (``MEMORYD_FAULT``'s
``stop``), for races ordered by the code's own points rather than by sleeps."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def spawn(config: Path, *args: str, fault: str | None = None, cwd: Path | None = None
          ) -> subprocess.Popen[str]:  # fmt: skip
    """``python -m memoryd --config CONFIG ARGS`` as a child, this checkout's code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "daemon"), env.get("PYTHONPATH", "")])
    if fault:
        env["MEMORYD_FAULT"] = fault
    return subprocess.Popen(
        [sys.executable, "-m", "memoryd", "--config", str(config), *args],
        env=env, cwd=cwd or config.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def wait_stopped(proc: subprocess.Popen[str], timeout: float = 60.0) -> None:
    """Until the process stopped itself at its fault point (SIGSTOP); it ending first, or
    never getting there, fails the test."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"ended before its fault point: {proc.communicate()}")
        with open(f"/proc/{proc.pid}/stat", encoding="utf-8") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        time.sleep(0.01)
    raise AssertionError("never reached its fault point")


def finish(proc: subprocess.Popen[str], timeout: float = 120.0) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) once it ends; a traceback fails the test."""
    out, err = proc.communicate(timeout=timeout)
    assert "Traceback" not in err, err
    return proc.returncode, out, err


def waiting_for_a_lock(proc: subprocess.Popen[str]) -> bool:
    """Whether the process waits for a file lock (a blocked ``flock``: a ``->`` line of
    ``/proc/locks`` names it)."""
    with open("/proc/locks", encoding="utf-8") as fh:
        return any("->" in line and f" {proc.pid} " in f" {line} " for line in fh)


def until_ended_or_waiting(proc: subprocess.Popen[str], timeout: float = 120.0) -> None:
    """Until ``proc`` ended or waits for a lock another process holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None or waiting_for_a_lock(proc):
            return
        time.sleep(0.01)
    raise AssertionError("neither ended nor waited for a lock")
