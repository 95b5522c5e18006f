"""Give a finished job's memory back: its cyclic garbage now, glibc's free pages to the OS.

The jobs that read every hit row build a working set as large as the ``hits`` table, cyclic
garbage once the job returns; left to a rare full collection, with glibc keeping the freed
pages, the daemon's RSS climbed with the history's size (docs/benchmarks.md). The systemd unit
runs the daemon with ``PYTHONMALLOC=malloc``, so that the trim reaches every free page.

The trim is glibc's only; elsewhere only the collection runs. Never raises: freeing memory is
not worth a failed job or a dead thread.
"""

from __future__ import annotations

import functools
import gc
import sys
from collections.abc import Callable
from dataclasses import dataclass

from ..log import get_logger

log = get_logger("memoryd.service")


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, looked up once; None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        fn = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (musl), or no libc.so.6
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


@dataclass
class Released:
    """What one :func:`release` did (counted in the daemon's totals)."""

    collected: int  # unreachable objects freed by the full collection
    trimmed: bool  # glibc handed pages back to the OS (malloc_trim returned 1)


def release() -> Released:
    """A full collection, then ``malloc_trim(0)`` where glibc has it. Costs a few ms."""
    collected = 0
    trimmed = False
    try:
        collected = gc.collect()
        trim = _malloc_trim()
        if trim is not None:
            trimmed = bool(trim(0))
    except Exception:  # never fatal (see the module's docstring)
        log.warning("memory.release_failed", exc_info=True)
    return Released(collected, trimmed)


def resident_kb() -> int | None:
    """This process's resident set in kB (``/proc/self/statm``); None where there is none."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def open_fds() -> int | None:
    """How many file descriptors this process holds (``/proc/self/fd``); None elsewhere."""
    import os

    try:
        return len(os.listdir("/proc/self/fd")) - 1  # (less the one listdir held open)
    except OSError:
        return None
