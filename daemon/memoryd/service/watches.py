"""The daemon's file-system watches: one watchdog observer (inotify, FSEvents, or polling)
and the folders it watches, kept in step with the folders the scanner follows.

The main loop only asks whether the observer is alive, restarts it, and hands it the folders
to watch (:func:`wanted_folders`). Events are never trusted to be complete: a lost one is
found by the daemon's rescans.
"""

from __future__ import annotations

import contextlib
import os
import stat
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
    # (the main loop asks every tick: one look at the root, not one per agent under it)
    has_root = agents_root.is_dir()
    under_root = str(agents_root).rstrip(os.sep) + os.sep  # (agents_root in d.parents, faster)
    if has_root:
        wanted[(str(agents_root), True)] = agents_root
    elif state_dir.is_dir():  # notice when agents/ appears
        wanted[(str(state_dir), False)] = state_dir
    for d in followed:
        if has_root and str(d).startswith(under_root):
            continue
        if d.is_dir():
            wanted[(str(d), True)] = d
    return wanted


def _folder(path: str) -> tuple[int, int] | None:
    """The folder at ``path`` now, (dev, ino); None when no folder is there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


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
        self._folders: dict[tuple[str, bool], tuple[int, int] | None] = {}  # (dev, ino) watched

    def sync(self, wanted: Mapping[tuple[str, bool], Path]) -> None:
        """Add watches for folders that appeared, drop those that are gone (or are another
        folder now: a watch follows the folder it was set on, not its name)."""
        for key in list(self.scheduled):
            if key not in wanted or _folder(key[0]) != self._folders.get(key):
                with contextlib.suppress(Exception):
                    self.observer.unschedule(self.scheduled.pop(key))
        self._folders = {k: f for k, f in self._folders.items() if k in self.scheduled}
        for key, path in wanted.items():
            if key in self.scheduled:
                continue
            # (tried: a watch that failed is tried again when its folder or the followed change)
            self._folders[key] = _folder(key[0])
            try:
                watch = self.observer.schedule(self.handler, str(path), recursive=key[1])
                self.scheduled[key] = watch
                log.info("watch.add", dir=str(path), recursive=key[1])
            except OSError as exc:  # ENOSPC: out of inotify watches; the rescan still works
                log.warning("watch.failed", dir=str(path), error=str(exc))

    def stale(self, wanted: Mapping[tuple[str, bool], Path]) -> bool:
        """Whether the watches lag behind the folders: one that went away and came back
        (removed and made again, restored from a copy, a disk unmounted then mounted) was
        watched by no one, its transcripts read by the periodic rescan only."""
        if any(key not in wanted for key in self.scheduled):
            return True
        return any(_folder(key[0]) != self._folders.get(key) for key in wanted)

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
