"""Shared test set-up: the test helpers folder on sys.path, a clean environment."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from daemon_harness import DaemonProcess, NotifySocket  # found through the path above

# Tests never see the developer's own OpenClaw install or memoryd config.
for var in (
    "OPENCLAW_STATE_DIR",
    "CLAWDBOT_STATE_DIR",
    "OPENCLAW_HOME",
    "OPENCLAW_CONFIG_PATH",
    "MEMORYD_CONFIG",
    "MEMORYD_NOW",
    "MEMORYD_CLOCK_OFFSET",
    "NOTIFY_SOCKET",
):
    os.environ.pop(var, None)


@pytest.fixture
def notify() -> Iterator[NotifySocket]:
    """A notify socket of the test's own, standing in for systemd's."""
    sock = NotifySocket()
    yield sock
    sock.close()


@pytest.fixture
def daemons() -> Iterator[list[DaemonProcess]]:
    """Daemons a test starts; each is stopped (and killed if need be) afterwards."""
    started: list[DaemonProcess] = []
    yield started
    for d in started:
        d.cleanup()


@pytest.fixture(autouse=True)
def _no_fault_hooks_left() -> Iterator[None]:
    """A fault hook a test sets (``memoryd.faults``) never reaches the next test."""
    from memoryd import faults

    yield
    faults.clear()
