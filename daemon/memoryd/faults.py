"""Fault points: named places in the code where a test can make something happen.

Crash and race tests must not depend on the machine's speed, so the code calls :func:`point`
at the moments that matter and a test decides what happens there: in-process with
:func:`hook`, in a subprocess with ``MEMORYD_FAULT`` (docs/moves.md, "For developers: fault
points"; besides its actions, ``hang`` blocks the thread that reached the point for as long as
the spec still asks for it, as a read that never returns would).

With neither set, :func:`point` costs one dict lookup and one environment read.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

ENV = "MEMORYD_FAULT"

_hooks: dict[str, Callable[..., None]] = {}
_reached: dict[str, int] = {}

_ERRNOS = {"eacces": errno.EACCES, "erofs": errno.EROFS, "enospc": errno.ENOSPC, "eio": errno.EIO,
           "einval": errno.EINVAL}  # fmt: skip


def hook(name: str, action: Callable[..., None] | None) -> None:
    """Run ``action`` each time ``name`` is reached (None removes it), with what the point
    passes, if anything (``store.opened`` passes the new SQLite connection)."""
    if action is None:
        _hooks.pop(name, None)
    else:
        _hooks[name] = action


def clear() -> None:
    """Forget every hook and every count (between tests)."""
    _hooks.clear()
    _reached.clear()


def parse(spec: str) -> list[tuple[str, int | None, str]]:
    """``a.b:3:kill,c.d:*:erofs`` → [(point, n or None for every time, action)]."""
    out: list[tuple[str, int | None, str]] = []
    for item in spec.split(","):
        parts = item.strip().split(":")
        if not parts[0]:
            continue
        count = parts[1] if len(parts) > 1 else "1"
        action = parts[2] if len(parts) > 2 else "kill"
        out.append((parts[0], None if count == "*" else int(count), action))
    return out


def point(name: str, *subject: object) -> None:
    """The code reached ``name``: run its hook, then any ``MEMORYD_FAULT`` action for it."""
    action = _hooks.get(name)
    if action is not None:
        action(*subject)
    spec = _spec()
    if not spec:
        return
    n = _reached[name] = _reached.get(name, 0) + 1
    for where, count, what in parse(spec):
        if where == name and (count is None or count == n):
            _act(name, what)


def _spec() -> str | None:
    """``$MEMORYD_FAULT``, or the text of the file it names with ``@``."""
    spec = os.environ.get(ENV)
    if spec and spec.startswith("@"):
        try:
            with open(spec[1:], encoding="utf-8") as fh:
                return fh.read().strip()
        except OSError:
            return None
    return spec


def _act(name: str, what: str) -> None:
    import signal  # (here: every command imports this module, few ever fire a point)
    import threading

    if what == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif what == "stop":
        # Sent to this thread: a SIGSTOP sent with kill() is taken by whichever thread the
        # kernel picks, and the one that reached the point could run on for a while.
        signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)
    elif what == "hang":
        import time

        while any(w == name and a == "hang" for w, _n, a in parse(_spec() or "")):
            time.sleep(0.05)
    elif what in _ERRNOS:
        code = _ERRNOS[what]
        raise OSError(code, f"{os.strerror(code)} (fault point {name})")
    else:
        raise ValueError(f"{ENV}: unknown action {what!r} at {name}")
