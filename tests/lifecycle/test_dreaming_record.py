"""Hits per section across a real OpenClaw 2026.9.6 dreaming sweep, replayed without Node:
``python -m tests.live.dreaming_live record`` recorded it (a MEMORY.md of 12 topics, searches,
the gateway's managed dreaming job run once: its deep phase merged a daily note's entry with
the Okapi topic's copy, taking that line out, so every topic after it moved up, and appended
``## Consolidated Memory (DATE)`` with the promotion's markers; then a second daily entry
promoted by ``openclaw memory promote --apply``, appended as ``## Promoted From Short-Term
Memory (DATE)``; searches between each step).

Each section must keep exactly the hits the model was sent, the new section included, and
``retire`` must never take dreaming's section, nor touch MEMORY.md while dreaming holds its
write lock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from live.check import memoryd
from live.dreaming_live import FIXTURE, analyze, versions
from live.sections_live import sections_of, tool_results, unpack_run
from memoryd.dreaming_lock import _start_time, dreaming_sweep, dreaming_writer, promotion_lock_path
from memoryd.policy.retire_plan import DREAMING, why_kept
from memoryd.section_map import FileIndex, chunk_anchor, parse_sections, place

pytestmark = pytest.mark.subprocess


def unpack(dest: Path) -> Path:
    """The run in ``dest``, openclaw.json naming the workspace where it now is."""
    return unpack_run(FIXTURE, dest)


def said(out: str) -> dict[str, Any]:
    return json.loads(out.split("\n}\n", 1)[0] + "\n}")


def test_every_section_keeps_exactly_its_hits_across_the_dreaming_rewrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    work = unpack(tmp_path / "run")
    assert analyze(work, versions(work)) == 0, capsys.readouterr().out
    out = said(capsys.readouterr().out)
    assert out["hits_truth"] == out["hits_memoryd"]
    new = out["new_sections"]  # what dreaming and promote appended, each searched after
    assert [n.split(" (")[0] for n in new] == ["Consolidated Memory",
                                               "Promoted From Short-Term Memory"]
    assert all(out["hits_memoryd"][n] == 1 for n in new)
    # the topics after the line dreaming took out: searched once before it, once after
    assert out["hits_memoryd"]["Tapir notes"] == 2 and out["hits_memoryd"]["Fossa notes"] == 2


def test_the_rewrite_is_real_and_a_hit_from_before_it_follows_its_text(tmp_path: Path):
    """What dreaming did, as recorded: and why line numbers could not place the hits."""
    work = unpack(tmp_path / "run")
    before, after, promoted = versions(work)
    assert promoted.startswith(after) and "\n## Promoted From Short-Term Memory (" in promoted
    gone = set(before.split("\n")) - set(after.split("\n"))
    assert gone == {"- okapi moved house to the east paddock by the creek"}  # the merge
    assert (work / "install" / "ws" / "MEMORY.md").read_text(encoding="utf-8") == promoted
    heads = {h: (a, b) for h, a, b in sections_of(after)}
    new = next(h for h in heads if h.startswith("Consolidated Memory ("))
    # a search before dreaming returned fossa's last lines, 74-75: in the file as dreaming
    # left it, line 74 is the new section's heading, yet the hit is Fossa's
    fossa_before = [r for _, _, doc in tool_results(work / "logs" / "requests.jsonl")
                    for r in doc["results"] if r["path"] == "MEMORY.md"
                    and r["snippet"].startswith("- fossa fact 3") and r["startLine"] == 74]
    assert fossa_before and heads[new][0] == 74
    text = after.split("\n")
    index = FileIndex(after)
    snippet = fossa_before[0]["snippet"].split("\n\nSource: ")[0]
    placed = place(index, chunk_anchor(74, 75, snippet), 74, 75)
    assert [index.sections[i].heading for i in placed.sections] == ["Fossa notes"]
    assert text[73].startswith("## Consolidated Memory (")


def test_the_replay_fails_when_the_moved_sections_lose_their_credit(tmp_path: Path):
    """The same run with the heading of a moved topic swapped with one never searched: the
    hits memoryd credits no longer equal what the model was sent."""
    work = unpack(tmp_path / "run")
    memory = work / "install" / "ws" / "MEMORY.md"
    text = memory.read_text(encoding="utf-8")
    swapped = text.replace("## Tapir", "## @@").replace("## Kinkajou", "## Tapir")
    memory.write_text(swapped.replace("## @@", "## Kinkajou"), encoding="utf-8")
    assert analyze(work, versions(work)) == 1


def test_dreamings_markers_stay_in_its_section_and_its_entry_is_found_as_the_snippet_shows_it(
    tmp_path: Path,
):
    """The promotion marker line and the annotated entry are the new section's body; a search
    snippet shows the entry without its ``<!-- trigger -->`` / ``<!-- importance -->``
    annotations (OpenClaw cuts them out), and is still placed there."""
    work = unpack(tmp_path / "run")
    after = versions(work)[-1]
    lines = after.split("\n")
    sec = next(s for s in parse_sections(after) if s.heading.startswith("Consolidated Memory ("))
    body = lines[sec.first - 1 : sec.last]
    marker = [ln for ln in body if ln.startswith("<!-- openclaw-memory-promotion:")]
    entry = [ln for ln in body if ln.startswith("- okapi moved house")]
    assert len(marker) == 1 and len(entry) == 1
    assert "<!-- trigger: " in entry[0] and "<!-- importance: " in entry[0]
    assert why_kept(sec, "\n".join(body), [], recent=False) == DREAMING
    shown = [r for _, _, doc in tool_results(work / "logs" / "requests.jsonl")
             for r in doc["results"] if r["path"] == "MEMORY.md"
             and r["snippet"].startswith("- okapi moved house")]
    assert shown and "<!--" not in shown[0]["snippet"]  # what OpenClaw sent the model
    snippet = shown[0]["snippet"].split("\n\nSource: ")[0]
    index = FileIndex(after)
    placed = place(index, chunk_anchor(shown[0]["startLine"], shown[0]["endLine"], snippet),
                   shown[0]["startLine"], shown[0]["endLine"])
    assert [index.sections[i].heading for i in placed.sections] == [sec.heading]
    # its marker line alone (a chunk may start there) names the section too
    alone = place(index, chunk_anchor(None, None, marker[0]), None, None)
    assert [index.sections[i].heading for i in alone.sections] == [sec.heading]
    # the append of `memory promote --apply`: marker lines, entries with their ranking
    appended = next(s for s in parse_sections(after) if s.heading.startswith("Promoted From "))
    body = lines[appended.first - 1 : appended.last]
    assert any(ln.startswith("<!-- openclaw-memory-promotion:") for ln in body)
    assert any(ln.startswith("- capybara") and "[score=" in ln and "<!-- importance: " in ln
               for ln in body)
    assert why_kept(appended, "\n".join(body), [], recent=False) == DREAMING


# ------------------------------------------------------------------ retire and dreaming


def retire_setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The replayed install with a 3,000-character budget (so retire has sections to take),
    and a memoryd config of its own."""
    work = unpack(tmp_path / "run")
    config = work / "install" / "state" / "openclaw.json"
    doc = json.loads(config.read_text(encoding="utf-8"))
    doc["agents"]["defaults"]["bootstrapMaxChars"] = 3000
    config.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    md = tmp_path / "md"
    md.mkdir()
    cfg = tmp_path / "md.toml"
    cfg.write_text(f"[openclaw]\nstate_dir = {json.dumps(str(work / 'install' / 'state'))}\n"
                   f"[state]\ndir = {json.dumps(str(md))}\n", encoding="utf-8")
    return work, work / "install" / "ws", cfg


