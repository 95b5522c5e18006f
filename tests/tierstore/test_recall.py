"""Layered recall and session injection over a real tier store (real files, real SQLite)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memoryd.config import Config, OpenClawConfig, resolve_paths
from memoryd.jobs import organize
from memoryd.store import Store
from memoryd.tierstore import DAY, HOUR, load_records
from memoryd.tierstore.inject import inject
from memoryd.tierstore.recall import recall
from memoryd.tierstore.search import clearly_ahead, layered_search, match_file, normalise_words
from support.inprocess import memoryd as run_memoryd

NOW = 1_780_000_000.0


@pytest.fixture
def env(tmp_path: Path):
    state = tmp_path / "oc"
    state.mkdir()
    cfg = Config(openclaw=OpenClawConfig(state_dir=str(state)))
    paths = resolve_paths(cfg, {})
    store = Store.open(paths.db)
    root = paths.tiers_root
    for tier in ("hot", "warm", "gist", "forgotten"):
        (root / tier).mkdir(parents=True)
    yield cfg, paths, store, root
    store.close()


def write(root: Path, rel: str, text: str, mtime: float) -> Path:
    p = root / rel
    p.write_text(text, encoding="utf-8")
    os.utime(p, (mtime, mtime))
    return p


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.glob("*/*.md"))


def recall_hits(store: Store) -> list[tuple[str, str, str, float]]:
    return store.conn.execute(
        "SELECT agent, memory_path, kind, ts FROM hits WHERE kind = 'recall' ORDER BY id"
    ).fetchall()


# --------------------------------------------------------------------------- matching


def test_matching_is_any_word_case_insensitive_and_works_for_chinese():
    words = normalise_words(["Postgres", "数据库  迁移"])
    assert words == ["postgres", "数据库", "迁移"]
    found, occ, _, snippet = match_file("把数据库迁移到 POSTGRES。\n".encode(), words, "warm")
    assert found == ("postgres", "数据库", "迁移") and occ == 3
    assert snippet == "把数据库迁移到 POSTGRES。"
    assert match_file(b"nothing here", words, "warm")[0] == ()
    # Non-ASCII letters fold too.
    assert match_file("Über alles".encode(), normalise_words(["über"]), "hot")[0] == ("über",)


def test_search_stops_at_the_first_tier_with_a_match(env):
    _cfg, _paths, _store, root = env
    write(root, "warm/a.md", "boat trip on saturday", NOW - DAY)
    write(root, "gist/b.md", "# Boat\n标签: boat\nsummary", NOW - 9 * DAY)
    write(root, "forgotten/c.md", "boat", NOW - 20 * DAY)
    result = layered_search(root, ["boat"])
    assert result.tier == "warm" and [m.rel for m in result.matches] == ["warm/a.md"]
    assert result.searched == ["hot", "warm"]
    assert layered_search(root, ["zebra"]).tier is None


def test_gist_matches_rank_tag_hits_first(env):
    _cfg, _paths, _store, root = env
    write(root, "gist/a.md", "# A\n标签: other\nboat boat boat", NOW - 9 * DAY)
    write(root, "gist/b.md", "# B\n标签: boat, sail\nwe went", NOW - 9 * DAY)
    result = layered_search(root, ["boat"])
    assert [m.rel for m in result.matches] == ["gist/b.md", "gist/a.md"]
    assert result.matches[0].tag_match


# --------------------------------------------------------------------------- rotation


def test_hot_hit_is_read_but_not_moved(env):
    cfg, paths, store, root = env
    write(root, "hot/a.md", "espresso ratio 1:2", NOW - HOUR)
    out = recall(cfg, paths, store, ["espresso"], NOW)
    assert out.tier == "hot" and out.rotations == []
    assert out.shown[0]["text"] == "espresso ratio 1:2"
    assert files(root) == ["hot/a.md"]
    assert os.stat(root / "hot/a.md").st_mtime == NOW - HOUR
    assert recall_hits(store) == [("memoryd", "tiers/a.md", "recall", NOW)]


def test_warm_hit_moves_back_to_hot_and_is_touched(env):
    cfg, paths, store, root = env
    write(root, "warm/a.md", "espresso ratio 1:2", NOW - 3 * DAY)
    out = recall(cfg, paths, store, ["ESPRESSO"], NOW)
    assert out.tier == "warm"
    assert out.shown[0]["now"] == "hot/a.md"
    assert files(root) == ["hot/a.md"]
    assert os.stat(root / "hot/a.md").st_mtime == NOW  # touched: decay starts over
    assert load_records(store)["a.md"].tier == "hot"
    refcount = json.loads((root.parent / "refcount.json").read_text())
    assert refcount["hot/a.md"]["total"] == 1
    assert refcount["hot/a.md"]["timestamps"] == [int(NOW)]
    journal = store.conn.execute("SELECT op, state, reason FROM moves").fetchall()
    assert journal == [("move", "done", "retrieved in warm/: still relevant")]


def test_gist_hit_brings_summary_and_warm_original_to_hot(env):
    cfg, paths, store, root = env
    # The word is only in the summary (as a model's summary might put it).
    write(root, "warm/a.md", "long original text about the trip", NOW - 10 * DAY)
    write(root, "gist/a.md", "# Trip\n标签: sailing\nsummary", NOW - 3 * DAY)
    out = recall(cfg, paths, store, ["sailing"], NOW)
    assert out.tier == "gist"
    assert out.shown[0]["original"] == "hot/a.md"  # where to read the detail
    assert files(root) == ["hot/a.gist.md", "hot/a.md"]
    assert "gist/" in out.message and "original" in out.message
    # When the note cools down, the summary goes back to gist/ with it.
    result = organize.run(cfg, paths, store, NOW + 4 * HOUR)
    assert result.data["counts"]["move"] == 2
    assert files(root) == ["gist/a.md", "warm/a.md"]


def test_forgotten_hit_goes_back_to_warm_marked_so_never_deleted(env):
    cfg, paths, store, root = env
    write(root, "forgotten/a.md", "the wifi password is in the red binder", NOW - 40 * DAY)
    write(root, "forgotten/a.gist.md", "# Wifi\n标签: wifi\n", NOW - 40 * DAY)
    out = recall(cfg, paths, store, ["wifi"], NOW)
    assert out.tier == "forgotten"
    assert files(root) == ["gist/a.md", "warm/a.md"]
    rec = load_records(store)["a.md"]
    assert rec.user_marked and rec.tier == "warm"
    assert ("tiers/a.md", "marked") in store.conn.execute("SELECT path, kind FROM marks").fetchall()
    assert "recovered" in out.message


def test_more_matches_than_the_limit_lists_the_best_and_moves_nothing(env):
    cfg, paths, store, root = env
    for i in range(5):
        write(root, f"warm/n{i}.md", "meeting notes" + " budget" * i, NOW - DAY)
    out = recall(cfg, paths, store, ["meeting", "budget"], NOW)
    assert out.too_many and out.matches == 5
    assert [m["path"] for m in out.shown] == ["warm/n4.md", "warm/n3.md", "warm/n2.md"]
    assert "Narrow the words" in out.message
    assert all(f.startswith("warm/") for f in files(root))
    assert recall_hits(store) == []


def test_clearly_ahead_is_more_of_the_words_or_far_more_often():
    assert clearly_ahead((2, 2), (1, 9))  # more of the words wins, whatever the counts
    assert not clearly_ahead((1, 9), (2, 2))
    assert clearly_ahead((1, 6), (1, 3))  # as many words, twice as often, at least 3 times
    assert clearly_ahead((1, 3), (1, 1))
    assert not clearly_ahead((1, 5), (1, 3))  # not twice
    assert not clearly_ahead((1, 2), (1, 1))  # too few to tell
    assert not clearly_ahead((2, 4), (2, 4))  # a tie


def test_more_matches_with_a_clear_leader_bring_it_back_and_list_the_others(env):
    cfg, paths, store, root = env
    write(root, "warm/kayak.md", "kayak trip in june on the fjord", NOW - DAY)
    for i in range(5):
        write(root, f"warm/june{i}.md", f"june meeting {i}", NOW - DAY)
    out = recall(cfg, paths, store, ["kayak", "june"], NOW)
    assert not out.too_many and out.matches == 6
    assert [m["path"] for m in out.shown] == ["warm/kayak.md"]
    assert out.shown[0]["now"] == "hot/kayak.md" and "fjord" in out.shown[0]["text"]
    assert (root / "hot/kayak.md").is_file()
    assert [p for _a, p, _k, _t in recall_hits(store)] == ["tiers/kayak.md"]
    assert "moved back to hot/" in out.message and "clearly leads" in out.message
    assert "warm/june0.md" in out.message and "Narrow the words" in out.message
    assert sorted(f for f in files(root) if "june" in f) == [f"warm/june{i}.md" for i in range(5)]


def test_no_match_gives_the_seeds_three_reasons(env):
    cfg, paths, store, _root = env
    out = recall(cfg, paths, store, ["zebra"], NOW)
    assert out.tier is None and out.hits_recorded == 0
    assert "never recorded" in out.message and "deleted" in out.message
    assert "other words" in out.message


def test_peek_neither_moves_nor_counts(env):
    cfg, paths, store, root = env
    write(root, "warm/a.md", "espresso", NOW - DAY)
    out = recall(cfg, paths, store, ["espresso"], NOW, rotate=False)
    assert out.tier == "warm" and files(root) == ["warm/a.md"] and recall_hits(store) == []


def test_recall_hits_count_towards_forgetting(env):
    cfg, paths, store, root = env
    write(root, "warm/a.md", "espresso", NOW - 13 * DAY)
    write(root, "gist/a.md", "# a\n标签: espresso\n", NOW - 6 * DAY)
    organize.run(cfg, paths, store, NOW - 13 * DAY + 60)  # record the note early
    recall(cfg, paths, store, ["espresso"], NOW)  # warm hit → hot
    later = NOW + 13 * DAY
    organize.run(cfg, paths, store, later)
    assert files(root) == ["gist/a.md", "warm/a.md"]  # retrieved 13 days ago: kept
    organize.run(cfg, paths, store, NOW + 15 * DAY)
    assert files(root) == ["forgotten/a.gist.md", "forgotten/a.md"]


# --------------------------------------------------------------------------- inject


def test_inject_prints_hot_notes_newest_first_within_the_budget(env):
    _cfg, _paths, _store, root = env
    write(root, "hot/old.md", "old note\n", NOW - 2 * HOUR)
    write(root, "hot/new.md", "new note\n", NOW - HOUR)
    write(root, "hot/new.gist.md", "summary of new\n", NOW - HOUR)
    write(root, "warm/w.md", "not hot\n", NOW - DAY)
    inj = inject(root, 10_000)
    assert inj.included == ["new.md", "old.md"]
    assert inj.text == "## hot/new.md\nnew note\n\n## hot/old.md\nold note\n\n"
    small = inject(root, 30)
    assert small.included == ["new.md"] and small.omitted == ["old.md"]
    assert len(small.text) <= 30
    cut = inject(root, 20)
    assert cut.truncated and len(cut.text) <= 20 and cut.included == ["new.md"]
    assert inject(root, 0).text == ""


def test_cli_recall_and_inject_json(env, tmp_path: Path):
    _cfg, paths, _store, root = env
    write(root, "warm/a.md", "# Espresso\nratio 1:2, 28 seconds\n", NOW - 2 * DAY)
    environ = {
        **os.environ,
        "OPENCLAW_STATE_DIR": str(paths.state_dir),
        "MEMORYD_NOW": str(NOW),
    }
    out = run_memoryd(["recall", "espresso", "--json"], env=environ)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["tier"] == "warm" and doc["shown"][0]["now"] == "hot/a.md"
    assert doc["shown"][0]["text"].startswith("# Espresso")
    out = run_memoryd(["inject", "--max-chars", "100"], env=environ)
    assert out.returncode == 0 and out.stdout.startswith("## hot/a.md\n# Espresso")
    out = run_memoryd(["recall", "zebra"], env=environ)
    assert out.returncode == 0 and "Possible reasons" in out.stdout
    out = run_memoryd(["recall", " "], env=environ)
    assert out.returncode == 2 and "at least one" in out.stderr


def test_recall_limit_is_configurable(env):
    cfg, paths, store, root = env
    for i in range(2):
        write(root, f"warm/n{i}.md", "meeting", NOW - DAY)
    one = cfg._replace(tiers=cfg.tiers._replace(recall_max_files=1))
    assert recall(one, paths, store, ["meeting"], NOW).too_many
    assert not recall(cfg, paths, store, ["meeting"], NOW).too_many


def test_refcount_after_recall_equals_a_full_rebuild_from_the_database(env):
    cfg, paths, store, root = env
    write(root, "warm/a.md", "espresso", NOW - 3 * DAY)
    write(root, "warm/b.md", "boat", NOW - 3 * DAY)
    organize.run(cfg, paths, store, NOW - 60)  # writes refcount.json for both
    refcount = root.parent / "refcount.json"
    assert set(json.loads(refcount.read_text())) == {"warm/a.md", "warm/b.md"}
    recall(cfg, paths, store, ["espresso"], NOW)
    doc = json.loads(refcount.read_text())
    assert set(doc) == {"hot/a.md", "warm/b.md"}
    from memoryd.tierstore import refcount_document

    assert doc == json.loads(json.dumps(refcount_document(store, NOW)))
