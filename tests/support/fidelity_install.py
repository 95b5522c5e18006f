"""A small OpenClaw install laid out by hand, note by note and session by session, and
memoryd's JSON answer about it: the fidelity tests' tools (``test_fidelity``, ``test_fid2``),
which check memoryd against what OpenClaw's current source does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from support.inprocess import memoryd as run_memoryd
from support.transcripts import T0, call, header, result, search_payload


def memoryd(*args: str, env: dict[str, str]) -> dict:
    """``memoryd <args> --json`` with only the given OpenClaw environment; its JSON answer."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    full.update(env)
    done = run_memoryd([*args, "--json"], env=full)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def note(workspace: Path, rel: str) -> None:
    """A note at ``rel`` in ``workspace`` (its folders made), holding only its title."""
    path = workspace / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {rel}\n", encoding="utf-8")


def transcript(state: Path, agent: str, session: str, hits: list[str]) -> None:
    """One session of ``agent`` whose searches each found one of ``hits``."""
    folder = state / "agents" / agent / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [header(session)]
    for i, rel in enumerate(hits):
        cid = f"toolu_{agent}_{session}_{i}"
        lines += [call(cid, ts=T0 + 10 * i), result(cid, search_payload([rel]), T0 + 10 * i + 1)]
    (folder / f"{session}.jsonl").write_bytes(b"".join(lines))


def hit_counts(doc: dict) -> dict[str, int]:
    """Hits per file of a ``memoryd hits --json`` answer."""
    return {f["path"]: f["hits"] for f in doc["files"]}


def session_lines(session: str, hits: list[str]) -> list[bytes]:
    """The lines of one session whose searches each found one of ``hits``, half a second
    apart (for a store, an archive or a folder :func:`transcript` does not write)."""
    lines = [header(session)]
    for i, rel in enumerate(hits):
        cid = f"toolu_{session}_{i}"
        lines += [call(cid, ts=T0 + i), result(cid, search_payload([rel]), T0 + i + 0.5)]
    return lines
