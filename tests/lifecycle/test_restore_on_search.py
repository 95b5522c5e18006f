"""A search reaches the archive (issue 28, item 2): ``memoryd on-search QUERY`` before a
``memory_search`` brings back the archived note the query names better than every note in
the workspace (the daemon's restore-on-demand rule), journaled and undoable, and counts
that search's hit of it once; anything else moves nothing.

Real files, a real state database, the real command; the model's query is data.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from memoryd.ondemand import opening_of
from support.archived_boat import force_archived, write_note
from support.daemon_harness import Install, make_install, run_cli

BOAT = "# Sailing to the Lofoten islands\nChartered the ketch Albatross from Svolvaer.\n"
DENTIST = "# Orthodontist appointments\nDr. Okonkwo, retainer check every eight weeks.\n"
KETCH_NOW = "# Ketch maintenance\nThe ketch Albatross needs new sails; Svolvaer yard.\n"


def test_the_opening_of_a_long_note_is_cut_at_a_line_end() -> None:
    assert opening_of("  # A\nshort\n") == "# A\nshort"
    long = "\n".join(f"line {i} " + "x" * 40 for i in range(40))
    cut = opening_of(long, 300)
    assert cut.endswith("\n…") and len(cut) <= 302
    assert long.startswith(cut.removesuffix("\n…"))
    assert opening_of("y" * 1000, 100) == "y" * 100 + "\n…"  # no line end near: cut there


def _archived(tmp_path: Path, extra: str = "") -> tuple[Install, dict[str, str]]:
    inst = make_install(tmp_path, '[schedule]\ntimezone = "UTC"\n' + extra, memory_files=0)
    notes = {"memory/lofoten-trip.md": BOAT, "memory/orthodontist.md": DENTIST}
    return inst, force_archived(inst, notes)


def _rows(db: Path, sql: str, args: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return list(conn.execute(sql, args))
    finally:
        conn.close()


def _on_search(inst: Install, *args: str) -> dict:
    done = run_cli(inst, "on-search", "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_search_naming_an_archived_note_brings_it_back_and_counts_its_hit_once(
    tmp_path: Path,
) -> None:
    inst, archived = _archived(tmp_path)
    boat = inst.workspace / "memory/lofoten-trip.md"
    doc = _on_search(inst, "--call-id", "call-7", "--", "ketch", "Albatross", "Lofoten")
    assert doc["outcome"] == "restored" and doc["trigger"] == "search"
    assert doc["path"] == "memory/lofoten-trip.md"
    assert doc["opening"] == BOAT.strip()
    assert boat.read_text(encoding="utf-8") == BOAT
    assert not (inst.workspace / archived["memory/lofoten-trip.md"]).exists()
    # journaled: an undo of expire's move, in a restore-on-demand batch of its own
    [(batch,)] = _rows(inst.db, "SELECT batch FROM moves WHERE undo_of IS NOT NULL")
    assert batch.startswith("restore-on-demand:")
    status = json.loads(run_cli(inst, "status", "--json").stdout)["expire"]["restore_on_demand"]
    assert status["restored"] == 1 and status["recent"][-1]["trigger"] == "search"
    hits = _rows(inst.db, "SELECT agent, call_id, memory_path, kind FROM hits")
    assert hits == [("main", "call-7", "memory/lofoten-trip.md", "search")]
    # the same call asked again (a retry of the hook) counts nothing more, moves nothing
    again = _on_search(inst, "--call-id", "call-7", "--", "ketch", "Albatross", "Lofoten")
    assert again["outcome"] == "none"
    assert len(_rows(inst.db, "SELECT 1 FROM hits")) == 1
    # the dentist note never moved
    assert (inst.workspace / archived["memory/orthodontist.md"]).exists()


def test_a_restore_past_the_hooks_deadline_brings_the_note_back_but_counts_no_hit(
    tmp_path: Path,
) -> None:
    """The hook gave up waiting (its deadline passed): the search ran without the note, so
    the note is back for the next search but this search found nothing of it."""
    inst, _ = _archived(tmp_path)
    past = str(int((time.time() - 5) * 1000))
    doc = _on_search(inst, "--call-id=-7", f"--answer-by={past}", "--", "ketch", "Albatross")
    assert doc["outcome"] == "restored" and doc["late"] is True
    assert (inst.workspace / "memory/lofoten-trip.md").read_text(encoding="utf-8") == BOAT
    assert _rows(inst.db, "SELECT 1 FROM hits") == []


def test_a_search_the_workspace_answers_as_well_moves_nothing(tmp_path: Path) -> None:
    inst, archived = _archived(tmp_path)
    write_note(inst, "memory/ketch.md", KETCH_NOW, time.time())
    for words in (["ketch", "Albatross", "Svolvaer"], ["weather"], [" "]):
        doc = _on_search(inst, "--", *words)
        assert doc["outcome"] == "none", (words, doc)
    assert (inst.workspace / archived["memory/lofoten-trip.md"]).exists()
    assert _rows(inst.db, "SELECT count(*) FROM hits") == [(0,)]
    said = run_cli(inst, "on-search", "weather").stdout
    assert "nothing to do" in said


def test_a_hostile_query_is_only_data(tmp_path: Path) -> None:
    inst, archived = _archived(tmp_path)
    for words in (["../../etc/passwd"], ["--json"], ["$(rm -rf ~)", ";", "`x`"]):
        doc = _on_search(inst, "--", *words)
        assert doc["outcome"] == "none"
    assert all((inst.workspace / p).exists() for p in archived.values())


def test_switched_off_or_unknown_agent_moves_nothing(tmp_path: Path) -> None:
    inst, archived = _archived(tmp_path, "[expire]\nrestore_on_demand = false\n")
    assert _on_search(inst, "--", "ketch", "Albatross")["outcome"] == "off"
    inst2, archived2 = _archived(tmp_path / "two")
    unknown = _on_search(inst2, "--agent", "nobody", "--", "ketch", "Albatross")
    assert unknown["outcome"] == "none" and unknown["error"] == "no such agent"
    assert (inst.workspace / archived["memory/lofoten-trip.md"]).exists()
    assert (inst2.workspace / archived2["memory/lofoten-trip.md"]).exists()


def test_on_search_on_an_install_memoryd_never_ran_on_creates_nothing(tmp_path: Path) -> None:
    inst = make_install(tmp_path, '[schedule]\ntimezone = "UTC"\n', memory_files=0)
    inst.db.unlink(missing_ok=True)
    doc = _on_search(inst, "--", "ketch")
    assert doc["outcome"] == "none"
    assert not inst.db.exists()


def test_two_archived_notes_the_query_names_as_well_are_no_answer(tmp_path: Path) -> None:
    """A tie is no clear winner: which of the two the agent wants, recall asks; before, the
    first by name came back (a quarter of the restores on two generated families were of a
    note nobody needed, docs/decisions.md)."""
    twin = "# Sailing to the Lofoten islands\nChartered the ketch Albatross again, in May.\n"
    inst = make_install(tmp_path, '[schedule]\ntimezone = "UTC"\n', memory_files=0)
    archived = force_archived(inst, {"memory/lofoten-trip.md": BOAT, "memory/lofoten-may.md": twin})
    doc = _on_search(inst, "--", "ketch", "Albatross", "Lofoten")
    # nothing moves, but the answer names both (a read of one brings it back)
    assert doc["outcome"] == "tied", doc
    assert doc["paths"] == ["memory/lofoten-may.md", "memory/lofoten-trip.md"]
    assert all((inst.workspace / to).exists() for to in archived.values())
    assert _rows(inst.db, "SELECT count(*) FROM hits") == [(0,)]
    said = run_cli(inst, "on-search", "ketch", "Albatross", "Lofoten").stdout
    assert "memory/lofoten-may.md, memory/lofoten-trip.md; nothing moved" in said
    # a note in the workspace that answers as well: no tie to speak of
    write_note(inst, "memory/ketch.md", "# Lofoten ketch Albatross\n", time.time())
    assert _on_search(inst, "--", "ketch", "Albatross", "Lofoten")["outcome"] == "none"
    (inst.workspace / "memory/ketch.md").unlink()
    # a word only one of them holds makes it the winner
    doc = _on_search(inst, "--", "ketch", "Albatross", "Svolvaer")
    assert doc["outcome"] == "restored" and doc["path"] == "memory/lofoten-trip.md"


def test_a_tie_the_query_names_only_one_of_is_no_tie_to_name() -> None:
    from memoryd.policy.restore_match import best_match, tied_matches

    # both archived notes score the same; only "xenon" is distinctive (the workspace holds
    # "yak" and "zebu" many times over), so only one of them is named
    archived = {"memory/a.md": "xenon yak\n", "memory/b.md": "yak zebu\n"}
    present = {f"memory/w{i}.md": "yak zebu herd\n" for i in range(4)}
    query = "xenon yak zebu"
    assert best_match(query, archived, present) is None
    assert tied_matches(query, archived, present) == []
