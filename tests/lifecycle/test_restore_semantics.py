"""Restore means "bring it back to the workspace" (issue 30, cases 3, 4 and 6; issue 32's
restore items): the real CLI, real SQLite, real files; races and crashes with real processes
ordered by fault points (``MEMORYD_FAULT``), not sleeps.

- ``restore PATH`` of a note a recall (or a restore on demand) brought back says where it is
  and moves nothing (exit 0); of a note in the archive it takes back the live archive move.
- The journal holds one live archive row per note: a re-archive supersedes the older row, so
  recall, ``status`` and the restore on demand agree on it.
- ``restore --all`` brings the whole archive back; ``--last`` never goes past a run already
  undone, exits alike in text and JSON, and says truthfully where each note went.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import transcripts as tx
from support.archived_boat import BOAT, boat_archived, live_search
from support.daemon_harness import Install, append, make_install, run_cli
from support.stopped import finish, wait_stopped

ROOT = Path(__file__).resolve().parents[2]
BOAT_REL = "memory/lofoten-trip.md"


def _archived_rows(inst: Install) -> list[tuple[int, str]]:
    """(id, destination) of every live archive row, as recall and restore on demand read it."""
    from memoryd.move_journal import archived_moves
    from memoryd.store import Store

    with Store.open(inst.db) as store:
        return [(m.id, str(m.dst)) for m in archived_moves(store, "expire:")]


def _archive_files(inst: Install) -> list[Path]:
    return sorted(inst.workspace.glob("memory-archive/**/*.md"))


def _cli_env(fault: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "daemon"), env.get("PYTHONPATH", "")])
    if fault:
        env["MEMORYD_FAULT"] = fault
    return env


def _spawn(inst: Install, *args: str, fault: str | None = None) -> subprocess.Popen[str]:
    """A real ``memoryd`` process (a fault point may stop or kill it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "memoryd", "--config", str(inst.config), *args],
        env=_cli_env(fault),
        cwd=inst.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


ON_DEMAND = """
import sys
from memoryd.config import load_config, resolve_paths
from memoryd.ondemand import RestoreOnDemand
from memoryd.store import Store
cfg = load_config(sys.argv[1])
with Store.open(sys.argv[2]) as store:
    for e in RestoreOnDemand(cfg, resolve_paths(cfg, {})).check(store):
        print(e["outcome"], e.get("error", ""))
"""


