"""kill -9 during organize, then organize again: no note lost, none in two tiers, none half-made."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

from memoryd.config import Config, OpenClawConfig, resolve_paths
from memoryd.jobs import organize
from memoryd.store import Store
from memoryd.tierstore import DAY, TIERS

T = 1_780_000_000.0


def _write(root: Path, rel: str, text: str, mtime: float) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    os.utime(p, (mtime, mtime))


def _body(i: int) -> str:
    return f"# Note {i}\n\n第{i}条笔记：关于项目{i % 7}的决定。Decision number {i}.\n" * (1 + i % 5)


KILLS = [
    "mover.journaled:3",  # a move's intent is on disk, nothing else
    "mover.placed:7",  # the new name is linked, the old one still there
    "organize.gist_staged:2",  # a summary written to staging, not yet moved into gist/
    "mover.unlink_src:5",  # linked, about to set the source aside
    "mover.before_unlink:11",  # the source set aside and verified, not yet unlinked
    "organize.step:40",  # between two actions
    "organize.buried:1",  # the graveyard copy is written, nothing deleted yet
    "mover.journaled:2",  # a delete's intent is on disk
    "mover.before_unlink:4",  # a deleted note set aside, not yet unlinked
]


def test_kill_9_during_organize_loses_and_duplicates_nothing(tmp_path: Path):
    state = tmp_path / "oc"
    state.mkdir()
    cfg = Config(openclaw=OpenClawConfig(state_dir=str(state)))
    paths = resolve_paths(cfg, {})
    root = paths.tiers_root
    expected: dict[str, str] = {}
    # Notes that will be deleted: recorded in forgotten/ 31 days before the crashes.
    doomed = {f"f{i:03d}.md": _body(i) for i in range(60)}
    for name, text in doomed.items():
        _write(root, f"forgotten/{name}", text, T - 80 * DAY)
    with Store.open(paths.db) as store:
        organize.run(cfg, paths, store, T - 31 * DAY)
    for i in range(120):  # hot, 20 days old: to warm, summarised, forgotten with the summary
        expected[f"h{i:03d}.md"] = _body(i)
        _write(root, f"hot/h{i:03d}.md", _body(i), T - 20 * DAY)
    for i in range(80):  # warm, 8 days old: summarised
        expected[f"w{i:03d}.md"] = _body(i + 1000)
        _write(root, f"warm/w{i:03d}.md", _body(i + 1000), T - 8 * DAY)
    for i in range(40):  # hot and fresh: stay
        expected[f"n{i:03d}.md"] = _body(i + 2000)
        _write(root, f"hot/n{i:03d}.md", _body(i + 2000), T - 60)

    env = {**os.environ, "OPENCLAW_STATE_DIR": str(state), "MEMORYD_NOW": str(T)}
    # Each run kills itself (SIGKILL) at a moment the code names, whatever the machine's
    # speed: before a journaled link, between link and unlink, mid-gist, after the
    # graveyard copy, between a delete's check and its unlink...
    for fault in KILLS:
        proc = subprocess.run(
            [sys.executable, "-m", "memoryd", "organize"],
            env={**env, "MEMORYD_FAULT": fault},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=300,
        )
        assert proc.returncode == -signal.SIGKILL, (fault, proc.stderr[-2000:])

    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "organize"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr

    # Every surviving note: its original exactly once, byte for byte, where the rules say.
    originals: dict[str, list[str]] = {}
    summaries: dict[str, list[str]] = {}
    for tier in TIERS:
        for p in (root / tier).iterdir():
            assert not p.name.startswith("."), f"leftover temp file {p}"
            if tier == "gist":
                summaries.setdefault(p.name, []).append(tier)
            elif p.name.endswith(".gist.md"):
                summaries.setdefault(p.name.replace(".gist.md", ".md"), []).append(tier)
            else:
                originals.setdefault(p.name, []).append(tier)
    assert set(originals) == set(expected)
    for name, text in expected.items():
        tiers = originals[name]
        assert len(tiers) == 1, f"{name} in {tiers}"
        assert (root / tiers[0] / name).read_text(encoding="utf-8") == text
        want = {"h": "forgotten", "w": "warm", "n": "hot"}[name[0]]
        assert tiers[0] == want
        if name[0] in "hw":
            assert len(summaries[name]) == 1, f"{name} summaries {summaries.get(name)}"
            assert summaries[name][0] == ("forgotten" if name[0] == "h" else "gist")
        else:
            assert name not in summaries
    assert not any((root / ".memoryd-staging").glob("*"))

    # Doomed notes: deleted, each restorable from the graveyard with its journaled hash.
    with Store.open(paths.db) as store:
        unfinished = "SELECT COUNT(*) FROM moves WHERE state = 'intent'"
        assert store.conn.execute(unfinished).fetchone()[0] == 0
        hashes = dict(
            store.conn.execute(
                "SELECT src, sha256 FROM moves WHERE op = 'delete' AND state = 'done'"
            ).fetchall()
        )
        again = organize.run(cfg, paths, store, T)
        assert again.data["actions"] == []  # nothing left half-done
    buried: dict[str, bytes] = {}
    for archive in (paths.memoryd_dir / "graveyard").glob("*.zip"):
        with zipfile.ZipFile(archive) as zf:
            for entry in zf.namelist():
                buried[entry.rsplit("/", 1)[1]] = zf.read(entry)
    for name, text in doomed.items():
        assert not (root / "forgotten" / name).exists()
        assert buried[name].decode() == text
        src = str(root / "forgotten" / name)
        assert hashes[src] == hashlib.sha256(text.encode()).hexdigest()
