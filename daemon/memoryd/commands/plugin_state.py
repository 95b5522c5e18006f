"""Where memoryd's OpenClaw plugin lives and what ``status`` says of it.

Apart from ``commands.plugin`` (which installs) so that ``status`` can read it without the
installer, and neither imports the other's command.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

PLUGIN_ID = "memoryd"
ENTRY = f"plugins.entries.{PLUGIN_ID}"


def plugin_dir() -> Path:
    """The plugin folder inside the installed package."""
    return Path(__file__).resolve().parent.parent / "openclaw_plugin"


def dotted_value(doc: Any, dotted: str) -> Any:
    """``doc["a"]["b"]`` for ``"a.b"``; None where a part is missing or not a mapping."""
    for part in dotted.split("."):
        if not isinstance(doc, Mapping) or part not in doc:
            return None
        doc = doc[part]
    return doc


COPY_NAME = "openclaw-plugin"  # in memoryd's state folder: the plugin OpenClaw loads
STAMP_NAME = "installed.json"  # in the copy: who installed it, from what


def installed_copy(memoryd_dir: Path) -> Path:
    """The plugin folder OpenClaw loads: memoryd's own copy in its state folder,
    outside any virtualenv, so that recreating or moving the venv leaves it in place."""
    return memoryd_dir / COPY_NAME


def plugin_digest(folder: Path) -> str:
    """A digest of the plugin's files (not the stamp): equal for an up-to-date copy."""
    import hashlib

    h = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name != STAMP_NAME and path.suffix in (".js", ".json"):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def plugin_state(memoryd_dir: Path, oc: Mapping[str, Any]) -> dict[str, Any]:
    """What ``status`` says of the plugin: installed in OpenClaw (its entry enabled, our copy
    among its load paths), and whether the copy is this memoryd's plugin. Reads only."""
    import json

    copy = installed_copy(memoryd_dir)
    paths = dotted_value(oc, "plugins.load.paths") or []
    entry = dotted_value(oc, ENTRY) or {}
    loaded_from = next((str(p) for p in paths if Path(str(p)) == copy), None)
    installed = bool(isinstance(entry, Mapping) and entry.get("enabled") and loaded_from)
    out: dict[str, Any] = {"installed": installed, "folder": str(copy), "same": None}
    try:
        stamp = json.loads((copy / STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamp = None
    if isinstance(stamp, dict):
        out["memoryd"] = stamp.get("memoryd")
        out["memoryd_version"] = stamp.get("memoryd_version")
        out["same"] = plugin_digest(copy) == plugin_digest(plugin_dir())
    if isinstance(entry, Mapping) and isinstance(entry.get("config"), Mapping):
        out["recall"] = entry["config"].get("recall", "deferred")
    out["last_seen"] = _last_seen(memoryd_dir)
    return out


def _last_seen(memoryd_dir: Path) -> dict[str, Any] | None:
    """The plugin's last call of memoryd (``memoryd.plugin_seen``): when, and from which
    gateway process (``gateway_running``: it still runs); None when no gateway ran a memoryd
    command yet. (The folder the plugin reports is kept as it came: OpenClaw 2026.9.6 runs a
    linked plugin from a build copy under its own ``tmp/plugin-captures/``, not from the
    installed folder, so it says nothing of which copy is loaded.)"""
    from .. import clock
    from ..plugin_seen import last_seen, process_runs

    seen = last_seen(memoryd_dir)
    if seen is None:
        return None
    return {
        "at": clock.iso(float(seen["at"])),
        "seconds_ago": max(0, round(clock.now() - float(seen["at"]))),
        "gateway_pid": seen["pid"],
        "gateway_running": process_runs(int(seen["pid"])),
        "folder": seen["folder"],
        "command": seen.get("command"),
    }


def seen_words(seen: Mapping[str, Any] | None) -> str:
    """``loaded in gateway pid 4242, last call 3 min ago`` (or why not), for status."""
    if not seen:
        return "not seen in a gateway yet (it calls memoryd at gateway start)"
    ago = int(seen.get("seconds_ago") or 0)
    when = f"{ago} s ago" if ago < 120 else f"{ago // 60} min ago" if ago < 7200 else seen["at"]
    if not seen.get("gateway_running"):
        return f"last seen {when}, in gateway pid {seen['gateway_pid']}, which no longer runs"
    return f"loaded in gateway pid {seen['gateway_pid']}, last call {when}"


def plugin_line(state: Mapping[str, Any]) -> str:
    """``status``'s line for the plugin."""
    if not state.get("installed"):
        return "plugin:      not installed (memoryd plugin install)"
    where = f"{state['folder']}, by {state.get('memoryd') or 'an unknown memoryd'}"
    if state.get("same") is False:
        return (
            f"plugin:      installed ({where}); differs from this memoryd's: "
            "run `memoryd plugin install`"
        )
    recall = f", recall tool {state['recall']}" if state.get("recall") else ""
    return f"plugin:      installed ({where}{recall}); {seen_words(state.get('last_seen'))}"
