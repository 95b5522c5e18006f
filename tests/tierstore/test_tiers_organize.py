"""organize over a real tier store: a simulated two months, dry runs, the CLI, the graveyard."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from memoryd.config import Config, OpenClawConfig, resolve_paths
from memoryd.jobs import organize
from memoryd.store import Store
from memoryd.tierstore import DAY, HOUR, load_records
from memoryd.tierstore.recall import recall

T0 = 1_772_323_200.0  # 2026-03-01T00:00:00Z


@pytest.fixture
def env(tmp_path: Path):
    state = tmp_path / "oc"
    state.mkdir()
    cfg = Config(openclaw=OpenClawConfig(state_dir=str(state)))
    paths = resolve_paths(cfg, {})
    store = Store.open(paths.db)
    yield cfg, paths, store, paths.tiers_root
    store.close()


def write(root: Path, rel: str, text: str, mtime: float) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    os.utime(p, (mtime, mtime))
    return p


def where(root: Path) -> dict[str, list[str]]:
    """note → the tier-relative paths of its files."""
    out: dict[str, list[str]] = {}
    for p in sorted(root.glob("*/*.md")):
        rel = str(p.relative_to(root))
        name = p.name.replace(".gist.md", ".md") if p.parent.name != "gist" else p.name
        out.setdefault(name, []).append(rel)
    return out


def transcript_hit(store: Store, note: str, ts: float, n: int) -> None:
    with store.transaction():
        store.conn.execute(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query) "
            "VALUES ('main', ?, ?, 'search', ?, 'q')",
            (f"call-{note}-{n}", f"tiers/{note}", ts),
        )


NOTES = {
    # name: (day written, text)
    "a-never-used.md": (0, "# Alpha\n\nalpha notes about the heating bill.\n"),
    "b-recalled.md": (0, "# 小船\n\n周六去划船，记得带防晒霜。\n"),
    "c-used-by-agent.md": (0, "# Charlie\n\nthe agent searches this every few days.\n"),
    "d-late.md": (20, "# Delta\n\ndelta written on day twenty.\n"),
    "e-marked-old.md": (0, "# Echo\n\necho: recovered once, then forgotten again.\n"),
}


def test_a_simulated_two_months_ends_where_the_seeds_rules_say(env):
    cfg, paths, store, root = env
    originals = {name: text for name, (_, text) in NOTES.items()}
    run_log: list[dict] = []
    for step in range(0, 60 * 4 + 1):  # organize every 6 hours for 60 days
        now = T0 + step * 6 * HOUR
        day = step / 4
        for name, (written, text) in NOTES.items():
            if day == written:
                write(root, f"hot/{name}", text, now)
        if day == 10:  # b is looked up: warm → hot
            assert recall(cfg, paths, store, ["防晒霜"], now + 60).tier == "warm"
        if day == 30:  # e, forgotten since day 14, is recovered: → warm, marked
            out = recall(cfg, paths, store, ["recovered once"], now + 60)
            assert out.tier == "forgotten" and out.shown[0]["note"] == "e-marked-old.md"
        if step % 20 == 0 and day <= 56:  # the agent finds c every 5 days
            transcript_hit(store, "c-used-by-agent.md", now, step)
        result = organize.run(cfg, paths, store, now + 120)
        run_log.append(result.data)
        assert result.data["counts"]["failed"] == 0

    end = T0 + 60 * DAY + 120
    final = where(root)
    # a: warm day 0+3h, gist day 7, forgotten day 14, deleted day 44.
    assert "a-never-used.md" not in final
    # b: recalled day 10 → hot; forgotten day 24 (14 d after the retrieval); deleted day 54.
    assert "b-recalled.md" not in final
    # c: found by the agent every 5 days: each retrieval brings it back to hot/ ("touched",
    # as recall does), so it is never a week old, never summarised, never forgotten.
    assert final["c-used-by-agent.md"] == ["warm/c-used-by-agent.md"]
    c_back = [
        a
        for data in run_log
        for a in data["actions"]
        if a["note"] == "c-used-by-agent.md" and a["step"] == 0
    ]
    assert c_back and all(a["src"] == "warm/c-used-by-agent.md" for a in c_back)
    # d: written day 20, forgotten day 34, 26 days in forgotten/ by day 60: kept.
    assert final["d-late.md"] == ["forgotten/d-late.gist.md", "forgotten/d-late.md"]
    # e: recovered on day 30, forgotten again day 44, but marked: never deleted.
    assert final["e-marked-old.md"] == [
        "forgotten/e-marked-old.gist.md",
        "forgotten/e-marked-old.md",
    ]

    # Originals kept byte for byte; every summarised note has its gist.
    records = load_records(store)
    for name, files in final.items():
        original = next(f for f in files if f.endswith("/" + name) and f.split("/")[0] != "gist")
        assert (root / original).read_text(encoding="utf-8") == originals[name]
        if name == "c-used-by-agent.md":  # kept fresh by use: never summarised
            assert records[name].summarized is None and len(files) == 1
            continue
        assert records[name].summarized is not None
        assert any(f.startswith("gist/") or f.endswith(".gist.md") for f in files)
        summary = next(f for f in files if f.startswith("gist/") or f.endswith(".gist.md"))
        assert (root / summary).read_text(encoding="utf-8").startswith("# ")
    assert records["a-never-used.md"].tier == "deleted"
    assert records["b-recalled.md"].tier == "deleted"

    # Deletions only where allowed, each journaled with the file's hash, each in the graveyard.
    deletes = store.conn.execute(
        "SELECT src, sha256, reason, state FROM moves WHERE op = 'delete' ORDER BY id"
    ).fetchall()
    deleted = sorted(Path(src).name for src, *_ in deletes)
    assert deleted == sorted(
        ["a-never-used.md", "a-never-used.gist.md", "b-recalled.md", "b-recalled.gist.md"]
    )
    assert all(state == "done" and "in forgotten/ for" in reason for _, _, reason, state in deletes)
    archives = sorted((paths.memoryd_dir / "graveyard").glob("*.zip"))
    assert [a.name for a in archives] == ["2026-04.zip"]
    with zipfile.ZipFile(archives[0]) as zf:
        restored = {n.rsplit("/", 1)[1]: zf.read(n) for n in zf.namelist()}
    for src, sha, _, _ in deletes:
        name = Path(src).name
        assert hashlib.sha256(restored[name]).hexdigest() == sha
    assert restored["a-never-used.md"].decode() == originals["a-never-used.md"]
    assert restored["b-recalled.md"].decode() == originals["b-recalled.md"]

    # refcount.json agrees with the database.
    refcount = json.loads((root.parent / "refcount.json").read_text())
    assert set(refcount) == {
        "warm/c-used-by-agent.md",
        "forgotten/d-late.md",
        "forgotten/e-marked-old.md",
    }
    c = refcount["warm/c-used-by-agent.md"]
    assert c["total"] == 12 and c["7d"] == 1 and c["summarized"] is False
    assert refcount["forgotten/e-marked-old.md"]["user_marked"] is True

    # Nothing is left to do at the end: organize is a fixpoint.
    again = organize.run(cfg, paths, store, end)
    assert again.data["actions"] == []

    # The graveyard copies themselves go after graveyard_days.
    later = organize.run(cfg, paths, store, T0 + 60 * DAY + 95 * DAY)
    assert later.data["graveyard_expired"] == ["2026-04.zip"]
    assert not archives[0].exists()


def test_dry_run_prints_the_plan_and_touches_nothing(env):
    cfg, paths, store, root = env
    write(root, "hot/x.md", "# X\nold\n", T0 - 20 * DAY)
    before = where(root)
    result = organize.run(cfg, paths, store, T0, dry_run=True)
    assert [a["op"] for a in result.data["actions"]] == ["move", "gist", "move", "move"]
    assert where(root) == before
    assert store.conn.execute("SELECT COUNT(*) FROM moves").fetchone()[0] == 0
    assert store.conn.execute("SELECT COUNT(*) FROM tier_files").fetchone()[0] == 0
    applied = organize.run(cfg, paths, store, T0)
    plan = [(a["op"], a["src"], a["dst"]) for a in result.data["actions"]]
    assert [(a["op"], a["src"], a["dst"]) for a in applied.data["actions"]] == plan


@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_a_tier_folder_that_is_no_folder_is_refused_by_the_dry_run_as_by_the_run(
    env, tmp_path, kind
):
    """``warm`` a symlink into a synced folder (or a file): the dry run said "0 notes, 0 to
    move" while the run refused it (after creating hot/). Both refuse it now, before
    anything is made, naming the folder."""
    cfg, paths, store, root = env
    elsewhere = tmp_path / "synced_warm"
    elsewhere.mkdir()
    write(elsewhere, "kayak.md", "# Kayak\n", T0 - 10 * DAY)
    root.mkdir(parents=True, exist_ok=True)  # (the tier store is the user's to make)
    for tier in ("hot", "gist", "forgotten", "warm"):
        with contextlib.suppress(FileNotFoundError):
            (root / tier).rmdir()
    if kind == "symlink":
        (root / "warm").symlink_to(elsewhere, target_is_directory=True)
    else:
        (root / "warm").write_text("not a folder")
    for dry_run in (True, False):
        with pytest.raises(OSError, match=r"warm: (a symlink|not a folder); memoryd will"):
            organize.run(cfg, paths, store, T0, dry_run=dry_run)
    assert sorted(p.name for p in root.iterdir()) == ["warm"]  # nothing made beside it
    assert (elsewhere / "kayak.md").is_file()


def test_deletion_disabled_keeps_forgotten_notes(env):
    cfg, paths, store, root = env
    write(root, "forgotten/x.md", "x", T0 - 100 * DAY)
    organize.run(cfg, paths, store, T0)
    off = cfg._replace(tiers=cfg.tiers._replace(delete_enabled=False))
    assert organize.run(off, paths, store, T0 + 31 * DAY).data["actions"] == []
    assert (root / "forgotten/x.md").exists()
    assert organize.run(cfg, paths, store, T0 + 31 * DAY).data["counts"]["delete"] == 1


def test_a_conflict_is_reported_and_both_files_kept(env):
    cfg, paths, store, root = env
    write(root, "hot/x.md", "one", T0 - 20 * DAY)
    write(root, "warm/x.md", "two", T0 - 20 * DAY)
    result = organize.run(cfg, paths, store, T0)
    assert [a["op"] for a in result.data["actions"]] == ["conflict"]
    assert (root / "hot/x.md").read_text() == "one" and (root / "warm/x.md").read_text() == "two"
    assert store.counters()["tiers_conflicts"] == 1


def test_a_failing_summarizer_falls_back_and_is_counted(env):
    cfg, paths, store, root = env
    write(root, "warm/x.md", "# X\n\nsomething to summarise.\n", T0 - 8 * DAY)
    bad = cfg._replace(tiers=cfg.tiers._replace(summarizer_command="false"))
    result = organize.run(bad, paths, store, T0)
    gist = next(a for a in result.data["actions"] if a["op"] == "gist")
    assert gist["status"] == "done" and gist["method"] == "extractive"
    assert (root / "gist/x.md").read_text().startswith("# X\n标签:")
    assert store.counters()["tiers_summarizer_failed"] == 1


def test_a_symlinked_note_is_never_followed_or_moved(env, tmp_path: Path):
    cfg, paths, store, root = env
    secret = tmp_path / "secret.md"
    secret.write_text("secret")
    (root / "hot").mkdir(parents=True)
    (root / "hot" / "link.md").symlink_to(secret)
    os.utime(secret, (T0 - 30 * DAY, T0 - 30 * DAY))
    result = organize.run(cfg, paths, store, T0)
    assert result.data["actions"] == []
    assert (root / "hot" / "link.md").is_symlink() and secret.read_text() == "secret"


def test_cli_organize_json_and_text(env):
    _cfg, paths, _store, root = env
    write(root, "hot/x.md", "# X\nbody\n", T0 - 4 * HOUR)
    environ = {**os.environ, "OPENCLAW_STATE_DIR": str(paths.state_dir), "MEMORYD_NOW": str(T0)}
    run = [sys.executable, "-m", "memoryd"]
    out = subprocess.run(
        [*run, "organize", "--dry-run", "--json"], env=environ, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["dry_run"] and doc["actions"][0]["reason"] == "mtime 4.0 h old > 3 h"
    out = subprocess.run([*run, "organize"], env=environ, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "move      hot/x.md → warm/x.md  (mtime 4.0 h old > 3 h)" in out.stdout
    assert (root / "warm/x.md").exists()
    out = subprocess.run([*run, "refresh", "--json"], env=environ, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["organize"]["actions"] == [] and "promote" in doc


def test_tier_notes_are_promoted_by_the_lifecycle_rules(env):
    from memoryd.jobs import promote

    cfg, paths, store, root = env
    write(root, "warm/x.md", "# Espresso\n我喜欢 1:2 的比例。\n", T0 - 2 * DAY)
    write(root, "warm/y.md", "# Other\nrarely used\n", T0 - 2 * DAY)
    for i in range(3):  # three hits in 7 days, one of them on the summary
        transcript_hit(store, "x.gist.md" if i == 0 else "x.md", T0 - i * DAY, i)
    organize.run(cfg, paths, store, T0)
    result = promote.run(cfg, paths, store, T0, apply=True)
    paths_nominated = [c["path"] for c in result.data["candidates"]]
    assert paths_nominated == ["tiers/x.md"]
    assert result.data["candidates"][0]["rules"] == ["3 hits in 7 days (≥ 3)"]
    organize.run(cfg, paths, store, T0 + 60)
    refcount = json.loads((root.parent / "refcount.json").read_text())
    assert refcount["warm/x.md"]["promoted"] is True
    assert refcount["warm/y.md"]["promoted"] is False
    # Never nominated twice.
    assert promote.run(cfg, paths, store, T0 + 120).data["candidates"] == []


def test_a_tier_folder_that_is_a_symlink_is_refused_with_a_clear_message(env, tmp_path: Path):
    _cfg, paths, _store, root = env
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.md").write_text("not ours")
    root.mkdir(parents=True)
    (root / "hot").symlink_to(elsewhere)
    environ = {**os.environ, "OPENCLAW_STATE_DIR": str(paths.state_dir), "MEMORYD_NOW": str(T0)}
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "organize"], env=environ, capture_output=True, text=True
    )
    assert out.returncode == 1
    assert "hot" in out.stderr and "symlink" in out.stderr and "Traceback" not in out.stderr
    assert (elsewhere / "x.md").read_text() == "not ours"


def test_organize_without_a_tier_store_creates_nothing(tmp_path):
    """The tier store is opt-in: the hourly job never creates it in the user's folders."""
    from memoryd.config import Config, OpenClawConfig, resolve_paths
    from memoryd.jobs import organize
    from memoryd.store import Store

    state = tmp_path / "state"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    cfg = Config(openclaw=OpenClawConfig(state_dir=str(state)))
    paths = resolve_paths(cfg, {})
    before = sorted(p.name for p in state.iterdir())
    with Store.open(tmp_path / "db" / "state.db") as store:
        result = organize.run(cfg, paths, store, 1_790_000_000.0)
    assert "no tier store" in result.summary and not result.changed
    assert sorted(p.name for p in state.iterdir()) == before


