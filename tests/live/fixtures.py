"""Recorded fixtures: a compressed copy of an install after one phase, and its truth.

``<fixtures>/<version>/<scenario>/<NN>-<phase>/state.tar.xz`` holds ``state/`` (OpenClaw's
state folder, without its ``tmp/`` and log folders) and the workspaces (``ws/``, ``ws-<agent>/``);
The gateway's own databases (``state/state/``) are left out: they hold no transcript.
``truth.json`` beside it holds the hits per file per agent, every memory call, and the root
the install was recorded at (``recorded_root``), which ``unpack`` rewrites in ``openclaw.json``
(and in the other small JSON files: ``sessions.json``, trajectory paths) so that the
workspaces and session files resolve where the copy is unpacked.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openclaw"
SKIPPED_DIRS = {"tmp", "logs", "home", "cache", "media", "canvas", "completions", "browser",
                "identity"}  # (identity/: the install's device key pair, nothing to count)


def _wanted(rel: Path) -> bool:
    parts = rel.parts
    if not parts:
        return True
    if parts[0] == "state" and len(parts) > 1 and parts[1] in SKIPPED_DIRS:
        return False
    if parts[:2] == ("state", "state"):
        return False  # the gateway's own databases (routing, quarantine): no transcripts
    if parts[-1].endswith(".key"):
        return False  # keys OpenClaw generated for the install
    # (shared-notes/: a memory.search.extraPaths folder outside the workspace, issue 29)
    return parts[0] in ("state", "shared-notes") or parts[0] == "ws" or parts[0].startswith("ws-")


def pack(root: Path, dest: Path, truth: dict[str, Any]) -> Path:
    """Write ``dest/state.tar.xz`` from an install's root and ``dest/truth.json``."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / "state.tar.xz"
    with tarfile.open(archive, "w:xz", preset=9) as tar:
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if path.is_file() and not path.is_symlink() and _wanted(rel):
                tar.add(path, arcname=str(rel), recursive=False)
    (dest / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    return archive


def repack(fixture: Path) -> None:
    """Rewrite a fixture's archive keeping only what ``pack`` keeps today."""
    archive = fixture / "state.tar.xz"
    staged = archive.with_suffix(".new")
    with tarfile.open(archive, "r:xz") as src, tarfile.open(staged, "w:xz", preset=9) as dst:
        for member in src.getmembers():
            if member.isfile() and _wanted(Path(member.name)):
                dst.addfile(member, src.extractfile(member))
    staged.replace(archive)


def unpack(fixture: Path, into: Path) -> dict[str, Any]:
    """Unpack a fixture into ``into`` (its ``state/``, ``ws*/``); its truth, with the
    config's paths moved to ``into``."""
    truth = json.loads((fixture / "truth.json").read_text())
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fixture / "state.tar.xz", "r:xz") as tar:
        tar.extractall(into, filter="data")
    # The config's workspaces, sessions.json's sessionFile, trajectory paths: where the copy is.
    for meta in (into / "state").rglob("*.json"):
        text = meta.read_text(encoding="utf-8", errors="surrogateescape")
        if truth["recorded_root"] in text:
            meta.write_text(text.replace(truth["recorded_root"], str(into)),
                            encoding="utf-8", errors="surrogateescape")
    return truth


def all_fixtures(base: Path = FIXTURES) -> list[Path]:
    """Every fixture folder, in recording order (version, scenario, phase number)."""
    return sorted(p.parent for p in base.glob("*/*/*/truth.json"))
