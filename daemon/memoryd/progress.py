"""Progress of a long loop: one line on a terminal, or a small note the daemon leaves for
``memoryd status``.

The interface is one callable, :data:`Report`: a slow loop calls ``report(done, total,
bytes_done, bytes_total)`` after each item and knows nothing of where it goes. Not a library:
a progress library costs more to import than a read command's whole run.

The line is rewritten in place at most 10 times a second, only when stderr is a terminal, and
wiped before the command prints its report, so the report reads exactly as without it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

# done, total, bytes done, bytes total (0 when the items have no size)
Report = Callable[[int, int, int, int], None]

_TERMINAL_EVERY_S = 0.1  # redraw at most this often
_NOTE_EVERY_S = 1.0  # rewrite the daemon's note at most this often
_QUIET_FIRST_S = 0.5  # a loop done sooner than this shows nothing at all
FIRST_SCAN_NOTE = "first_scan.json"


def human_bytes(n: int) -> str:
    """A size as people read it (``512 B``, ``3.4 KB``, ``35.9 MB``, ``1.2 GB``; binary units,
    as ``ls -lh`` and ``du -h`` count), in every command that prints one (through
    ``commands.formats``) and in progress lines."""
    if n < 1024:
        return f"{n} B"
    for unit, shift in (("KB", 10), ("MB", 20)):
        if n < 1 << (shift + 10):
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n / (1 << 30):.1f} GB"


def describe(
    what: str, done: int, total: int, bytes_done: int, bytes_total: int, elapsed: float
) -> str:
    """The progress line (pure): counts, sizes done and left, and the time left at the rate so
    far (by bytes when the items have sizes, else by items; none before anything is done)."""
    parts = [f"{what}: {done} of {total}"]
    if bytes_total > 0:
        left = max(bytes_total - bytes_done, 0)
        parts.append(f"{human_bytes(bytes_done)} of {human_bytes(bytes_total)}")
        parts.append(f"{human_bytes(left)} left")
        fraction = bytes_done / bytes_total
    else:
        fraction = done / total if total else 1.0
    if 0 < fraction < 1 and elapsed > 0:
        eta = elapsed * (1 - fraction) / fraction
        parts.append(f"about {eta:.0f} s left" if eta < 120 else f"about {eta / 60:.0f} min left")
    return ", ".join(parts)


class TerminalLine:
    """A :data:`Report` that redraws one line on a terminal; :meth:`close` wipes it."""

    def __init__(self, what: str, stream: IO[str], clock: Callable[[], float] = time.monotonic):
        self.what = what
        self.stream = stream
        self._clock = clock
        self._start = clock()
        self._last = -1.0
        self._shown = 0  # width of the line on screen (0: nothing shown)

    def __call__(self, done: int, total: int, bytes_done: int, bytes_total: int) -> None:
        now = self._clock()
        if now - self._start < _QUIET_FIRST_S or now - self._last < _TERMINAL_EVERY_S:
            return
        self._last = now
        line = describe(self.what, done, total, bytes_done, bytes_total, now - self._start)
        width = _columns(self.stream) - 1
        line = line[:width]
        pad = " " * max(self._shown - len(line), 0)
        try:
            self.stream.write("\r" + line + pad)
            self.stream.flush()
        except (OSError, ValueError):
            return
        self._shown = len(line)

    def close(self) -> None:
        """Wipe the line (the report that follows starts on a clean one)."""
        if self._shown:
            try:
                self.stream.write("\r" + " " * self._shown + "\r")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self._shown = 0


def on_terminal(what: str, stream: IO[str] | None = None) -> TerminalLine | None:
    """A progress line on ``stream`` (stderr) when it is a terminal, else None."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    try:
        if stream is None or not (isatty and isatty()):
            return None
    except (OSError, ValueError):
        return None
    if os.environ.get("TERM") == "dumb":
        return None
    return TerminalLine(what, stream)


def _columns(stream: IO[str]) -> int:
    """The terminal's width: ``$COLUMNS``, else the terminal's own, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class Note:
    """A :data:`Report` the daemon's first scan writes to a small JSON file for ``status``.

    Rewritten (atomically, by rename) at most once a second, never for a scan done within
    half a second; :meth:`close` removes it. Best effort: a failed write is only skipped.
    """

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._start = clock()
        self._last = -1.0

    def __call__(self, done: int, total: int, bytes_done: int, bytes_total: int) -> None:
        now = self._clock()
        if now - self._start < _QUIET_FIRST_S or now - self._last < _NOTE_EVERY_S:
            return
        self._last = now
        import json

        doc = {"pid": os.getpid(), "done": done, "total": total, "bytes_done": bytes_done,
               "bytes_total": bytes_total}  # fmt: skip
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            tmp.write_text(json.dumps(doc), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            pass

    def close(self) -> None:
        for p in (self.path, self.path.with_name(self.path.name + ".tmp")):
            with contextlib.suppress(OSError):
                p.unlink()


def read_note(path: Path, pid: int | None) -> dict[str, Any] | None:
    """The running daemon's first-scan progress (None: none, or not of daemon ``pid``)."""
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or pid is None or doc.get("pid") != pid:
        return None
    try:
        return {k: int(doc[k]) for k in ("done", "total", "bytes_done", "bytes_total")}
    except (KeyError, TypeError, ValueError):
        return None
