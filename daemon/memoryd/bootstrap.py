"""What OpenClaw already puts into a new session, so the hot notes fit beside it.

OpenClaw injects the workspace's bootstrap files into every new session, each cut at
``bootstrapMaxChars``, all together at ``bootstrapTotalMaxChars``; memoryd's plugin adds the
``hot/`` notes on the same turn. Two rules, decided here purely, keep that polite: the notes
never take more than their own budget or what the bootstrap files leave of OpenClaw's total,
and a note already in a bootstrap file (promoted into ``MEMORY.md``) is not said twice.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .config import agent_entry

# The files OpenClaw's bootstrap reads from a workspace (its doctor checks the same list).
BOOTSTRAP_FILES = (
    "AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md", "BOOTSTRAP.md",
    "MEMORY.md",
)  # fmt: skip
DEFAULT_FILE_MAX = 20_000  # agents.defaults.bootstrapMaxChars
DEFAULT_TOTAL_MAX = 60_000  # agents.defaults.bootstrapTotalMaxChars
USER_MD_CAP = 4_000  # USER.md's fixed cap, which bootstrapMaxChars can lower, never raise
MIN_REPEAT_CHARS = 24  # a shorter note body is too common a string to call it repeated


class BootstrapBudget(NamedTuple):
    """OpenClaw's budget for one agent's bootstrap and what its files already use of it."""

    file_max: int
    total_max: int
    used: int

    @property
    def room(self) -> int:
        return max(0, self.total_max - self.used)


def _js_number(value: Any) -> float | None:
    """``value`` as JavaScript holds a JSON number (a double: an integer past its range is
    Infinity, as ``JSON.parse`` makes it), or None when it is no number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:  # (json gives a Python int of any length)
        return math.inf


def _positive_int(value: Any, default: int) -> int:
    """A limit as OpenClaw 2026.9.6 reads it (``resolveBootstrapCharLimit``): any finite
    number above 0, floored (``4e3`` and ``4000.0`` are 4,000), else the default."""
    number = _js_number(value)
    if number is None or not math.isfinite(number) or number <= 0:
        return default
    return math.floor(number)


def bootstrap_limits(oc: Mapping[str, Any], agent_id: str) -> tuple[int, int]:
    """(per-file, total) character limits for ``agent_id``: its own entry's value when it has
    one (null: none), else the defaults'; a value that is no number above 0 gives OpenClaw's
    default, as OpenClaw does (its own entry's included: it does not fall back to the
    defaults' then)."""
    agents = oc.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, Mapping) else None
    defaults = defaults if isinstance(defaults, Mapping) else {}
    own = agent_entry(dict(oc), agent_id) or {}

    def limit(key: str, fallback: int) -> int:
        raw = own.get(key)
        return _positive_int(defaults.get(key) if raw is None else raw, fallback)

    return limit("bootstrapMaxChars", DEFAULT_FILE_MAX), limit("bootstrapTotalMaxChars",
                                                               DEFAULT_TOTAL_MAX)  # fmt: skip


_SAFE_INT_MAX = 2**53 - 1  # (zod's int(): JavaScript's Number.MAX_SAFE_INTEGER)


def limit_faults(oc: Mapping[str, Any], agent_id: str) -> list[str]:
    """The bootstrap limits of ``openclaw.json`` for ``agent_id`` that ``openclaw config
    validate`` refuses (it wants a whole number above 0), each as ``KEY = VALUE``: OpenClaw
    does not run on such a file, so no cut computed from it is the one a session meets."""
    import json

    agents = oc.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, Mapping) else None
    places = [("agents.defaults", defaults if isinstance(defaults, Mapping) else {}),
              (f"agent {agent_id}'s", agent_entry(dict(oc), agent_id) or {})]  # fmt: skip
    out = []
    for where, entry in places:
        for key in ("bootstrapMaxChars", "bootstrapTotalMaxChars"):
            value = entry.get(key)
            number = _js_number(value)
            whole = number is not None and math.isfinite(number) and number.is_integer()
            # (null too: zod's optional() takes a key left out, not one set to null)
            if key in entry and not (whole and 0 < (number or 0) <= _SAFE_INT_MAX):
                out.append(f"{where}.{key} = {json.dumps(value)}".replace("'s.", "'s "))
    return out


# Past this a bootstrap file is cut far beyond any budget OpenClaw allows: read no more.
_BOOTSTRAP_READ_MAX = 4 * 1024 * 1024
# OpenClaw 2026.9.6 reads no bootstrap file over this many bytes (its
# MAX_WORKSPACE_BOOTSTRAP_FILE_BYTES, dist/workspace-bootstrap-read-*.mjs): a session gets
# this line in the file's place instead.
OPENCLAW_READ_MAX = 2 * 1024 * 1024
UNREADABLE = f"[UNREADABLE: File exceeds {OPENCLAW_READ_MAX} bytes]"