def test_a_forgotten_note_the_agent_reads_comes_back_marked_and_is_never_deleted(env):
    """Seed 004: a hit in forgotten/ (here from the agent's own searches) → warm/, marked."""
    cfg, paths, store, root = env
    write(root, "hot/f.md", "# Foxtrot\n\nfoxtrot details.\n", T0)
    for step in range(0, 50 * 4 + 1):  # every 6 hours for 50 days
        now = T0 + step * 6 * HOUR
        if step >= 20 * 4 and step % 4 == 0:  # from day 20 the agent reads it daily
            transcript_hit(store, "f.md", now, step)
        organize.run(cfg, paths, store, now + 120)
    final = where(root)
    assert final["f.md"][-1] in ("hot/f.md", "warm/f.md")
    rec = load_records(store)["f.md"]
    assert rec.user_marked and rec.tier in ("hot", "warm")
    assert not store.conn.execute("SELECT 1 FROM moves WHERE op = 'delete'").fetchall()


def test_a_new_note_with_an_old_notes_name_starts_fresh(env):
    """A deleted note's record must not age a new note that reuses its name."""
    cfg, paths, store, root = env
    write(root, "forgotten/checkpoint.md", "# old\n", T0)
    organize.run(cfg, paths, store, T0)
    organize.run(cfg, paths, store, T0 + 31 * DAY)  # deleted after 30 days in forgotten/
    assert "checkpoint.md" not in where(root)
    later = T0 + 60 * DAY
    write(root, "hot/checkpoint.md", "# new checkpoint\n", later)
    for hours in (1, 4, 12, 24):
        organize.run(cfg, paths, store, later + hours * HOUR)
    assert where(root)["checkpoint.md"] == ["warm/checkpoint.md"]
    assert load_records(store)["checkpoint.md"].created == later


