"""Talking to the supervisor: sd_notify readiness, reload, stop, watchdog pings, ``STATUS=``.

Silent without ``NOTIFY_SOCKET`` (launchd, a terminal), so the daemon calls it the same way
everywhere. The one-line status summary is a pure function of plain facts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class StatusFacts:
    """What the one-line ``STATUS=`` summary is made of."""

    files_followed: int
    hits_today: int
    next_job: str | None  # name of the next job to fire
    next_at: datetime | None
    note: str = ""


def status_line(facts: StatusFacts) -> str:
    """``following 12 transcripts, 34 hits today, next organize at 14:05`` (+ a note)."""
    parts = [
        f"following {facts.files_followed} transcript{'s' if facts.files_followed != 1 else ''}",
        f"{facts.hits_today} hit{'s' if facts.hits_today != 1 else ''} today",
    ]
    if facts.next_job and facts.next_at:
        parts.append(f"next {facts.next_job} at {facts.next_at.strftime('%Y-%m-%d %H:%M %Z')}")
    line = ", ".join(parts)
    return f"{line}; {facts.note}" if facts.note else line


class Notifier:
    """The sd_notify protocol: silent without ``NOTIFY_SOCKET`` (launchd, a terminal)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._notifier: Any = None
        if environ.get("NOTIFY_SOCKET"):
            import sdnotify

            self._notifier = sdnotify.SystemdNotifier()
        usec = environ.get("WATCHDOG_USEC", "")
        pid = environ.get("WATCHDOG_PID", "")
        mine = not pid or pid == str(os.getpid())
        # Ping at half the watchdog period, as sd_watchdog_enabled(3) advises.
        self.watchdog_interval = int(usec) / 2e6 if usec.isdigit() and mine else None

    def send(self, *lines: str) -> None:
        if self._notifier is not None:
            # sdnotify encodes as Latin-1 and drops, silently, what that cannot hold (a '→',
            # a path in Cyrillic); systemd reads UTF-8: it is handed the UTF-8 bytes.
            self._notifier.notify("\n".join(lines).encode().decode("latin-1"))

    def ready(self, status: str) -> None:
        self.send("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def status(self, status: str) -> None:
        self.send(f"STATUS={status}")

    def reloading(self) -> None:
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.send("RELOADING=1", f"MONOTONIC_USEC={usec}", "STATUS=reloading configuration")

    def stopping(self) -> None:
        self.send("STOPPING=1", "STATUS=stopping")

    def watchdog(self) -> None:
        self.send("WATCHDOG=1")

    def extend_start(self, seconds: float, status: str) -> None:
        self.send(f"EXTEND_TIMEOUT_USEC={int(seconds * 1e6)}", f"STATUS={status}")