def retire(cfg: Path, *args: str) -> dict[str, Any]:
    proc = memoryd(cfg, "retire", *args, "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def hold_lock(state: Path, ws: Path, pid: int) -> Path:
    """Dreaming's MEMORY.md write lock as OpenClaw's ``withFileLock`` leaves it while held."""
    lock = promotion_lock_path(state, ws)
    lock.parent.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = {"pid": pid, "createdAt": "2026-12-02T16:18:56.071Z"}
    if (start := _start_time(pid)) is not None:
        payload["starttime"] = start
    lock.write_text(json.dumps(payload), encoding="utf-8")
    return lock


def test_retire_never_takes_dreamings_section(tmp_path: Path):
    cfg = retire_setup(tmp_path)[2]
    plan = retire(cfg, "--dry-run")["notes"][0]
    assert plan["retire"] and plan["fits"]
    taken = [t["title"] for t in plan["retire"]]
    assert not any("Consolidated Memory" in t or "Promoted From" in t for t in taken)
    kept = {k["title"]: k["why"] for k in plan["kept"]}
    assert [w for t, w in kept.items()
            if t.startswith(("## Consolidated Memory (", "## Promoted From "))] == ["dreaming"] * 2


def test_retire_leaves_memory_md_whole_while_dreaming_holds_its_write_lock(tmp_path: Path):
    """A live process holding the lock: ``retire --force`` takes nothing and says why. Once
    that process is gone (its lock file left behind, as a crash leaves it), retire goes on,
    never takes dreaming's section, and ``restore --last`` gives the file back byte for byte."""
    work, ws, cfg = retire_setup(tmp_path)
    state = work / "install" / "state"
    memory = ws / "MEMORY.md"
    was = memory.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        lock = hold_lock(state, ws, holder.pid)
        assert dreaming_writer(state, ws) is not None
        out = retire(cfg, "--force")
        assert not out["applied"] and memory.read_bytes() == was
        why = [s["why"] for s in out["skipped"] if s["path"] == "MEMORY.md"]
        assert why and "dreaming" in why[0] and str(holder.pid) in why[0]
        assert not (ws / "memory-archive").exists()
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    assert lock.exists() and dreaming_writer(state, ws) is None  # a dead holder holds nothing
    out = retire(cfg, "--force")
    assert out["applied"] and memory.read_bytes() != was
    now = memory.read_text(encoding="utf-8")
    assert "## Consolidated Memory (" in now and "## Promoted From Short-Term Memory (" in now
    assert now.count("<!-- openclaw-memory-promotion:") == 2
    proc = memoryd(cfg, "restore", "--last")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert memory.read_bytes() == was


def test_a_lock_whose_pid_names_another_process_now_holds_nothing(tmp_path: Path):
    """A pid reused since: its start time is not the one the lock recorded."""
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    lock = hold_lock(state, ws, os.getpid())
    assert dreaming_writer(state, ws) is not None
    doc = json.loads(lock.read_text())
    if "starttime" not in doc:
        pytest.skip("no /proc here: start times cannot be read")
    doc["starttime"] -= 1
    lock.write_text(json.dumps(doc))
    assert dreaming_writer(state, ws) is None
    lock.write_text("{not json")
    assert "unreadable" in (dreaming_writer(state, ws) or "")  # as OpenClaw: fail closed


def sweep_running(state: Path, pid: int) -> None:
    """The gateway's cron tables of the recorded run (OpenClaw's schema, ``cron.sqlite`` in the
    fixture), the dreaming job marked as the live probe saw it mid-sweep: ``runningAtMs`` and
    ``runningReceiptId`` in its state, that receipt ``running``, owned by ``pid``."""
    db = state / "state" / "openclaw.sqlite"
    db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURE / "cron.sqlite", db)
    with sqlite3.connect(db) as conn:
        job, state_json = conn.execute(
            "SELECT job_id, state_json FROM cron_jobs WHERE name = 'Memory Dreaming Promotion'"
        ).fetchone()
        (receipt,) = conn.execute(
            "SELECT receipt_id FROM cron_run_receipts WHERE job_id = ?", (job,)).fetchone()
        doc = {**json.loads(state_json), "runningAtMs": 1796229905313,
               "runningReceiptId": receipt}
        conn.execute("UPDATE cron_jobs SET state_json = ? WHERE job_id = ?",
                     (json.dumps(doc), job))
        conn.execute("UPDATE cron_run_receipts SET status = 'running', owner_pid = ?, "
                     "owner_start_time = ?, finished_at_ms = NULL WHERE receipt_id = ?",
                     (pid, _start_time(pid), receipt))
    conn.close()


