"""Pure tier decisions (seed 004): what organize moves where, and why; recall's rotation table."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memoryd.store import Store
from memoryd.tierstore import (
    DAY,
    HOUR,
    Action,
    BuriedFile,
    NoteRecord,
    Placement,
    TierFile,
    TierPolicy,
    bury,
    expired_archives,
    last_retrievals,
    note_of,
    note_of_key,
    placement_of,
    plan_note,
    reconcile,
    refcount_document,
    rotation,
    save_records,
    scan_store,
    summary_rel,
)

NOW = 1_780_000_000.0
POL = TierPolicy()


def place(name: str, originals: dict[str, float] | None = None, summary=None) -> Placement:
    """A note's placement: originals {tier: mtime}; summary (tier, mtime)."""
    origs = tuple(TierFile(t, name, m, 10) for t, m in (originals or {}).items())
    summs = ()
    if summary is not None:
        t, m = summary
        summs = (TierFile(t, summary_rel(name, t).split("/", 1)[1], m, 5),)
    return Placement(name, origs, summs)


def rec(name: str, tier: str, created: float, entered: float | None = None, **kw) -> NoteRecord:
    return NoteRecord(name, tier, created, entered if entered is not None else created, **kw)


def ops(actions: list[Action]) -> list[tuple[str, str, str | None]]:
    return [(a.op, a.src, a.dst) for a in actions]


# --------------------------------------------------------------------------- names


def test_summary_names_and_hit_keys_map_back_to_the_note():
    assert note_of("gist", "x.md") == ("x.md", True)
    assert note_of("hot", "x.gist.md") == ("x.md", True)
    assert note_of("warm", "x.md") == ("x.md", False)
    assert note_of_key("tiers/x.gist.md") == "x.md"
    assert note_of_key("tiers/x.md") == "x.md"
    assert note_of_key("memory/x.md") is None
    assert note_of_key("tiers/../x.md") is None


# --------------------------------------------------------------------------- step 1


def test_hot_note_stays_hot_for_three_hours_then_moves_to_warm():
    p = place("a.md", {"hot": NOW - 2.9 * HOUR})
    assert plan_note(p, rec("a.md", "hot", NOW - 2.9 * HOUR), None, NOW, POL) == []
    p = place("a.md", {"hot": NOW - 3.1 * HOUR})
    actions = plan_note(p, rec("a.md", "hot", NOW - 3.1 * HOUR), None, NOW, POL)
    assert ops(actions) == [("move", "hot/a.md", "warm/a.md")]
    assert "3.1 h old > 3 h" in actions[0].reason and actions[0].step == 1


def test_warm_note_older_than_a_week_gets_a_summary_copy_and_keeps_its_original():
    p = place("a.md", {"warm": NOW - 8 * DAY})
    r = rec("a.md", "warm", NOW - 8 * DAY, entered=NOW - DAY)  # retrieved before it came
    actions = plan_note(p, r, NOW - 2 * DAY, NOW, POL)
    assert ops(actions) == [("gist", "warm/a.md", "gist/a.md")]
    assert "original kept" in actions[0].reason


def test_a_summarised_note_is_not_summarised_again():
    p = place("a.md", {"warm": NOW - 9 * DAY}, ("gist", NOW - 2 * DAY))
    r = rec("a.md", "warm", NOW - 9 * DAY, entered=NOW - DAY / 2)
    assert plan_note(p, r, NOW - DAY, NOW, POL) == []


def test_an_old_note_found_in_hot_cascades_in_one_run():
    # Found for the first time in hot/ with a 20-day-old mtime and no record.
    p = place("a.md", {"hot": NOW - 20 * DAY})
    actions = plan_note(p, None, None, NOW, POL)
    assert ops(actions) == [
        ("move", "hot/a.md", "warm/a.md"),
        ("gist", "warm/a.md", "gist/a.md"),
        ("move", "warm/a.md", "forgotten/a.md"),
        ("move", "gist/a.md", "forgotten/a.gist.md"),
    ]
    assert [a.step for a in actions] == [1, 1, 2, 2]