def _spawn_on_demand(inst: Install, fault: str | None = None) -> subprocess.Popen[str]:
    """The daemon's restore check, in a process of its own (what ``memoryd run`` does)."""
    return subprocess.Popen(
        [sys.executable, "-c", ON_DEMAND, str(inst.config), str(inst.db)],
        env=_cli_env(fault),
        cwd=inst.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# =========================================================================== case 3 and 6


def test_restore_path_after_a_recall_says_where_the_note_is_and_moves_nothing(
    tmp_path: Path,
) -> None:
    """Issue 30 case 3: it undid the newest move of the path, the recall's, so the note the
    user asked back went back into the archive ("restored memory/… → memory-archive/…")."""
    inst, _ = boat_archived(tmp_path)
    boat = inst.workspace / BOAT_REL
    assert run_cli(inst, "recall", "Albatross").returncode == 0
    assert boat.read_text(encoding="utf-8") == BOAT
    [archived_row] = json.loads(run_cli(inst, "restore", BOAT_REL, "--json").stdout)["already"]
    assert archived_row["now"] == BOAT_REL and archived_row["by"] == "recall"
    for asked in (BOAT_REL, f"memory-archive/{time.strftime('%Y-%m')}/{BOAT_REL}"):
        r = run_cli(inst, "restore", asked)
        assert r.returncode == 0, r.stderr
        assert f"already back at {BOAT_REL} (brought back by recall at " in r.stdout, r.stdout
        assert "→" not in r.stdout
    assert boat.read_text(encoding="utf-8") == BOAT and _archive_files(inst) == []


def test_restore_path_after_an_on_demand_restore_says_where_the_note_is(tmp_path: Path) -> None:
    """Issue 30 case 6: "no journaled move of this path to undo" (exit 2) for a note a search
    had just brought back."""
    inst, a_pass = boat_archived(tmp_path)
    assert a_pass() == []
    live_search(inst, "ketch Albatross Lofoten harbour", [])
    [event] = a_pass()
    assert event["outcome"] == "restored"
    r = run_cli(inst, "restore", BOAT_REL)
    assert r.returncode == 0, r.stderr
    assert "already back at memory/lofoten-trip.md (brought back by a restore on demand" in r.stdout
    assert (inst.workspace / BOAT_REL).read_text(encoding="utf-8") == BOAT


@pytest.mark.timeout(300)
def test_racing_restores_of_one_note_all_end_with_it_in_the_workspace(tmp_path: Path) -> None:
    """Issue 30 case 3's race: a restore on demand, ``restore PATH`` and a recall all ask for
    the archived note at once (real processes). However they interleave, it ends in the
    workspace, once, and nobody reports a failure or a false conflict.

    The interleaving that lost it is forced: ``restore PATH`` has chosen its row and is stopped
    there while a recall brings the note back; then the on-demand check and the restore go on.
    Then rounds with no order imposed."""
    for round_ in range(3):
        inst, a_pass = boat_archived(tmp_path / f"round{round_}")
        boat = inst.workspace / BOAT_REL
        assert a_pass() == []  # the watcher's floor: searches from now on are requests
        live_search(inst, "ketch Albatross Lofoten harbour", [])
        assert run_cli(inst, "scan").returncode == 0
        if round_ == 0:
            restore = _spawn(inst, "restore", BOAT_REL, fault="restore.resolved:1:stop")
            wait_stopped(restore)
            recall = _spawn(inst, "recall", "Albatross")
            code, out, _ = finish(recall)
            assert code == 0 and "restored to the workspace" in out, out
            on_demand = _spawn_on_demand(inst)
            restore.send_signal(signal.SIGCONT)
            procs = [restore, on_demand]
        else:
            procs = [
                _spawn(inst, "restore", BOAT_REL),
                _spawn_on_demand(inst),
                _spawn(inst, "recall", "Albatross"),
            ]
        results = [finish(p) for p in procs]
        assert boat.read_text(encoding="utf-8") == BOAT, (round_, results)
        assert _archive_files(inst) == [] and _archived_rows(inst) == [], results
        for code, out, _err in results:
            assert code == 0, (round_, results)
            assert "failed" not in out and "conflict" not in out and "changed" not in out, out


@pytest.mark.timeout(300)
def test_a_restore_path_mid_move_when_the_restore_on_demand_looks_is_no_conflict(
    tmp_path: Path,
) -> None:
    """Found by the outside attack (``tests/attack/attack_30.py``, 1 of 15 race rounds):
    ``restore PATH`` had put the note at its name and not yet journaled it when the restore
    on demand looked; the row still live and a file at the name, it logged
    ``restore.on_demand_conflict`` "left alone (a file exists at that path again)" for
    memoryd's own move. Real processes, ordered by fault points."""
    inst, a_pass = boat_archived(tmp_path)
    boat = inst.workspace / BOAT_REL
    assert a_pass() == []
    live_search(inst, "ketch Albatross Lofoten harbour", [])
    assert run_cli(inst, "scan").returncode == 0
    restore = _spawn(inst, "restore", BOAT_REL, fault="mover.placed:1:stop")
    wait_stopped(restore)  # the note is at its name; the journal still has it archived
    assert boat.read_text(encoding="utf-8") == BOAT
    on_demand = _spawn_on_demand(inst, fault="ondemand.left_alone:1:stop")
    wait_stopped(on_demand)  # it found a file at the name and the row live
    on_demand.send_signal(signal.SIGCONT)  # (it waits for the journal: the restore holds it)
    restore.send_signal(signal.SIGCONT)
    code, out, _ = finish(restore)
    assert code == 0 and "restored memory-archive/" in out, out
    code, out, err = finish(on_demand)
    assert code == 0 and out == "", (out, err)  # nothing left for it to do, nothing reported
    status = run_cli(inst, "status").stdout
    assert "0 left alone" in status and "0 failed" in status, status
    assert boat.read_text(encoding="utf-8") == BOAT and _archive_files(inst) == []


@pytest.mark.timeout(300)
def test_a_recall_that_loses_the_race_to_a_restore_says_the_note_is_back(tmp_path: Path) -> None:
    """The recall chose the archived note, then ``restore PATH`` (a real process) brought it
    back first: the recall's own move cannot happen, and the agent must hear that the note is
    in the workspace, not "nothing moved: the restore failed"."""
    inst, _ = boat_archived(tmp_path)
    recall = _spawn(inst, "recall", "--json", "Albatross", fault="recall.archive_chosen:1:stop")
    wait_stopped(recall)
    restore = run_cli(inst, "restore", BOAT_REL)
    assert restore.returncode == 0 and "restored memory-archive/" in restore.stdout
    recall.send_signal(signal.SIGCONT)
    code, out, _ = finish(recall)
    doc = json.loads(out)
    assert code == 0 and "restored to the workspace" in doc["message"], doc
    assert [r["status"] for r in doc["rotations"]] == ["done"] and doc["shown"][0]["now"]
    assert (inst.workspace / BOAT_REL).read_text(encoding="utf-8") == BOAT


@pytest.mark.timeout(300)
@pytest.mark.parametrize("point", ["mover.journaled", "mover.placed", "mover.aside"])
def test_a_restore_path_killed_mid_move_ends_with_the_note_in_the_workspace_once(
    tmp_path: Path, point: str
) -> None:
    """A ``restore PATH`` killed at each step of its move, after a recall sent the note back
    to the archive with ``restore --last``: the next ``restore PATH`` repairs and brings it
    back, or says it is back; one copy, never in the archive."""
    inst, _ = boat_archived(tmp_path)
    boat = inst.workspace / BOAT_REL
    assert run_cli(inst, "recall", "Albatross").returncode == 0
    assert run_cli(inst, "restore", "--last").returncode == 0  # the recall undone
    assert not boat.exists() and len(_archive_files(inst)) == 1
    killed = _spawn(inst, "restore", BOAT_REL, fault=f"{point}:1:kill")
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    again = run_cli(inst, "restore", BOAT_REL)
    assert again.returncode == 0, again.stderr
    assert boat.read_text(encoding="utf-8") == BOAT
    assert _archive_files(inst) == [] and _archived_rows(inst) == []
    assert [p.name for p in boat.parent.iterdir()] == ["lofoten-trip.md"]


# =========================================================================== case 4


def _seed_policy(inst: Install) -> None:
    """The seed's rule (old and at most 2 hits in 30 days): a recalled note can go again."""
    text = inst.config.read_text(encoding="utf-8")
    inst.config.write_text(text + '\n[expire]\npolicy = "seed"\n', encoding="utf-8")


def _recalled_edited_and_archived_again(tmp_path: Path) -> tuple[Install, object, str]:
    """expire --force, recall, an edit, expire --force: the same month, the same name."""
    inst, a_pass = boat_archived(tmp_path)
    _seed_policy(inst)
    boat = inst.workspace / BOAT_REL
    assert a_pass() == []
    assert run_cli(inst, "recall", "Albatross").returncode == 0
    edited = BOAT + "Ferry back from Svolvaer on Sunday.\n"
    boat.write_text(edited, encoding="utf-8")
    old = time.time() - 90 * 86400
    os.utime(boat, (old, old))
    forced = run_cli(inst, "expire", "--force")
    assert forced.returncode == 0, forced.stderr
    assert not boat.exists()
    return inst, a_pass, edited


def test_a_re_archive_supersedes_the_older_row_for_recall_status_and_the_restore_on_demand(
    tmp_path: Path,
) -> None:
    """Issue 30 case 4: two ``done`` rows with one destination; recall showed the note twice
    (the second move failed: "does not exist") and the restore on demand chose the older row,
    logging a false "edited since archived" for bytes memoryd wrote itself."""
    inst, a_pass, edited = _recalled_edited_and_archived_again(tmp_path)
    rows = _archived_rows(inst)
    assert len(rows) == 1, rows
    peek = json.loads(run_cli(inst, "recall", "--peek", "--json", "Albatross").stdout)
    assert [d["note"] for d in peek["shown"]] == [BOAT_REL]
    status = json.loads(run_cli(inst, "status", "--json").stdout)
    assert status["archive"]["files"] == 1

    live_search(inst, "ketch Albatross Lofoten harbour", [])
    [event] = a_pass()
    assert event["outcome"] == "restored", event
    assert (inst.workspace / BOAT_REL).read_text(encoding="utf-8") == edited


@pytest.mark.timeout(300)
@pytest.mark.parametrize("point", ["mover.journaled", "mover.placed", "mover.before_unlink"])
def test_a_re_archive_killed_mid_move_leaves_one_live_row(tmp_path: Path, point: str) -> None:
    """The second ``expire --force`` killed at each step of its move: after the repair, one
    live row (whichever way the move went), and the note comes back whole on demand."""
    inst, a_pass = boat_archived(tmp_path)
    _seed_policy(inst)
    boat = inst.workspace / BOAT_REL
    assert a_pass() == []
    assert run_cli(inst, "recall", "Albatross").returncode == 0
    edited = BOAT + "Ferry back from Svolvaer on Sunday.\n"
    boat.write_text(edited, encoding="utf-8")
    old = time.time() - 90 * 86400
    os.utime(boat, (old, old))
    killed = _spawn(inst, "expire", "--force", fault=f"{point}:1:kill")
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    assert run_cli(inst, "restore", "--all").returncode == 0  # repairs, then brings all back
    assert boat.read_text(encoding="utf-8") == edited and _archived_rows(inst) == []
    assert run_cli(inst, "expire", "--force").returncode == 0
    assert len(_archived_rows(inst)) == 1 and len(_archive_files(inst)) == 1
    live_search(inst, "ketch Albatross Lofoten harbour", [])
    [event] = a_pass()
    assert event["outcome"] == "restored", event
    assert boat.read_text(encoding="utf-8") == edited


@pytest.mark.timeout(300)
def test_a_recall_and_the_restore_on_demand_racing_for_a_re_archived_note_agree(
    tmp_path: Path,
) -> None:
    """Both ask for the re-archived note at once (real processes; the on-demand check stopped
    after it chose its row while the recall brings the note back): the recall shows it once
    and moves it; the check then finds it back and reports nothing (it once logged
    ``restore.on_demand_conflict`` for the note memoryd had just moved itself)."""
    inst, _a_pass, edited = _recalled_edited_and_archived_again(tmp_path)
    boat = inst.workspace / BOAT_REL
    live_search(inst, "ketch Albatross Lofoten harbour", [])
    assert run_cli(inst, "scan").returncode == 0
    on_demand = _spawn_on_demand(inst, fault="ondemand.chosen:1:stop")
    wait_stopped(on_demand)  # it has chosen the live row, and not moved it yet
    recall = _spawn(inst, "recall", "--json", "Albatross")
    code, out, _ = finish(recall)
    doc = json.loads(out)
    assert code == 0 and [r["status"] for r in doc["rotations"]] == ["done"], doc
    assert [d["note"] for d in doc["shown"]] == [BOAT_REL]
    on_demand.send_signal(signal.SIGCONT)
    code, out, err = finish(on_demand)
    assert code == 0 and out == "", (out, err)  # nothing left for it to do, nothing reported
    status = run_cli(inst, "status").stdout
    assert "0 on demand, 0 left alone" in status and "0 failed" in status, status
    assert boat.read_text(encoding="utf-8") == edited and _archive_files(inst) == []


# =========================================================================== issue 32


def test_restore_all_brings_the_whole_archive_back_journaled(tmp_path: Path) -> None:
    inst = make_install(tmp_path, memory_files=0)
    old = time.time() - 90 * 86400
    for name in ("a", "b", "c"):
        p = inst.workspace / f"memory/{name}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# {name}\n", encoding="utf-8")
        os.utime(p, (old, old))
    append(inst.transcript("s1"), tx.header("s1", ts=time.time() - 60))
    forced = json.loads(run_cli(inst, "expire", "--force", "--json").stdout)
    assert len(forced["archive"]) == 3
    r = run_cli(inst, "restore", "--all")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("restored memory-archive/") == 3
    assert not (inst.workspace / "memory-archive").exists()
    assert sorted(p.name for p in (inst.workspace / "memory").iterdir()) == ["a.md", "b.md", "c.md"]
    again = run_cli(inst, "restore", "--all")
    assert again.returncode == 0 and "nothing in the archive to restore" in again.stdout
    undone = run_cli(inst, "restore", "--last", "--json")
    assert undone.returncode == 1 and "already undid expire" in undone.stdout