def test_retire_leaves_memory_md_whole_for_the_whole_dreaming_sweep(tmp_path: Path):
    """The sweep plans a consolidation and asks the model before it takes the write lock: a
    rewrite not yet applied. While the gateway's dreaming job runs, ``retire --force`` takes
    nothing; a mark left by a gateway that is gone holds nothing."""
    work, ws, cfg = retire_setup(tmp_path)
    state = work / "install" / "state"
    memory = ws / "MEMORY.md"
    was = memory.read_bytes()
    assert dreaming_sweep(state) is None  # no state database: nothing says a sweep runs
    gateway = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        sweep_running(state, gateway.pid)
        assert dreaming_writer(state, ws) is None and dreaming_sweep(state) is not None
        out = retire(cfg, "--force")
        assert not out["applied"] and memory.read_bytes() == was
        why = [s["why"] for s in out["skipped"] if s["path"] == "MEMORY.md"]
        assert why and "dreaming sweep is running" in why[0]
    finally:
        os.kill(gateway.pid, signal.SIGKILL)
        gateway.wait(timeout=30)
    assert dreaming_sweep(state) is None  # the gateway died mid-sweep: its mark holds nothing
    out = retire(cfg, "--force")
    assert out["applied"] and memory.read_bytes() != was


def test_the_recorded_cron_state_says_no_sweep_runs(tmp_path: Path):
    """As the run left it (the sweep finished): the job's state has no running mark."""
    state = tmp_path / "state"
    (state / "state").mkdir(parents=True)
    shutil.copyfile(FIXTURE / "cron.sqlite", state / "state" / "openclaw.sqlite")
    assert dreaming_sweep(state) is None
    (state / "state" / "openclaw.sqlite").write_bytes(b"not a database")
    assert dreaming_sweep(state) is None  # unreadable: says nothing (the lock still guards)


@pytest.mark.parametrize("state_json", ["null", "[]", '"x"', "7"])
def test_a_dreaming_job_state_of_another_shape_says_nothing(tmp_path: Path, state_json: str):
    """A gateway database of another version or a damaged one: no sweep seen, no traceback
    (retire and promote go on, the write lock still guards the write itself)."""
    state = tmp_path / "state"
    sweep_running(state, os.getpid())
    assert dreaming_sweep(state) is not None
    with sqlite3.connect(state / "state" / "openclaw.sqlite") as conn:
        conn.execute("UPDATE cron_jobs SET state_json = ?", (state_json,))
    conn.close()
    assert dreaming_sweep(state) is None