def test_summary_in_hot_follows_its_note_out_of_hot():
    # After a gist hit both files are in hot/; when the note cools, the summary goes home.
    p = place("a.md", {"hot": NOW - 4 * HOUR}, ("hot", NOW - 4 * HOUR))
    actions = plan_note(p, rec("a.md", "hot", NOW - 20 * DAY), NOW - 4 * HOUR, NOW, POL)
    assert ops(actions) == [
        ("move", "hot/a.md", "warm/a.md"),
        ("move", "hot/a.gist.md", "gist/a.md"),
    ]


# --------------------------------------------------------------------------- step 2


def test_forgetting_counts_from_the_last_retrieval_or_creation():
    created = NOW - 20 * DAY
    p = place("a.md", {"warm": created}, ("gist", created + 7 * DAY))
    r = rec("a.md", "warm", created, entered=NOW - 19 * DAY)
    # Retrieved 13 days ago (and brought back then): stays.
    back = rec("a.md", "warm", created, entered=NOW - 12 * DAY)
    assert plan_note(p, back, NOW - 13 * DAY, NOW, POL) == []
    # Retrieved 15 days ago: forgotten, summary too (too old to bring it back up).
    actions = plan_note(p, r, NOW - 15 * DAY, NOW, POL)
    assert ops(actions) == [
        ("move", "warm/a.md", "forgotten/a.md"),
        ("move", "gist/a.md", "forgotten/a.gist.md"),
    ]
    assert "last retrieval 15.0 d ago > 14 d" in actions[0].reason
    # Never retrieved: from creation.
    actions = plan_note(p, r, None, NOW, POL)
    assert "created 20.0 d ago" in actions[0].reason


def test_hot_notes_are_never_forgotten():
    p = place("a.md", {"hot": NOW - HOUR})
    assert plan_note(p, rec("a.md", "hot", NOW - 90 * DAY), None, NOW, POL) == []


def test_gist_days_ends_the_gist_window_for_never_retrieved_notes():
    # With a forgetting window longer than the gist window, gist_days still applies.
    pol = TierPolicy(forget=60 * DAY)
    created = NOW - 31 * DAY
    p = place("a.md", {"warm": created}, ("gist", created + 7 * DAY))
    actions = plan_note(p, rec("a.md", "warm", created), None, NOW, pol)
    assert ops(actions)[0] == ("move", "warm/a.md", "forgotten/a.md")
    assert "never retrieved" in actions[0].reason
    # A retrieved one stays until the forgetting window says otherwise.
    assert plan_note(p, rec("a.md", "warm", created), NOW - 40 * DAY, NOW, pol) == []


def test_summary_only_note_is_forgotten_from_gist():
    p = place("a.md", None, ("gist", NOW - 20 * DAY))
    actions = plan_note(p, rec("a.md", "gist", NOW - 20 * DAY), None, NOW, POL)
    assert ops(actions) == [("move", "gist/a.md", "forgotten/a.gist.md")]


# --------------------------------------------------------------------------- step 3


def test_deleted_after_thirty_days_in_forgotten_never_when_marked_or_disabled():
    p = place("a.md", {"forgotten": NOW - 80 * DAY}, ("forgotten", NOW - 70 * DAY))
    old = rec("a.md", "forgotten", NOW - 80 * DAY, entered=NOW - 31 * DAY)
    actions = plan_note(p, old, None, NOW, POL)
    assert ops(actions) == [
        ("delete", "forgotten/a.md", None),
        ("delete", "forgotten/a.gist.md", None),
    ]
    assert "in forgotten/ for 31.0 d > 30 d" in actions[0].reason
    # 29 days there: kept.
    young = rec("a.md", "forgotten", NOW - 80 * DAY, entered=NOW - 29 * DAY)
    assert plan_note(p, young, None, NOW, POL) == []
    # User-marked: never.
    marked = rec("a.md", "forgotten", NOW - 80 * DAY, entered=NOW - 300 * DAY, user_marked=True)
    assert plan_note(p, marked, None, NOW, POL) == []
    # Deletion disabled: never.
    assert plan_note(p, old, None, NOW, TierPolicy(delete_enabled=False)) == []


