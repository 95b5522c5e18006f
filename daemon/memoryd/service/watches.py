"""The daemon's file-system watches: one watchdog observer (inotify, FSEvents, or polling)
and the folders it watches, kept in step with the folders the scanner follows.

The main loop only asks whether the observer is alive, restarts it, and hands it the folders
to watch (:func:`wanted_folders`). Events are never trusted to be complete: a lost one is
found by the daemon's rescans.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..log import get_logger

log = get_logger("memoryd.service")


def wanted_folders(
    agents_root: Path, state_dir: Path, followed: Iterable[Path]
) -> dict[tuple[str, bool], Path]:
    """Folders to observe, keyed (folder, recursive): the agents root (covers new agents), or
    the state folder until ``agents/`` appears, and each followed folder not under it."""
    wanted: dict[tuple[str, bool], Path] = {}
    if agents_root.is_dir():
        wanted[(str(agents_root), True)] = agents_root
    elif state_dir.is_dir():  # notice when agents/ appears
        wanted[(str(state_dir), False)] = state_dir
    for d in followed:
        if agents_root in d.parents and agents_root.is_dir():
            continue
        if d.is_dir():
            wanted[(str(d), True)] = d
    return wanted


class Watches:
    """A started observer and the watches scheduled on it."""

    def __init__(self, handler: Any, polling: bool, polling_interval: float) -> None:
        if polling:
            from watchdog.observers.polling import PollingObserver

            observer: Any = PollingObserver(timeout=max(polling_interval, 0.1))
        else:
            from watchdog.observers import Observer

            observer = Observer()
        observer.name = "memoryd-observer"
        observer.daemon = True
        observer.start()
        self.observer, self.polling, self.handler = observer, polling, handler
        self.scheduled: dict[tuple[str, bool], Any] = {}

    def sync(self, wanted: Mapping[tuple[str, bool], Path]) -> None:
        """Add watches for folders that appeared, drop those that are gone."""
        for key in list(self.scheduled):
            if key not in wanted or not Path(key[0]).is_dir():
                with contextlib.suppress(Exception):
                    self.observer.unschedule(self.scheduled.pop(key))
        for key, path in wanted.items():
            if key in self.scheduled:
                continue
            try:
                watch = self.observer.schedule(self.handler, str(path), recursive=key[1])
                self.scheduled[key] = watch
                log.info("watch.add", dir=str(path), recursive=key[1])
            except OSError as exc:  # ENOSPC: out of inotify watches; the rescan still works
                log.warning("watch.failed", dir=str(path), error=str(exc))

    def alive(self) -> bool:
        if not self.observer.is_alive():
            return False
        return all(e.is_alive() for e in self.observer.emitters)

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.observer.stop()

    def join(self, timeout: float) -> None:
        with contextlib.suppress(Exception):
            self.observer.join(timeout)
