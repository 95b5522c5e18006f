"""Promotion carried out by a sub-session, and memoryd's side of it: what landed is read from
the text (pure), recorded only where a marked entry is there, declined past MEMORY.md's budget,
and taken out again by ``restore --last`` byte for byte, an edit elsewhere kept (a save racing
the undo's swap included). The sub-session is played here by writing files as it would; the
real one runs in tests/live/promote_live.py."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd import faults
from memoryd.policy import promote_settle as ps
from support.inprocess import memoryd as run_memoryd
from support.promote_install import MEMORY, promote_install

RUN = "20261130T000000-abcdef"


# ---------------------------------------------------------------- the pure part


def _entry(source: str, body: str) -> str:
    """An entry as the task asks for it: between the opening and the closing marker."""
    return f"{ps.marker(RUN, source)}\n{body}\n{ps.closing(RUN, source)}\n"


@pytest.mark.unit
def test_an_appended_entry_is_one_piece_and_taking_it_out_gives_the_file_back():
    after = MEMORY + "\n" + _entry("memory/tea.md", "- Prefers green tea, no sugar.")
    (piece,) = ps.landed(MEMORY, after, RUN, frozenset({"memory/tea.md"}))
    assert piece.source == "memory/tea.md" and piece.text.startswith("\n<!--")
    assert ps.without(after, [piece]) == MEMORY
    assert ps.take_out(after, [piece.text]) == (MEMORY, [])


@pytest.mark.unit
def test_a_file_without_a_final_newline_keeps_its_last_line():
    before = MEMORY.rstrip("\n")
    after = before + "\n" + _entry("memory/tea.md", "- Prefers green tea.")
    (piece,) = ps.landed(before, after, RUN, frozenset({"memory/tea.md"}))
    assert ps.without(after, [piece]) == before + "\n"  # (the line the entry ended is kept)


@pytest.mark.unit
def test_two_entries_written_together_are_two_pieces_and_one_can_go_alone():
    a, b = _entry("memory/a.md", "- entry A"), _entry("memory/b.md", "- entry B\n  more of B")
    after = MEMORY + "\n" + a + b + "\n"
    pieces = ps.landed(MEMORY, after, RUN, frozenset({"memory/a.md", "memory/b.md"}))
    assert [p.source for p in pieces] == ["memory/a.md", "memory/b.md"]
    assert pieces[1].text == b + "\n"  # the blank line after goes too
    assert ps.without(after, [pieces[1]]) == MEMORY + "\n" + a
    assert ps.without(after, pieces) == MEMORY


@pytest.mark.unit
def test_only_what_is_between_the_runs_markers_is_memoryds():
    m, c = ps.marker(RUN, "memory/tea.md"), ps.closing(RUN, "memory/tea.md")
    other = ps.marker("other", "memory/tea.md")
    after = "# Mine now\n" + MEMORY + f"- user line {other}\n- my own line\n{m}\n- tea\n{c}\n"
    (piece,) = ps.landed(MEMORY, after, RUN, frozenset({"memory/tea.md"}))
    assert piece.text == f"{m}\n- tea\n{c}\n"  # the user's lines just before are not in it
    # a marker for a note the run did not hand over is not counted
    assert not ps.landed(MEMORY, after, RUN, frozenset({"memory/other.md"}))
    # an entry with only one of its markers is not counted, nor are lines near it
    assert not ps.landed(MEMORY, MEMORY + f"{m}\n- tea\n- mine\n", RUN,
                         frozenset({"memory/tea.md"}))  # fmt: skip
    assert not ps.landed(MEMORY, MEMORY + f"- tea {c}\n", RUN, frozenset({"memory/tea.md"}))
    # an opening marker in the middle of a line does not open an entry
    assert not ps.landed(MEMORY, MEMORY + f"- mine {m} tea {c}\n", RUN,
                         frozenset({"memory/tea.md"}))  # fmt: skip
    # one line holding both markers is an entry
    (one,) = ps.landed(MEMORY, MEMORY + f"{m} - tea {c}\n", RUN, frozenset({"memory/tea.md"}))
    assert one.text == f"{m} - tea {c}\n"


@pytest.mark.unit
def test_a_new_file_left_with_only_the_runs_scaffold_is_the_runs():
    text = "# Retrospect\n\n" + _entry("memory/tea.md", "- step")
    (piece,) = ps.landed(None, text, RUN, frozenset({"memory/tea.md"}))
    rest = ps.without(text, [piece])
    assert ps.only_scaffold(rest, "skills/deploy/docs/retrospect.md")
    assert not ps.only_scaffold(rest + "- a lesson of mine\n", "skills/deploy/docs/retrospect.md")
    assert not ps.only_scaffold(rest, "MEMORY.md")  # (no heading is asked for there)


@pytest.mark.unit
def test_over_budget_declines_the_last_written_first_and_only_as_many_as_needed():
    after = MEMORY + _entry("memory/a.md", "- A") + _entry("memory/b.md", "- B " + "x" * 200)
    pieces = ps.landed(MEMORY, after, RUN, frozenset({"memory/a.md", "memory/b.md"}))
    assert ps.over_budget(after, pieces, len(after)) == []
    assert [p.source for p in ps.over_budget(after, pieces, len(after) - 10)] == ["memory/b.md"]
    assert len(ps.over_budget(after, pieces, len(MEMORY) + 5)) == 2


@pytest.mark.unit
def test_over_budget_counts_as_openclaw_does_an_emoji_two_and_the_trailing_blanks_none():
    """The budget is OpenClaw's (UTF-16 units of the text trimmed at its end); the file was
    measured by Python's length, so an entry of emoji past the budget was kept, and a file
    ending in blank lines lost an entry that fitted."""
    after = MEMORY + _entry("memory/a.md", "- A " + "😀" * 100)
    pieces = ps.landed(MEMORY, after, RUN, frozenset({"memory/a.md"}))
    assert [p.source for p in ps.over_budget(after, pieces, len(after))] == ["memory/a.md"]
    padded = MEMORY + _entry("memory/b.md", "- B") + "\n" * 40
    pieces = ps.landed(MEMORY, padded, RUN, frozenset({"memory/b.md"}))
    assert ps.over_budget(padded, pieces, len(padded.rstrip()) + 5) == []


@pytest.mark.unit
def test_take_out_cuts_whole_pieces_only_and_keeps_every_other_edit():
    landed = MEMORY + "\n" + _entry("memory/tea.md", "- tea")
    (piece,) = ps.landed(MEMORY, landed, RUN, frozenset({"memory/tea.md"}))
    edited = "# Added by the user\n" + landed
    assert ps.take_out(edited, [piece.text]) == ("# Added by the user\n" + MEMORY, [])
    # a line the user wrote right before it: the marked lines go, the user's line stays
    crowded = landed.replace("\n<!--", "\n- mine\n<!--", 1)
    text, missing = ps.take_out(crowded, [piece.text])
    assert missing == [] and text == MEMORY + "\n- mine\n"
    # the entry itself edited: left as it is, said
    changed = landed.replace("- tea", "- green tea")
    assert ps.take_out(changed, [piece.text]) == (changed, [0])


@pytest.mark.unit
@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(["- a\n", "- b\n", "\n", "## H\n", "text\n"]), max_size=12),
    st.lists(st.tuples(st.integers(0, 12), st.sampled_from(["- e", "- f\n  g"]),
                       st.booleans()), min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 12), st.sampled_from(["- mine\n", "\n", "## Mine\n"])),
             max_size=2),
)
def test_any_entries_anywhere_come_out_and_every_other_line_stays(lines, inserts, edits):
    """Property: entries between the run's markers, anywhere in any file, with blank lines
    around them or not, are found and taken out to give the file back exactly; with lines
    of the user's added too, exactly the user's file is left."""
    new = list(lines)
    sources = []
    for n, (at, body, blank) in enumerate(sorted(inserts, reverse=True)):
        src = f"memory/n{n}.md"
        sources.append(src)
        new[min(at, len(new)):min(at, len(new))] = (["\n"] if blank else []) + [
            _entry(src, body)]  # fmt: skip
    before, after = "".join(lines), "".join(new)
    pieces = ps.landed(before, after, RUN, frozenset(sources))
    assert sorted(p.source for p in pieces) == sorted(sources)
    assert ps.without(after, pieces) == before
    assert ps.take_out(after, [p.text for p in pieces]) == (before, [])
    # the user's own lines added anywhere, after the entries landed: they all stay
    users = list(new)
    for at, line in edits:
        users.insert(min(at, len(users)), line)
    text, missing = ps.take_out("".join(users), [p.text for p in pieces])
    assert missing == []
    assert "".join(text).count("- mine") == sum(line == "- mine\n" for _, line in edits)
    assert "memoryd:promoted" not in text


# ---------------------------------------------------------------- end to end (files)


@pytest.fixture
def install(tmp_path: Path):
    return (*promote_install(tmp_path), tmp_path)


def _json(env, *args):
    proc = run_memoryd([*args, "--json"], env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)


def _item(doc: dict, source: str) -> dict:
    return next(i for i in doc["items"] if i["source"] == source)


def _play_the_sub_session(ws: Path, doc: dict) -> None:
    """What the scripted model does live: one entry per item, between its markers."""
    for item in doc["items"]:
        if item["kind"] == "skill":
            path = ws / "skills" / "deploy" / "docs" / "retrospect.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            entry = f"{item['marker']}\n## Deploy\n1. build, push, restart\n{item['closing']}"
            path.write_text(f"# Retrospect\n\n{entry}\n")
        else:
            with (ws / "MEMORY.md").open("a", encoding="utf-8") as out:
                out.write(f"\n{item['marker']}\n- Ana prefers green tea, no sugar.\n"
                          f"{item['closing']}\n")  # fmt: skip


@pytest.mark.subprocess
def test_a_run_settled_marks_what_landed_and_restore_last_takes_it_out_byte_for_byte(install):
    ws, env, _ = install
    before = (ws / "MEMORY.md").read_bytes()
    doc = _json(env, "promote", "--handoff")
    assert doc["handed"], doc
    kinds = {i["source"]: i["place"] for i in doc["items"]}
    assert kinds == {"memory/deploy.md": "skills/<skill>/docs/retrospect.md",
                     "memory/tea.md": "MEMORY.md"}  # fmt: skip
    assert all(i["marker"] in doc["task"] for i in doc["items"])
    _play_the_sub_session(ws, doc)
    out = _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    assert {p["source"]: p["dest"] for p in out["promoted"]} == {
        "memory/deploy.md": "skills/deploy/docs/retrospect.md",
        "memory/tea.md": "MEMORY.md",
    }
    assert out["not_landed"] == []
    # promoted: never nominated again
    assert _json(env, "promote", "--no-scan")["candidates"] == []
    # and `sections` says whose entry it is
    owners = {s["title"]: s["written_by"] for s in _json(env, "sections", "MEMORY.md")["sections"]}
    assert owners["## Food"] == "promoted by memoryd from memory/tea.md"
    assert owners["## People"] is None
    # status says it
    status = run_memoryd(["status"], env=env).stdout
    assert f"last filed by a sub-session: 2 promoted (run {doc['run']}" in status, status
    # settling again records nothing twice
    assert _json(env, "promote", "--settle", doc["run"])["settled_before"]
    back = _json(env, "restore", "--last")
    assert back["undoing"]["command"] == "promote" and not back["errors"], back
    assert (ws / "MEMORY.md").read_bytes() == before
    assert not (ws / "skills" / "deploy" / "docs" / "retrospect.md").exists()
    # nominated again, and --last does not undo it twice
    assert len(_json(env, "promote", "--no-scan")["candidates"]) == 2
    again = run_memoryd(["restore", "--last", "--json"], env=env)
    assert "undone already" in again.stdout


@pytest.mark.subprocess
def test_an_edit_elsewhere_in_the_file_survives_the_undo(install):
    ws, env, _ = install
    doc = _json(env, "promote", "--handoff")
    _play_the_sub_session(ws, doc)
    _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    memory = ws / "MEMORY.md"
    memory.write_text("# Long-term memory (edited)\n" + memory.read_text().split("\n", 1)[1])
    _json(env, "restore", "--last")
    assert memory.read_text() == "# Long-term memory (edited)\n" + MEMORY.split("\n", 1)[1]


@pytest.mark.subprocess
def test_a_failed_sub_session_marks_nothing_and_a_partial_one_only_what_landed(install):
    ws, env, _ = install
    doc = _json(env, "promote", "--handoff")
    out = _json(env, "promote", "--settle", doc["run"], "--status", "error")
    assert out["promoted"] == [] and sorted(out["not_landed"]) == ["memory/deploy.md",
                                                                   "memory/tea.md"]  # fmt: skip
    assert len(_json(env, "promote", "--no-scan")["candidates"]) == 2
    # a run that wrote one of the two
    doc = _json(env, "promote", "--handoff")
    tea = next(i for i in doc["items"] if i["source"] == "memory/tea.md")
    with (ws / "MEMORY.md").open("a") as f:
        f.write(f"{tea['marker']} - green tea {tea['closing']}\n")
    out = _json(env, "promote", "--settle", doc["run"], "--status", "error")
    assert [p["source"] for p in out["promoted"]] == ["memory/tea.md"]
    assert [c["path"] for c in _json(env, "promote", "--no-scan")["candidates"]] == [
        "memory/deploy.md"
    ]
    # an entry without its marker is no promotion
    doc = _json(env, "promote", "--handoff")
    (ws / "skills" / "deploy" / "docs").mkdir(parents=True)
    opening = _item(doc, "memory/deploy.md")["marker"]  # (nor is one with one marker only)
    (ws / "skills" / "deploy" / "docs" / "retrospect.md").write_text(
        f"- steps, no marker\n{opening}\n- steps, no closing marker\n")
    assert _json(env, "promote", "--settle", doc["run"])["promoted"] == []


@pytest.mark.subprocess
def test_an_entry_past_the_bootstrap_budget_is_declined_and_taken_out_never_cut(install):
    ws, env, _ = install
    memory = ws / "MEMORY.md"
    near = MEMORY + "- filler " + "x" * (20_000 - len(MEMORY) - 40) + "\n"
    memory.write_text(near)
    doc = _json(env, "promote", "--handoff")
    assert any(i["source"] == "memory/tea.md" for i in doc["items"])  # room for 31 characters
    _play_the_sub_session(ws, doc)
    out = _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    assert [d["source"] for d in out["declined"]] == ["memory/tea.md"]
    assert "bootstrap budget" in out["declined"][0]["why"]
    assert memory.read_text() == near  # taken out whole, the rest untouched
    assert [p["source"] for p in out["promoted"]] == ["memory/deploy.md"]
    assert "memory/tea.md" in {c["path"] for c in _json(env, "promote", "--no-scan")["candidates"]}
    # at the budget already: not handed over at all, and said
    memory.write_text(MEMORY + "x" * 20_000)
    doc = _json(env, "promote", "--handoff")
    assert [d["source"] for d in doc["declined"]] == ["memory/tea.md"]


@pytest.mark.subprocess
def test_refresh_hands_over_only_with_promote_auto_and_never_while_dreaming_writes(install):
    ws, env, root = install
    doc = _json(env, "promote", "--handoff", "--auto")
    assert not doc["handed"] and "promote.auto is off" in doc["why"]
    cfg = Path(env["MEMORYD_CONFIG"])
    cfg.write_text(cfg.read_text() + "\n[promote]\nauto = true\n")
    handed = _json(env, "promote", "--handoff", "--auto")
    assert handed["handed"]
    _json(env, "promote", "--settle", handed["run"], "--status", "error")
    # dreaming's MEMORY.md write lock (OpenClaw 2026.9.6: <state>/locks/memory-promotion-…)
    real = os.path.realpath(ws)
    locks = root / "state" / "locks"
    locks.mkdir()
    lock = locks / f"memory-promotion-{hashlib.sha256(real.encode()).hexdigest()}.lock"
    lock.write_text(json.dumps({"pid": os.getpid()}))
    doc = _json(env, "promote", "--handoff")
    assert not doc["handed"] and "dreaming is writing it" in doc["why"]


@pytest.mark.subprocess
def test_a_save_racing_the_undos_swap_is_kept(install):
    """The user saves MEMORY.md between memoryd's read and its swap: the save wins the swap,
    memoryd reads again and takes its entry out of the saved file."""
    ws, env, _ = install
    doc = _json(env, "promote", "--handoff")
    _play_the_sub_session(ws, doc)
    _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    memory = ws / "MEMORY.md"
    saves = []

    def save(path):
        if Path(path).name == "MEMORY.md" and not saves:
            saves.append(1)
            with open(path, "a", encoding="utf-8") as f:
                f.write("- saved by the user mid-undo\n")

    faults.hook("promote.swap", save)
    try:
        back = _json(env, "restore", "--last")
    finally:
        faults.hook("promote.swap", None)
    assert saves and not back["errors"], back
    assert memory.read_text() == MEMORY + "- saved by the user mid-undo\n"
    assert not list(ws.glob(".MEMORY.md.memoryd-p*"))  # no leftovers


@pytest.mark.crash
@pytest.mark.parametrize("point", ["promote.journaled", "promote.swap", "promote.swapped"])
def test_an_undo_killed_at_each_step_loses_nothing_and_the_next_one_finishes(install, point):
    """A real process killed (SIGKILL) at each step of the undo's rewrite: the next ``restore
    --last`` repairs what it left and finishes; MEMORY.md is byte for byte as before the run,
    no temporary file is left, nothing is marked."""
    ws, env, _ = install
    before = (ws / "MEMORY.md").read_bytes()
    doc = _json(env, "promote", "--handoff")
    _play_the_sub_session(ws, doc)
    _json(env, "promote", "--settle", doc["run"], "--status", "ok")
    fault = {**env, "MEMORYD_FAULT": f"{point}:1"}
    killed = run_memoryd(["restore", "--last", "--json"], env=fault)
    assert killed.returncode == -9, killed.stderr
    back = _json(env, "restore", "--last")
    assert not back["errors"], back
    assert (ws / "MEMORY.md").read_bytes() == before
    assert not (ws / "skills" / "deploy" / "docs" / "retrospect.md").exists()
    assert not [p for p in ws.rglob("*memoryd-*")], list(ws.rglob("*memoryd-*"))
    assert len(_json(env, "promote", "--no-scan")["candidates"]) == 2


@pytest.mark.unit
def test_the_live_player_reads_the_task_memoryd_writes(tmp_path):
    """The scripted model's sub-session (tests/live/promote_live.py) is driven by memoryd's own
    task text: the items it files are the ones the text lists, with their markers."""
    from live.promote_live import PREFERENCE, PROCEDURE, SubSession
    from memoryd.jobs.promote import task_text

    items = [{"source": PREFERENCE, "read": PREFERENCE, "kind": "preference or fact",
              "marker": ps.marker(RUN, PREFERENCE), "closing": ps.closing(RUN, PREFERENCE)},
             {"source": PROCEDURE, "read": PROCEDURE, "kind": "skill",
              "marker": ps.marker(RUN, PROCEDURE),
              "closing": ps.closing(RUN, PROCEDURE)}]  # fmt: skip
    task = task_text(RUN, items, [], 1000)
    (tmp_path / "MEMORY.md").write_text(MEMORY)
    player = SubSession(tmp_path)
    body = {"messages": [{"role": "user", "content": f"[Wed 2026-12-02 16:23 UTC] {task}"}],
            "tools": [{"type": "function", "function": {"name": "write"}}]}  # fmt: skip
    first = player(body)
    assert first.name == "write" and first.arguments["path"] == "MEMORY.md"
    (piece,) = ps.landed(MEMORY, first.arguments["content"], RUN, frozenset({PREFERENCE}))
    assert first.arguments["content"] == MEMORY + piece.text
    body["messages"].append({"role": "assistant", "tool_calls": [{}]})
    assert player(body).arguments["path"] == "skills/deploy/docs/retrospect.md"
    body["messages"].append({"role": "assistant", "tool_calls": [{}]})
    assert player(body).startswith("Filed: ")
    player.fail = True
    assert player(body) == 400
    assert player({"messages": [{"role": "user", "content": "hello"}]}) is None


@pytest.mark.subprocess
def test_a_memory_md_at_its_budget_in_openclaws_count_gets_no_preference_handed_over(install):
    """10,100 emoji are 20,200 characters to OpenClaw (UTF-16), past the 20,000 budget: the
    hand-over measured Python's 10,100 and sent a preference to be filed there anyway."""
    ws, env, _ = install
    (ws / "MEMORY.md").write_text("# Memory\n\n## Moods\n" + "😀" * 10_100 + "\n", "utf-8")
    doc = _json(env, "promote", "--handoff")
    assert [d["source"] for d in doc["declined"]] == ["memory/tea.md"]
    assert "at its bootstrap budget (20219 of 20000 characters)" in doc["declined"][0]["why"]