def read_bootstrap(workspace: Path, over: set[str] | None = None) -> dict[str, str]:
    """The bootstrap files present in ``workspace`` (name → text); unreadable ones left out.

    A symlink is followed, as OpenClaw follows it; anything but a regular file (a FIFO named
    ``AGENTS.md`` would block a plain read forever) is left out, and a file is read up to
    ``_BOOTSTRAP_READ_MAX`` bytes. The names of files over :data:`OPENCLAW_READ_MAX` bytes,
    which OpenClaw does not read, are added to ``over``.
    """
    out: dict[str, str] = {}
    for name in BOOTSTRAP_FILES:
        try:
            fd = os.open(workspace / name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(_BOOTSTRAP_READ_MAX)
        except OSError:
            continue
        finally:
            os.close(fd)
        out[name] = data.decode("utf-8", errors="replace")
        if over is not None and len(data) > OPENCLAW_READ_MAX:
            over.add(name)
    return out


def context_injection(oc: Mapping[str, Any], agent_id: str) -> str:
    """The agent's ``contextInjection`` as OpenClaw 2026.9.6 resolves it
    (``resolveContextInjectionMode``): its own entry's when one of the three, else the
    defaults', else ``"always"``; ``"never"`` puts no bootstrap file into any session."""
    own = (agent_entry(dict(oc), agent_id) or {}).get("contextInjection")
    if own in ("always", "continuation-skip", "never"):
        return str(own)
    agents = oc.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, Mapping) else None
    value = defaults.get("contextInjection") if isinstance(defaults, Mapping) else None
    return value if isinstance(value, str) else "always"


def openclaw_cuts(
    present: Mapping[str, str],
    over: set[str],
    file_max: int,
    total_max: int,
    workspace: Path,
    rooms: dict[str, int] | None = None,
    injection: str = "always",
) -> dict[str, Any]:
    """Each bootstrap file's cut (:func:`memoryd.bootstrap_cut.bootstrap_cuts`, ``rooms``
    as there), a file over OpenClaw's read bound taking the budget of the line OpenClaw puts
    in its place, and itself not loaded (``unreadable``)."""
    from .bootstrap_cut import FILE_ORDER, bootstrap_cuts, js_trim_end
    from .section_map import utf16_len

    files = {n: UNREADABLE if n in over else present.get(n) for n in FILE_ORDER}
    paths = {name: str(workspace / name) for name in FILE_ORDER}
    cuts = bootstrap_cuts(files, file_max, total_max, paths, rooms)
    for name in over & cuts.keys():
        length = utf16_len(js_trim_end(present[name]))
        cuts[name] = cuts[name]._replace(length=length, head=0, tail=0, loaded=False,
                                         unreadable=True)  # fmt: skip
    if injection == "never":  # (``injection``: :func:`context_injection`)
        for name, c in cuts.items():
            cuts[name] = c._replace(head=0, tail=0, injected=0, loaded=False, never=True)
    return cuts


def bootstrap_budget(files: Mapping[str, str], file_max: int, total_max: int) -> BootstrapBudget:
    """How much of the total budget the bootstrap files take, each cut as OpenClaw cuts it."""
    used = 0
    for name, text in files.items():
        cap = min(file_max, USER_MD_CAP) if name == "USER.md" else file_max
        used += min(len(text), cap)
    return BootstrapBudget(file_max, total_max, min(used, total_max))


def session_budget(own_max: int, budget: BootstrapBudget) -> int:
    """The characters the hot notes may take: their own budget, within what is left."""
    return max(0, min(own_max, budget.room))


_SPACE = re.compile(r"\s+")


def _flat(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def note_body(text: str) -> str:
    """A note's text without its leading title lines (``# …``): promotion may retitle it."""
    lines = text.strip().splitlines()
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)
    return "\n".join(lines)


def already_in(note_text: str, bootstrap_text: str) -> bool:
    """Whether a note's body is already said, word for word, in the bootstrap text."""
    body = _flat(note_body(note_text))
    return len(body) >= MIN_REPEAT_CHARS and body in _flat(bootstrap_text)


class SessionCuts(NamedTuple):
    """Where OpenClaw cuts each bootstrap file of a workspace in a new main session."""

    cuts: dict[str, Any]  # name -> memoryd.bootstrap_cut.FileCut, in prompt order
    file_max: int  # bootstrapMaxChars
    total_max: int  # bootstrapTotalMaxChars
    texts: dict[str, str]  # the files present (name -> text), as read


def session_cuts(oc: Mapping[str, Any], agent_id: str, workspace: Path) -> SessionCuts:
    """The bootstrap cut of every file of ``workspace`` for ``agent_id``, from the user's
    ``openclaw.json`` (``oc``) and the files as they are now (``memoryd sections``, the
    reflect page)."""
    file_max, total_max = bootstrap_limits(oc, agent_id)
    over: set[str] = set()
    present = read_bootstrap(workspace, over)
    injection = context_injection(oc, agent_id)
    cuts = openclaw_cuts(present, over, file_max, total_max, workspace, injection=injection)
    return SessionCuts(cuts, file_max, total_max, present)