def test_the_forgotten_clock_starts_when_the_note_enters_not_at_its_mtime():
    # A file found in forgotten/ without a record (moved by hand) has just entered.
    p = place("a.md", {"forgotten": NOW - 300 * DAY})
    assert plan_note(p, None, None, NOW, POL) == []
    # A record that says another tier: it just moved there.
    assert plan_note(p, rec("a.md", "warm", NOW - 300 * DAY), None, NOW, POL) == []


def test_a_note_in_two_tiers_is_a_conflict_and_never_touched():
    p = place("a.md", {"hot": NOW - 10 * DAY, "warm": NOW - 10 * DAY})
    actions = plan_note(p, None, None, NOW, POL)
    assert [a.op for a in actions] == ["conflict"]
    assert "hot/a.md" in actions[0].src and "warm/a.md" in actions[0].src


# --------------------------------------------------------------------------- fixpoint


def _apply(p: Placement, r: NoteRecord | None, actions: list[Action], now: float):
    """Apply a plan to a placement the way the executor does (moves keep mtimes)."""
    files = {f.rel: f for f in p.files}
    for a in actions:
        if a.op == "move":
            f = files.pop(a.src)
            tier, fn = a.dst.split("/", 1)
            mtime = now if a.step == 0 else f.mtime  # a retrieval "touches" the file
            files[a.dst] = TierFile(tier, fn, mtime, f.size)
        elif a.op == "gist":
            files[a.dst] = TierFile("gist", a.dst.split("/", 1)[1], now, 3)
        elif a.op == "delete":
            files.pop(a.src)
    origs, summs = [], []
    for f in files.values():
        (summs if note_of(f.tier, f.filename)[1] else origs).append(f)
    new = Placement(p.name, tuple(origs), tuple(summs))
    recs = reconcile({p.name: new}, {p.name: r} if r else {}, now)
    return new, recs.get(p.name, r)


tiers_st = st.sampled_from(["hot", "warm", "forgotten", None])
summ_st = st.sampled_from(["hot", "warm", "gist", "forgotten", None])
ages = st.floats(min_value=0, max_value=120 * DAY)


@settings(max_examples=400, deadline=None)
@given(tiers_st, summ_st, ages, ages, ages, st.one_of(st.none(), ages), st.booleans())
def test_organize_plans_are_a_fixpoint_and_never_leave_a_note_without_its_original(
    o_tier, s_tier, o_age, s_age, entered_age, hit_age, marked
):
    assume(o_tier is not None or s_tier is not None)
    p = place(
        "n.md",
        {o_tier: NOW - o_age} if o_tier else None,
        (s_tier, NOW - s_age) if s_tier else None,
    )
    created = NOW - max(o_age if o_tier else 0, s_age if s_tier else 0)
    from memoryd.tierstore import tier_of

    r = rec("n.md", tier_of(p), created, entered=NOW - entered_age, user_marked=marked)
    last = None if hit_age is None else NOW - hit_age
    actions = plan_note(p, r, last, NOW, POL)
    assert all(a.src != a.dst for a in actions)
    new, r2 = _apply(p, r, actions, NOW)
    assert plan_note(new, r2, last, NOW, POL) == []
    # An original disappears only by a journaled deletion from forgotten/.
    if o_tier is not None and not new.originals:
        assert any(a.op == "delete" and a.src == "forgotten/n.md" for a in actions)
        assert not marked
    assert len(new.originals) <= 1 and len(new.summaries) <= 1


# --------------------------------------------------------------------------- rotation