@pytest.mark.parametrize("how", ["tiers/forgotten/x.md", "disk path", "tiers/x.md"])
def test_a_note_marked_by_the_path_a_person_sees_is_never_deleted(env, how):
    _cfg, paths, store, root = env
    store.close()
    f = write(root, "forgotten/x.md", "# X\n", T0 - 40 * DAY)
    write(root, "forgotten/x.gist.md", "# X\nsummary\n", T0 - 40 * DAY)
    environ = {**os.environ, "OPENCLAW_STATE_DIR": str(paths.state_dir)}
    run = [sys.executable, "-m", "memoryd"]

    def memoryd(*args: str, at: float) -> subprocess.CompletedProcess[str]:
        env_at = {**environ, "MEMORYD_NOW": str(at)}
        return subprocess.run([*run, *args], env=env_at, capture_output=True, text=True)

    assert memoryd("organize", at=T0).returncode == 0  # enters forgotten/ now
    target = str(f) if how == "disk path" else how
    out = memoryd("mark", target, at=T0)
    assert out.returncode == 0 and "marked tiers/x.md" in out.stdout, out.stderr
    assert memoryd("organize", at=T0 + 31 * DAY).returncode == 0
    assert f.exists(), "a marked note is never deleted"
    out = memoryd("unmark", target, at=T0 + 31 * DAY)
    assert out.returncode == 0 and "unmarked tiers/x.md" in out.stdout
    assert memoryd("organize", at=T0 + 32 * DAY).returncode == 0
    assert not f.exists()