def test_restore_last_with_nothing_to_undo_exits_alike_in_text_and_json(tmp_path: Path) -> None:
    inst = make_install(tmp_path, memory_files=0)
    text = run_cli(inst, "restore", "--last")
    doc = run_cli(inst, "restore", "--last", "--json")
    assert text.returncode == doc.returncode == 1, (text, doc)
    assert json.loads(doc.stdout)["errors"][0]["error"] == "no journaled move to undo"


def test_restore_last_after_restore_path_never_reaches_an_older_expire_run(tmp_path: Path) -> None:
    """Two expire runs; ``--last`` undid the newer, ``restore PATH`` one file of the older: a
    second ``--last`` then undid the rest of the older run (README: it never goes past a run
    already undone)."""
    inst = make_install(tmp_path, memory_files=0)
    old = time.time() - 90 * 86400
    append(inst.transcript("s1"), tx.header("s1", ts=time.time() - 60))

    def note(name: str) -> Path:
        p = inst.workspace / f"memory/{name}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# {name}\n", encoding="utf-8")
        os.utime(p, (old, old))
        return p

    # c is there from the start (a note first seen later is an import, new then), kept out of
    # the first run by a pin and archived by the second
    a, b, c = note("a"), note("b"), note("c")
    assert run_cli(inst, "pin", "memory/c.md").returncode == 0
    assert run_cli(inst, "expire", "--force").returncode == 0
    assert c.exists()
    assert run_cli(inst, "unpin", "memory/c.md").returncode == 0
    assert run_cli(inst, "expire", "--force").returncode == 0
    assert not a.exists() and not b.exists() and not c.exists()
    assert run_cli(inst, "restore", "--last").returncode == 0 and c.exists()
    assert run_cli(inst, "restore", "memory/a.md").returncode == 0 and a.exists()
    second = run_cli(inst, "restore", "--last")
    assert second.returncode == 1 and "does not reach back to the expire run" in second.stderr
    assert not b.exists(), "the older run's other file stays archived"


