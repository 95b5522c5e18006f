"""When memoryd's OpenClaw plugin last ran a memoryd command, and from which gateway.

The plugin sets ``MEMORYD_PLUGIN_CALLER`` (the gateway's pid and the plugin's folder, JSON)
for every command it runs; the note lets ``status`` say whether the plugin is loaded in a
gateway that still runs. The variable is another program's data: parsed strictly, never used
to reach a file. A note is written at most once a minute per gateway, and one that cannot be
written is skipped, never an error.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

ENV = "MEMORYD_PLUGIN_CALLER"
SEEN_NAME = "openclaw-plugin-seen.json"
REWRITE_AFTER_SECONDS = 60.0
_MAX_FOLDER_CHARS = 4096


def parse_caller(text: str) -> dict[str, Any] | None:
    """``{"pid": int, "folder": str}`` from the variable's text; None for anything else."""
    if len(text) > _MAX_FOLDER_CHARS + 64:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    pid, folder = doc.get("pid"), doc.get("folder")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    if not isinstance(folder, str) or not folder or "\0" in folder:
        return None
    return {"pid": pid, "folder": folder}


def note_call(memoryd_dir: Path, caller_text: str, command: str, now: float) -> bool:
    """Note one call of the plugin (True: written). Skipped when the variable does not
    parse, when the same gateway was noted less than a minute ago, or when the state
    folder cannot be written."""
    caller = parse_caller(caller_text)
    if caller is None:
        return False
    path = memoryd_dir / SEEN_NAME
    last = last_seen(memoryd_dir) or {}
    same = (last.get("pid"), last.get("folder")) == (caller["pid"], caller["folder"])
    if same and 0 <= now - float(last.get("at", 0)) < REWRITE_AFTER_SECONDS:
        return False
    doc = {**caller, "at": now, "command": command}
    tmp = path.with_name(f".{SEEN_NAME}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(doc) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return False
    return True


def last_seen(memoryd_dir: Path) -> dict[str, Any] | None:
    """The last call noted (``pid``, ``folder``, ``at``, ``command``), or None."""
    try:
        doc = json.loads((memoryd_dir / SEEN_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or parse_caller(json.dumps(doc)) is None:
        return None
    if not isinstance(doc.get("at"), (int, float)):
        return None
    return doc


def process_runs(pid: int) -> bool:
    """Whether a process of that id runs now (one we may not signal runs too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