@pytest.mark.parametrize(
    "originals,summary,moves",
    [
        ({"warm": NOW - 9 * DAY}, None, [("warm/a.md", "hot/a.md")]),
        ({"warm": NOW - 9 * DAY}, ("gist", NOW - 2 * DAY), [("warm/a.md", "hot/a.md")]),
        (None, ("gist", NOW - 2 * DAY), [("gist/a.md", "hot/a.gist.md")]),
        (
            {"forgotten": NOW - 40 * DAY},
            ("forgotten", NOW - 30 * DAY),
            [("forgotten/a.md", "warm/a.md"), ("forgotten/a.gist.md", "gist/a.md")],
        ),
        ({"hot": NOW - HOUR}, None, []),
    ],
)
def test_an_agents_retrieval_moves_a_note_back_up_like_recall(originals, summary, moves):
    """Seed 004: a hit in any tier rotates the note, whoever made it (agent or recall)."""
    p = place("a.md", originals, summary)
    from memoryd.tierstore import tier_of

    r = rec("a.md", tier_of(p), NOW - 60 * DAY, entered=NOW - 20 * DAY)
    actions = plan_note(p, r, NOW - DAY, NOW, POL)
    assert [(a.src, a.dst) for a in actions if a.step == 0] == moves
    # a retrieval from before the note entered its tier changes nothing of the kind
    earlier = plan_note(p, r, NOW - 21 * DAY, NOW, POL)
    assert not [a for a in earlier if a.step == 0]


def test_rotation_follows_the_seeds_table():
    p = place("a.md", {"hot": NOW})
    assert rotation(p, "hot") == []
    p = place("a.md", {"warm": NOW - 5 * DAY})
    assert [m[:2] for m in rotation(p, "warm")] == [("warm/a.md", "hot/a.md")]
    p = place("a.md", {"warm": NOW - 9 * DAY}, ("gist", NOW - 2 * DAY))
    assert [m[:2] for m in rotation(p, "gist")] == [
        ("gist/a.md", "hot/a.gist.md"),
        ("warm/a.md", "hot/a.md"),
    ]
    p = place("a.md", {"forgotten": NOW - 40 * DAY}, ("forgotten", NOW - 30 * DAY))
    assert [m[:2] for m in rotation(p, "forgotten")] == [
        ("forgotten/a.md", "warm/a.md"),
        ("forgotten/a.gist.md", "gist/a.md"),
    ]


# --------------------------------------------------------------------------- state


def test_reconcile_records_new_notes_and_moves_conservatively():
    p = {"a.md": place("a.md", {"warm": NOW - 5 * DAY})}
    new = reconcile(p, {}, NOW)
    assert new["a.md"].tier == "warm" and new["a.md"].created == NOW - 5 * DAY
    assert new["a.md"].entered == NOW
    moved = reconcile(
        {"a.md": place("a.md", {"forgotten": NOW - 5 * DAY})},
        {"a.md": rec("a.md", "warm", NOW - 5 * DAY)},
        NOW,
    )
    assert moved["a.md"].tier == "forgotten" and moved["a.md"].entered == NOW
    gone = reconcile({}, {"a.md": rec("a.md", "warm", NOW - 5 * DAY)}, NOW)
    assert gone["a.md"].tier == "missing"


def test_refcount_document_has_the_seeds_fields_from_the_database():
    store = Store.memory()
    with store.transaction():
        save_records(store, [rec("a.md", "warm", NOW - 10 * DAY, summarized=NOW - DAY)])
        for i, ts in enumerate([NOW - 9 * DAY, NOW - 2 * DAY, NOW - HOUR]):
            store.conn.execute(
                "INSERT INTO hits(agent, call_id, memory_path, kind, ts) VALUES (?,?,?,?,?)",
                ("main", f"c{i}", "tiers/a.md" if i else "tiers/a.gist.md", "search", ts),
            )
        store.set_mark("tiers/a.md", "promoted")
    doc = refcount_document(store, NOW)
    assert doc == {
        "warm/a.md": {
            "total": 3,
            "7d": 2,
            "timestamps": [int(NOW - 9 * DAY), int(NOW - 2 * DAY), int(NOW - HOUR)],
            "user_marked": False,
            "summarized": True,
            "created": int(NOW - 10 * DAY),
            "promoted": True,
        }
    }
    assert last_retrievals(store) == {"a.md": NOW - HOUR}


