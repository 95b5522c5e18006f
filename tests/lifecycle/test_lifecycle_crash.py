"""kill -9 at random points of ``memoryd expire --force`` over 1,000 files, then a restart."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from memoryd.store import Store

NOW = "2026-11-03T10:00:00Z"


MOMENTS = [
    "mover.checked",  # a file hashed, nothing journaled
    "mover.journaled",  # the intent on disk, no link yet
    "mover.placed",  # linked into the archive, still in memory/
    "mover.unlink_src",  # about to set the source aside
    "mover.before_unlink",  # set aside and verified, not yet unlinked
    "mover.placed",
]


def test_kill_9_during_expire_then_restart_keeps_every_file_exactly_once(tmp_path: Path) -> None:
    rng = random.Random(1103)
    state = tmp_path / "oc"
    ws = state / "workspace"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    digests: dict[str, str] = {}
    for i in range(1000):
        rel = f"memory/{2023 + i // 365}-{(i // 28) % 12 + 1:02d}-{i % 28 + 1:02d}-n{i}.md"
        if i % 5 == 0:
            rel = f"memory/topics/t{i}/note.md"
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        data = f"# {i}\n".encode() + rng.randbytes(rng.randrange(0, 2000))
        p.write_bytes(data)
        os.utime(p, (1.7e9, 1.7e9))  # 2023: old enough
        digests[rel] = hashlib.sha256(data).hexdigest()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(HOME=str(tmp_path), OPENCLAW_STATE_DIR=str(state), MEMORYD_NOW=NOW)
    cmd = [sys.executable, "-m", "memoryd", "expire", "--force", "--json"]

    # Each run kills itself at a moment the mover names (MEMORYD_FAULT), after a random
    # number of files: the same crash points on any machine, however slow or loaded.
    for point in MOMENTS:
        fault = f"{point}:{rng.randrange(1, 120)}"
        proc = subprocess.run(
            cmd, env={**env, "MEMORYD_FAULT": fault}, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == -signal.SIGKILL, (fault, proc.stderr[-2000:])
    final = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr

    archive = ws / "memory-archive" / "2026-11"
    for rel, digest in digests.items():
        here, there = ws / rel, archive / rel
        assert here.exists() != there.exists(), rel  # exactly once
        assert (
            hashlib.sha256((there if there.exists() else here).read_bytes()).hexdigest() == digest
        )
        assert there.exists(), rel  # the restart finished the job
    leftovers = [p for p in archive.rglob("*") if p.is_file() and p.name.endswith(".tmp")]
    assert leftovers == []
    with Store.open(state / "memoryd" / "state.db") as store:
        rows = store.conn.execute("SELECT src, dst, state FROM moves").fetchall()
    assert {s for _, _, s in rows} <= {"done", "rolled_back"}
    done = [(s, d) for s, d, st in rows if st == "done"]
    assert len(done) == len(digests)
    assert all(Path(d).exists() and not Path(s).exists() for s, d in done)


def test_the_dry_run_after_a_killed_run_promises_no_plan_the_real_run_does_not_apply(
    tmp_path: Path,
) -> None:
    """Killed with a note linked into the archive but still in memory/, the dry run listed
    that note once more, to ``<name>~2.md``, over one file too many, and said "--force
    applies exactly this plan"; --force finishes that move first and archives one fewer.
    The dry run says the real run first finishes or undoes those moves, then plans again."""
    import json

    from support import transcripts as tx
    from support.stopped import finish, spawn

    notes = [f"memory/old{i}.md" for i in range(4)]
    _sessions, ws, cfg = tx.make_install(tmp_path, ["MEMORY.md", *notes])
    long_ago = tx.T0 - 400 * 86400
    for rel in notes:
        os.utime(ws / rel, (long_ago, long_ago))
    killed = spawn(cfg, "expire", "--force", fault="mover.placed:2:kill")
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    rc, out, _err = finish(spawn(cfg, "expire"))
    assert rc == 0
    first = out.splitlines()[0]
    assert "exactly this plan" not in first, out
    said = "--force first finishes or undoes the 1 move an interrupted run left, then plans again"
    assert said in first, out
    rc, out, _err = finish(spawn(cfg, "expire", "--json"))
    assert json.loads(out)["unfinished_journal_entries"] == 1
    rc, out, _err = finish(spawn(cfg, "expire", "--force"))
    assert rc == 0 and "repaired: #2 move" in out and "archived 2 of 3" in out, out
