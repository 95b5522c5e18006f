"""A promotion never costs the user a line: what changed between handoff and settle (the
user's edits, a file they made, another run's entries) survives ``restore --last``; entries
are exactly what lies between their markers; one run is out at a time; a destination behind
a symlink is refused, never followed; two settles at once record once; an undo killed after
its rewrite is finished by the next; the no-swap fallback keeps a racing save. The sub-session
is played by writing files as it would (tests/live/promote_live.py runs the real one)."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd import faults
from support.inprocess import memoryd as run_memoryd
from support.promote_install import MEMORY, promote_install

pytestmark = pytest.mark.subprocess

RETRO = Path("skills") / "deploy" / "docs" / "retrospect.md"


@pytest.fixture
def install(tmp_path: Path):
    return promote_install(tmp_path)


def _json(env, *args):
    proc = run_memoryd([*args, "--json"], env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)


def _entry(doc: dict, source: str, body: str) -> str:
    item = next(i for i in doc["items"] if i["source"] == source)
    return f"\n{item['marker']}\n{body}\n{item['closing']}\n"


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(text)


def _candidates(env) -> list[str]:
    return [c["path"] for c in _json(env, "promote", "--no-scan")["candidates"]]


def _tea_promoted(ws: Path, env) -> Path:
    """A run handed off, its tea entry written into MEMORY.md, settled: MEMORY.md."""
    doc = _json(env, "promote", "--handoff")
    _append(ws / "MEMORY.md", _entry(doc, "memory/tea.md", "- tea"))
    _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    return ws / "MEMORY.md"


def test_an_edit_made_while_the_run_was_out_survives_the_undo(install):
    ws, env = install
    memory = ws / "MEMORY.md"
    doc = _json(env, "promote", "--handoff")
    memory.write_text(memory.read_text().replace("boat club", "boat club and the choir"))
    _append(memory, _entry(doc, "memory/tea.md", "- Ana prefers green tea."))
    _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    back = _json(env, "restore", "--last")
    assert not back["errors"], back
    assert memory.read_text() == MEMORY.replace("boat club", "boat club and the choir")
    assert "byte for byte" not in json.dumps(back)  # (it is not the file before the run)


def test_a_line_the_user_wrote_just_before_the_entry_is_not_part_of_it(install):
    ws, env = install
    memory = ws / "MEMORY.md"
    doc = _json(env, "promote", "--handoff")
    _append(memory, "- Ana's birthday is 3 May.\n")
    _append(memory, _entry(doc, "memory/tea.md", "- Ana prefers green tea."))
    _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    memory.write_text(memory.read_text().replace("# Long-term memory", "# Memory"))
    _json(env, "restore", "--last")
    text = memory.read_text()
    assert "- Ana's birthday is 3 May." in text and "green tea" not in text, text


def test_a_retrospect_the_user_made_while_the_run_was_out_is_kept(install):
    ws, env = install
    doc = _json(env, "promote", "--handoff")
    retro = ws / RETRO
    retro.parent.mkdir(parents=True)
    mine = "# Retrospect\n\n## 2026-11-29\nRollback took 40 min: keep the old image.\n"
    retro.write_text(mine)
    _append(retro, _entry(doc, "memory/deploy.md", "1. build, push"))
    _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    _json(env, "restore", "--last")
    rest = retro.read_text()  # (the blank line the entry came with may stay: nothing is lost)
    assert rest.startswith(mine) and not rest[len(mine):].strip(), rest
    # one the run made with nothing but its heading and entry goes
    doc = _json(env, "promote", "--handoff")
    other = ws / "skills" / "ops" / "docs" / "retrospect.md"
    other.parent.mkdir(parents=True)
    other.write_text("# Retrospect\n" + _entry(doc, "memory/deploy.md", "1. build"))
    _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    _json(env, "restore", "--last")
    assert not other.exists()


def test_one_run_at_a_time_and_an_overdue_one_is_settled_with_what_landed(install):
    ws, env = install
    memory = ws / "MEMORY.md"
    first = _json(env, "promote", "--handoff")
    second = _json(env, "promote", "--handoff")
    assert not second["handed"] and first["run"] in second["why"], second
    # the plugin's wait ended "timeout": nothing recorded, the run still out
    _append(memory, _entry(first, "memory/tea.md", "- tea (late)"))
    assert not _json(env, "promote", "--settle", first["run"], "--status", "timeout")["settled"]
    assert not _json(env, "promote", "--handoff")["handed"]
    # a run given no time is overdue at once: the next handoff settles it first
    db = _db(env)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE promote_runs SET plan = json_set(plan, '$.timeout', 0)")
    third = _json(env, "promote", "--handoff")
    assert [r["run"] for r in third["timed_out"]] == [first["run"]]
    assert [p["source"] for p in third["timed_out"][0]["promoted"]] == ["memory/tea.md"]
    assert [i["source"] for i in third["items"]] == ["memory/deploy.md"]  # (tea is promoted)


def test_a_run_left_out_is_settled_by_restore_last_and_its_entry_taken_out(install):
    ws, env = install
    memory = ws / "MEMORY.md"
    doc = _json(env, "promote", "--handoff", "--timeout", "0")
    _append(memory, _entry(doc, "memory/tea.md", "- tea"))
    back = _json(env, "restore", "--last")
    assert back["undoing"]["command"] == "promote" and not back["errors"], back
    assert memory.read_text() == MEMORY
    assert "memory/tea.md" in _candidates(env)


def _db(env) -> Path:
    root = Path(env["MEMORYD_CONFIG"]).parent
    (db,) = [p for p in root.rglob("*") if p.suffix in (".db", ".sqlite3", ".sqlite")
             and "promote_runs" in _tables(p)]  # fmt: skip
    return db


def _tables(p: Path) -> str:
    try:
        with sqlite3.connect(p) as conn:
            return " ".join(r[0] for r in conn.execute("SELECT name FROM sqlite_master"))
    except sqlite3.DatabaseError:
        return ""


def test_a_symlinked_skill_folder_is_refused_at_settle_and_restore_last_works(install):
    ws, env = install
    real = ws / "shared-skills" / "deploy"
    (real / "docs").mkdir(parents=True)
    (real / "docs" / "retrospect.md").write_text("# Retrospect\n")
    os.symlink(real, ws / "skills" / "shared")
    doc = _json(env, "promote", "--handoff")
    _append(real / "docs" / "retrospect.md", _entry(doc, "memory/deploy.md", "1. build"))
    _append(ws / "MEMORY.md", _entry(doc, "memory/tea.md", "- tea"))
    out = _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    assert [p["source"] for p in out["promoted"]] == ["memory/tea.md"]
    assert any("skills/shared/docs/retrospect.md" in r for r in out["refused"]), out
    assert "memory/deploy.md" in out["not_landed"]
    with sqlite3.connect(_db(env)) as conn:
        sql = "SELECT value FROM counters WHERE name = 'promote_dest_refused'"
        (n,) = conn.execute(sql).fetchone()
    assert n == 1
    for _ in range(2):
        proc = run_memoryd(["restore", "--last"], env=env)
        assert "Traceback" not in proc.stderr, proc.stderr
    assert (ws / "MEMORY.md").read_text() == MEMORY
    assert sorted(_candidates(env)) == ["memory/deploy.md", "memory/tea.md"]


def test_a_symlinked_memory_md_is_refused_with_a_clear_line(install):
    ws, env = install
    memory = ws / "MEMORY.md"
    (ws / "elsewhere.md").write_text(MEMORY)
    memory.unlink()
    os.symlink(ws / "elsewhere.md", memory)
    doc = _json(env, "promote", "--handoff")
    assert not doc["handed"] and "MEMORY.md" in doc["why"], doc


def test_two_settles_at_once_record_each_entry_once(install, monkeypatch):
    from memoryd import promote_run

    ws, env = install
    doc = _json(env, "promote", "--handoff")
    _append(ws / "MEMORY.md", _entry(doc, "memory/tea.md", "- tea"))
    real = promote_run.ps.landed
    other: list[subprocess.Popen[str]] = []

    def landed(*a, **k):  # a second settle, a real process, starts in the middle of this one
        if not other:
            other.append(subprocess.Popen(
                [sys.executable, "-m", "memoryd", "promote", "--settle", doc["run"], "--json"],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))  # fmt: skip
        return real(*a, **k)

    monkeypatch.setattr(promote_run.ps, "landed", landed)
    first = _json(env, "promote", "--settle", doc["run"])
    out, err = other[0].communicate(timeout=60)
    assert other[0].returncode == 0, err
    assert first.get("settled") and json.loads(out)["settled_before"]
    with sqlite3.connect(_db(env)) as conn:
        rows = conn.execute("SELECT source FROM promote_entries").fetchall()
    assert rows == [("memory/tea.md",)]


@pytest.mark.crash
def test_an_undo_killed_after_its_rewrite_of_an_edited_file_is_finished_next_time(install):
    ws, env = install
    memory = _tea_promoted(ws, env)
    memory.write_text(memory.read_text().replace("# Long-term memory", "# Memory"))
    killed = run_memoryd(["restore", "--last"], env={**env, "MEMORYD_FAULT": "promote.swapped:1"})
    assert killed.returncode == -9, killed.stderr
    back = _json(env, "restore", "--last")
    assert not back["errors"], back
    assert memory.read_text() == MEMORY.replace("# Long-term memory", "# Memory")
    assert "memory/tea.md" in _candidates(env)


def test_where_names_cannot_be_swapped_a_racing_save_is_kept(install):
    ws, env = install
    memory = _tea_promoted(ws, env)
    saves: list[int] = []

    def no_swap(*_):
        raise OSError(errno.EINVAL, "no exchange here")

    def save(path):
        if Path(path).name == "MEMORY.md" and not saves:
            saves.append(1)
            _append(Path(path), "- saved by the user in that instant\n")

    faults.hook("promote.exchange", no_swap)
    faults.hook("promote.swap", save)
    try:
        back = _json(env, "restore", "--last")
    finally:
        faults.hook("promote.exchange", None)
        faults.hook("promote.swap", None)
    assert saves and not back["errors"], back
    assert memory.read_text() == MEMORY + "- saved by the user in that instant\n"
    assert not [p for p in ws.rglob("*memoryd-*")]


def test_refresh_with_promote_auto_off_does_no_work(install):
    _, env = install
    doc = _json(env, "promote", "--handoff", "--auto")
    assert doc == {"handed": False,
                   "why": "promote.auto is off: `/memoryd promote` files them by hand"}
    reports = Path(env["MEMORYD_CONFIG"]).parent
    assert not list(reports.rglob("promote_report.md"))  # (the promote job did not run)


def _item(doc: dict, source: str) -> dict:
    return next(i for i in doc["items"] if i["source"] == source)


@pytest.mark.parametrize("how", ["markers around the user's line", "entry merged into it"])
def test_markers_set_around_or_into_a_line_the_user_had_never_take_it(install, how):
    """The sub-session may wrap the user's bullet in its markers, or write its fact into
    it: what lies between the markers is then not all its own. Such a block is no entry
    (nothing is recorded, the note stays nominated), so no undo or budget decline can take
    the user's words with it."""
    ws, env = install
    memory = ws / "MEMORY.md"
    doc = _json(env, "promote", "--handoff")
    tea = _item(doc, "memory/tea.md")
    if how == "markers around the user's line":
        mine = "- Ana prefers green tea."
        wrapped = f"{tea['marker']}\n- Ana runs the boat club.\n{mine} {tea['closing']}\n"
    else:
        merged = "- Ana runs the boat club; she likes green tea."
        wrapped = f"{tea['marker']} {merged} {tea['closing']}\n"
    memory.write_text(memory.read_text().replace("- Ana runs the boat club.\n", wrapped))
    written = memory.read_text()
    _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    assert "memory/tea.md" in _candidates(env)  # not marked promoted: no entry of its own
    run_memoryd(["restore", "--last"], env=env)  # (nothing of the run's to undo)
    assert memory.read_text() == written  # nothing taken out


def test_bytes_that_are_not_utf8_elsewhere_in_the_file_come_back_as_they_were(install):
    ws, env = install
    memory = ws / "MEMORY.md"
    memory.write_bytes(MEMORY.encode() + "- Caf\xe9 on Tuesdays.\n".encode("latin-1"))
    before = memory.read_bytes()
    doc = _json(env, "promote", "--handoff")
    with memory.open("ab") as f:
        f.write(_entry(doc, "memory/tea.md", "- Ana prefers green tea.").encode())
    settled = _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    assert "memory/tea.md" not in _candidates(env), settled
    _json(env, "restore", "--last")
    assert memory.read_bytes() == before