def test_scan_skips_symlinks_and_non_notes(tmp_path: Path):
    for tier in ("hot", "warm", "gist", "forgotten"):
        (tmp_path / tier).mkdir()
    (tmp_path / "hot" / "a.md").write_text("a")
    (tmp_path / "hot" / "a.gist.md").write_text("summary of a")
    (tmp_path / "hot" / "notes.txt").write_text("not a note")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    outside.write_text("secret")
    (tmp_path / "warm" / "link.md").symlink_to(outside)
    found = scan_store(tmp_path)
    assert list(found) == ["a.md"]
    assert [f.rel for f in found["a.md"].files] == ["hot/a.md", "hot/a.gist.md"]
    assert placement_of(tmp_path, "a.md") == found["a.md"]
    assert placement_of(tmp_path, "link.md").files == ()


def test_graveyard_archive_is_restorable_and_expires_by_month(tmp_path: Path):
    now = 1_780_000_000.0  # 2026-05-28
    files = [BuriedFile("forgotten/a.md", "ab" * 32, "第一行\nline".encode(), now - DAY)]
    archive = bury(tmp_path, now, files)
    bury(tmp_path, now, files)  # a repeat after a crash adds nothing
    assert archive.name == "2026-05.zip"
    with zipfile.ZipFile(archive) as zf:
        assert zf.namelist() == [files[0].entry]
        assert zf.read(files[0].entry).decode() == "第一行\nline"
    assert expired_archives(tmp_path, now + 80 * DAY, 90) == []
    assert expired_archives(tmp_path, now + 100 * DAY, 90) == [archive]


def test_marks_kept_only_in_old_tier_records_are_carried_into_marks(tmp_path: Path) -> None:
    """An install whose organize marked a note only in tier_files keeps the note protected."""
    import sqlite3

    from memoryd.store import Store
    from memoryd.tierstore import load_records

    db = tmp_path / "state.db"
    Store.open(db).close()
    conn = sqlite3.connect(db)
    conn.executescript(
        "INSERT INTO tier_files(name, tier, created, entered, user_marked, promoted) "
        "VALUES ('kept.md', 'forgotten', 1, 2, 1, 0), ('promo.md', 'warm', 1, 2, 0, 1), "
        "('plain.md', 'gist', 1, 2, 0, 0), ('both.md', 'warm', 1, 2, 1, 0);"
        "INSERT INTO marks(path, kind, created, note) "
        "VALUES ('tiers/both.md', 'marked', 9, 'memoryd mark');"
        "ALTER TABLE transcript_db_cursors DROP COLUMN seq_rows;"  # (a later migration's)
        "DROP INDEX IF EXISTS hits_by_path_anchor;"  # (migration 13's, on the column)
        "ALTER TABLE hits DROP COLUMN anchor;"  # (migration 11's)
        "PRAGMA user_version = 5;"  # the schema before marks moved to the marks table only
    )
    conn.close()
    with Store.open(db) as store:
        records = load_records(store)
        marked = dict(store.conn.execute("SELECT path, note FROM marks WHERE kind = 'marked'"))
    # carried under the note's hit key; a mark already in marks keeps its own note
    assert set(marked) == {"tiers/kept.md", "tiers/both.md"}
    assert marked["tiers/both.md"] == "memoryd mark"
    assert records["kept.md"].user_marked and not records["kept.md"].promoted
    assert records["promo.md"].promoted and not records["promo.md"].user_marked
    assert not records["plain.md"].user_marked and not records["plain.md"].promoted