def test_restore_last_of_a_recall_says_the_note_goes_back_into_the_archive(
    tmp_path: Path,
) -> None:
    inst, _ = boat_archived(tmp_path)
    assert run_cli(inst, "recall", "Albatross").returncode == 0
    r = run_cli(inst, "restore", "--last")
    assert r.returncode == 0, r.stderr
    assert re.search(
        r"put back in the archive: memory/lofoten-trip\.md → memory-archive/\d{4}-\d\d/memory/",
        r.stdout,
    ), r.stdout
    assert "restored " not in r.stdout


def test_restore_last_after_organize_never_names_the_hidden_staging_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    demo = tmp_path / "demo"
    env = {**_cli_env(), "HOME": str(home)}
    subprocess.run([sys.executable, "-m", "memoryd", "demo", str(demo)], env=env, check=True,
                   capture_output=True)  # fmt: skip
    cfg = ["--config", str(demo / "memoryd.toml")]
    done = subprocess.run([sys.executable, "-m", "memoryd", *cfg, "organize", "--json"], env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert any(r.get("op") == "gist" for r in json.loads(done.stdout)["actions"]), done.stdout
    r = subprocess.run([sys.executable, "-m", "memoryd", *cfg, "restore", "--last"], env=env,
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert ".memoryd-staging" not in r.stdout + r.stderr, r.stdout
    assert "took back " in r.stdout
    staging = demo / "state" / "memory_fs" / ".memoryd-staging"
    assert not staging.exists() or list(staging.iterdir()) == []


def _uninstall_block() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Uninstall", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    return block.group(1).splitlines()


def test_the_readmes_uninstall_block_runs_as_written_on_a_demo_install(tmp_path: Path) -> None:
    """Issue 32: step 2 failed (``restore`` already removed the emptied folder, so ``&& rmdir
    memory-archive`` exited 1). Steps 2 on (0 and 1 are OpenClaw's and the service manager's)
    run in bash with ``set -e``, the demo's folders for the default ones, as the README says."""
    home = tmp_path / "home"
    home.mkdir()
    demo = tmp_path / "demo"
    env = {**_cli_env(), "HOME": str(home)}
    subprocess.run([sys.executable, "-m", "memoryd", "demo", str(demo)], env=env, check=True,
                   capture_output=True)  # fmt: skip
    env["MEMORYD_CONFIG"] = str(demo / "memoryd.toml")
    memoryd = [sys.executable, "-m", "memoryd"]
    forced = subprocess.run([*memoryd, "expire", "--force", "--json"], env=env,
                            capture_output=True, text=True)  # fmt: skip
    assert forced.returncode == 0, forced.stderr
    archived = [m["path"] for m in json.loads(forced.stdout)["archive"]]
    assert len(archived) >= 2
    recalled = subprocess.run([*memoryd, "recall", "--json", Path(archived[0]).stem], env=env,
                              capture_output=True, text=True)  # fmt: skip
    assert recalled.returncode == 0, recalled.stderr

    lines = _uninstall_block()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("# 2."))
    script = "\n".join(lines[start:])
    script = (
        script.replace("~/.openclaw/workspace", str(demo / "workspace"))
        .replace("~/.openclaw/memoryd", str(demo / "memoryd-state"))
        .replace("~/.openclaw/refcount.json", str(demo / "state" / "refcount.json"))
        .replace("rm -rf .venv", "true")  # the venv of this test run stays
    )
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "memoryd").write_text(f"#!/bin/sh\nexec {sys.executable} -m memoryd \"$@\"\n")
    (shim / "memoryd").chmod(0o755)
    env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
    run = subprocess.run(["bash", "-e", "-c", script], env=env, cwd=tmp_path,
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, (script, run.stdout, run.stderr)
    ws = demo / "workspace"
    assert not (ws / "memory-archive").exists()
    assert all((ws / p).is_file() for p in archived)
    assert not (demo / "memoryd-state").exists()


def test_restore_path_of_a_tier_note_organize_moved_on_says_where_it_is(tmp_path: Path) -> None:
    """A note the journal followed on (hot → warm by one move, on by a later one): ``restore``
    of its first place neither claims it is back nor moves another row's file."""
    from memoryd.config import load_config, resolve_paths
    from memoryd.mover import mover_for
    from memoryd.store import Store

    inst = make_install(tmp_path, memory_files=0)
    cfg = load_config(str(inst.config))
    paths = resolve_paths(cfg, {})
    hot = paths.tiers_root / "hot"
    hot.mkdir(parents=True)
    (hot / "x.md").write_text("# x\n", encoding="utf-8")
    with Store.open(inst.db) as store:
        mover = mover_for(store, paths)
        mover.move(hot / "x.md", paths.tiers_root / "warm/x.md", reason="t", batch="organize:1")
        mover.move(paths.tiers_root / "warm/x.md", paths.tiers_root / "forgotten/x.md",
                   reason="t", batch="organize:2")  # fmt: skip
    r = run_cli(inst, "restore", str(hot / "x.md"))
    assert r.returncode == 1 and "moved on since: organize put it at " in r.stderr, r
    assert (paths.tiers_root / "forgotten/x.md").is_file() and not (hot / "x.md").exists()
    back = run_cli(inst, "restore", str(paths.tiers_root / "forgotten/x.md"))
    assert back.returncode == 0 and (paths.tiers_root / "warm/x.md").is_file(), back
