"""The one lock helper: a holder killed with SIGKILL never blocks the next daemon or organize.

The daemon's single-instance lock, the mover's journal lock and the tier store's lock are all
taken by :mod:`memoryd.locks`. A real child process holds each one; the parent checks
that it is refused while the child lives and granted as soon as the child is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.locks import LOCK_NAME, AlreadyRunning, StateLock, acquire, lock_holder

pytestmark = pytest.mark.crash

HOLD = """
import sys
from pathlib import Path
kind, where = sys.argv[1], Path(sys.argv[2])
if kind == "state":
    from memoryd.locks import StateLock
    StateLock.acquire(where)
elif kind == "tiers":
    from memoryd.tierstore.layout import tiers_lock
    class P:  # what tiers_lock reads of the resolved paths
        memoryd_dir = where
    lock = tiers_lock(P())  # (kept: a dropped context manager lets go)
    lock.__enter__()
else:  # the mover's journal lock, beside the state database
    from memoryd.mover import Mover
    from memoryd.store import Store
    lock = Mover(Store.open(where / "state.db"), [where])._locked()
    lock.__enter__()
print("held", flush=True)
sys.stdin.read()  # hold until killed
"""


def hold(kind: str, where: Path) -> subprocess.Popen[str]:
    """A child process holding lock ``kind``; returns once it says it holds it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, kind, str(where)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def kill9(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def test_a_daemon_killed_with_sigkill_never_blocks_the_next_start(tmp_path: Path) -> None:
    state = tmp_path / "memoryd"
    child = hold("state", state)
    try:
        assert lock_holder(state) == child.pid  # what `memoryd status` shows
        with pytest.raises(AlreadyRunning) as refused:
            StateLock.acquire(state, patience=0.1)
        assert refused.value.pid == child.pid
        assert str(child.pid) in str(refused.value)
    finally:
        kill9(child)
    assert lock_holder(state) is None
    lock = StateLock.acquire(state, patience=0.0)
    try:
        assert (state / LOCK_NAME).read_text().strip() == str(os.getpid())
    finally:
        lock.release()
    assert (state / LOCK_NAME).exists()  # never deleted: two daemons must lock one inode


@pytest.mark.parametrize("kind", ["tiers", "mover"])
def test_organize_and_mover_locks_wait_for_the_holder_and_outlive_a_killed_one(
    tmp_path: Path, kind: str
) -> None:
    state = tmp_path / "memoryd"
    state.mkdir()
    path = state / ("tiers.lock" if kind == "tiers" else "mover.lock")
    child = hold(kind, state)
    try:
        assert acquire(path, patience=0.1) is None  # held by the child: refused
    finally:
        kill9(child)
    fd = acquire(path, patience=0.0)  # the kernel dropped the dead child's lock
    assert fd is not None
    os.close(fd)