def test_dry_runs_create_no_state_at_all(tmp_path):
    state = tmp_path / "state"
    write(state / "memory_fs", "hot/a.md", "# A\n", T0 - 5 * HOUR)
    environ = {**os.environ, "OPENCLAW_STATE_DIR": str(state), "MEMORYD_NOW": str(T0)}
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    for cmd in (["organize", "--dry-run"], ["refresh", "--dry-run", "--json"]):
        out = subprocess.run(
            [sys.executable, "-m", "memoryd", *cmd], env=environ, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
    assert "would" in out.stdout or '"dry_run": true' in out.stdout
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_a_rescued_note_is_marked_in_marks_and_unmark_alone_undoes_it(env):
    """The ``marks`` table is the one place a mark lives: organize's rescue writes there,
    ``memoryd unmark`` clears it there, and an old ``tier_files.user_marked`` means nothing."""
    cfg, paths, store, root = env
    write(root, "forgotten/f.md", "# Foxtrot\n\nfoxtrot details.\n", T0)
    organize.run(cfg, paths, store, T0)  # enters forgotten/ now
    transcript_hit(store, "f.md", T0 + DAY, 1)  # the agent reads it: it comes back, marked
    result = organize.run(cfg, paths, store, T0 + DAY + 60)
    assert [(a["src"], a["dst"]) for a in result.data["actions"]] == [
        ("forgotten/f.md", "warm/f.md")
    ]
    assert "tiers/f.md" in store.marks("marked")
    assert load_records(store)["f.md"].user_marked
    refcount = json.loads((root.parent / "refcount.json").read_text())
    assert refcount["warm/f.md"]["user_marked"] is True

    store.close()
    environ = {**os.environ, "OPENCLAW_STATE_DIR": str(paths.state_dir)}
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "unmark", "tiers/warm/f.md"],
        env={**environ, "MEMORYD_NOW": str(T0 + 2 * DAY)},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and "unmarked tiers/f.md" in out.stdout, out.stderr
    with Store.open(paths.db) as again:
        # a stale column value from before marks had one home is not a mark
        with again.transaction():
            again.conn.execute("UPDATE tier_files SET user_marked = 1 WHERE name = 'f.md'")
        assert not load_records(again)["f.md"].user_marked
        organize.run(cfg, paths, again, T0 + 2 * DAY)
    refcount = json.loads((root.parent / "refcount.json").read_text())
    assert refcount["warm/f.md"]["user_marked"] is False
