"""Lifecycle commands end to end: real workspaces, real database, ``python -m memoryd``."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memoryd.store import Store
from support.inprocess import memoryd as run_memoryd

NOW = datetime(2026, 11, 3, 10, 0, tzinfo=UTC)
NOW_TS = NOW.timestamp()
DAY = 86400.0


class Install:
    """A throw-away OpenClaw state dir with a workspace and memoryd's database."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "oc"
        self.ws = self.state / "workspace"
        (self.ws / "memory").mkdir(parents=True)
        (self.state / "agents" / "main" / "sessions").mkdir(parents=True)
        self.db = self.state / "memoryd" / "state.db"
        self.config: Path | None = None

    def seed_policy(self) -> None:
        """Decide with seed 000's rule (``[expire] policy = "seed"``): the tests that check
        the rule's own numbers (30 days, at most 2 hits) pin it; the default policy is
        chosen by replay and tested in test_simulate.py."""
        self.config = self.root / "memoryd.toml"
        self.config.write_text('[expire]\npolicy = "seed"\n')

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
        env.update(
            HOME=str(self.root),
            OPENCLAW_STATE_DIR=str(self.state),
            MEMORYD_NOW=NOW.isoformat(),
        )
        if self.config is not None:
            env["MEMORYD_CONFIG"] = str(self.config)
        return env

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = run_memoryd(args, env=self.env())
        if check and proc.returncode != 0:
            raise AssertionError(f"memoryd {args} → {proc.returncode}\n{proc.stderr}")
        return proc

    def json(self, *args: str) -> dict:
        return json.loads(self.run(*args, "--json").stdout)

    def write(self, rel: str, text: str, mtime: float | None = None) -> None:
        p = self.ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        if mtime is not None:
            os.utime(p, (mtime, mtime))

    def hits(self, rows: list[tuple[str, float, str]]) -> None:
        """(memory_path, ts, query) rows, each its own search call."""
        with Store.open(self.db) as store, store.transaction():
            n = store.conn.execute("SELECT COUNT(*) FROM hits").fetchone()[0]
            store.conn.executemany(
                "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query) "
                "VALUES ('main', ?, ?, 'search', ?, ?)",
                [(f"call-{n + i}", p, ts, q) for i, (p, ts, q) in enumerate(rows)],
            )

    def tree(self, under: Path | None = None) -> dict[str, str]:
        base = under or self.ws
        out = {}
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                p = Path(dirpath) / name
                if p.is_symlink():
                    out[p.relative_to(base).as_posix()] = "link:" + os.readlink(p)
                else:
                    out[p.relative_to(base).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
        return out


@pytest.fixture
def inst(tmp_path: Path) -> Install:
    return Install(tmp_path)


def _random_workspace(inst: Install, seed: int) -> dict[str, bool]:
    """Files and hits from a seeded generator; returns path → archived-by-the-rule."""
    rng = random.Random(seed)
    expected: dict[str, bool] = {}
    inst.write("MEMORY.md", "# 长期记忆\n偏好：深烘焙\n", NOW_TS - 200 * DAY)
    expected["MEMORY.md"] = False
    rows = []
    for i in range(60):
        age = rng.uniform(0, 120)
        when = NOW - timedelta(days=age)
        style = rng.choice(["daily", "slug", "topic", "nested", "cjk"])
        if style == "daily":
            rel = f"memory/{when.date().isoformat()}.md"
        elif style == "slug":
            rel = f"memory/{when.date().isoformat()}-trip-{i}.md"
        elif style == "topic":
            rel = f"memory/topic-{i}.md"
        elif style == "nested":
            rel = f"memory/projects/p{i % 3}/note-{i}.md"
        else:
            rel = f"memory/咖啡笔记-{i}.md"
        if rel in expected:
            continue
        inst.write(rel, f"# note {i}\n" + "x" * rng.randint(0, 400), when.timestamp())
        created = (
            datetime(when.year, when.month, when.day, tzinfo=UTC)
            if style in ("daily", "slug")
            else when
        )
        recent = 0
        for _ in range(rng.choice([0, 0, 1, 2, 3, 5])):
            hit_age = rng.uniform(0, 60) * DAY
            rows.append((rel, NOW_TS - hit_age, rng.choice(["boat", "咖啡", "router"])))
            recent += hit_age <= 30 * DAY
        expected[rel] = NOW - created > timedelta(days=30) and recent <= 2
    inst.hits(rows)
    return expected


def test_expire_plans_the_rule_moves_exactly_it_and_restore_undoes_it(inst: Install) -> None:
    inst.seed_policy()
    expected = _random_workspace(inst, seed=3)
    before = inst.tree()
    plan = inst.json("expire", "--dry-run")

    # The dry run: exactly the rule, nothing changed.
    assert {a["path"] for a in plan["archive"]} == {p for p, arch in expected.items() if arch}
    assert {k["path"] for k in plan["keep"]} == {p for p, arch in expected.items() if not arch}
    assert all(a["to"].startswith("memory-archive/2026-11/memory/") for a in plan["archive"])
    assert inst.tree() == before
    assert inst.json("expire")["archive"] == plan["archive"]  # the default is a dry run

    # --force performs exactly that plan, byte-identical, out of memory/.
    done = inst.json("expire", "--force")
    assert [(a["path"], a["to"]) for a in done["archive"]] == [
        (a["path"], a["to"]) for a in plan["archive"]
    ]
    after = inst.tree()
    moved = {a["path"]: a["to"] for a in plan["archive"]}
    expected_tree = {moved.get(p, p): digest for p, digest in before.items()}
    assert after == expected_tree
    assert not any(p.startswith("memory/") for p in after if p not in before)

    # A second run plans nothing and changes nothing.
    assert inst.json("expire", "--dry-run")["archive"] == []
    assert inst.json("expire", "--force")["archive"] == []
    assert inst.tree() == after

    # restore --last brings every file back.
    restored = inst.json("restore", "--last")
    assert len(restored["restored"]) == len(moved) and restored["errors"] == []
    assert {p: d for p, d in inst.tree().items()} == before
    with Store.open(inst.db) as store:
        assert store.job_done("expire", "2026-11")


def test_seed_layout_inside_memory_is_excluded_from_the_next_plan(inst: Install) -> None:
    inst.config = inst.root / "memoryd.toml"
    inst.config.write_text('[archive]\ndir = "memory/archive-{month}"\n')
    inst.write("memory/2026-08-01.md", "old", NOW_TS - 90 * DAY)
    inst.write("memory/projects/x.md", "old topic", NOW_TS - 90 * DAY)
    done = inst.json("expire", "--force")
    assert sorted(a["to"] for a in done["archive"]) == [
        "memory/archive-2026-11/2026-08-01.md",
        "memory/archive-2026-11/projects/x.md",
    ]
    assert (inst.ws / "memory/archive-2026-11/projects/x.md").read_text() == "old topic"
    assert inst.json("expire", "--dry-run")["archive"] == []


def test_a_taken_archive_name_gets_a_suffix_in_the_plan(inst: Install) -> None:
    inst.write("memory/2026-08-01.md", "new content", NOW_TS - 90 * DAY)
    inst.write("memory-archive/2026-11/memory/2026-08-01.md", "archived before", None)
    plan = inst.json("expire", "--dry-run")
    assert plan["archive"][0]["to"] == "memory-archive/2026-11/memory/2026-08-01~2.md"
    inst.run("expire", "--force")
    assert (inst.ws / "memory-archive/2026-11/memory/2026-08-01.md").read_text() == (
        "archived before"
    )
    assert (inst.ws / "memory-archive/2026-11/memory/2026-08-01~2.md").read_text() == "new content"


def test_symlinks_and_hostile_hit_paths_never_reach_outside(inst: Install) -> None:
    outside = inst.root / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    (outside / "2026-01-01.md").write_text("outside daily")
    os.utime(outside / "secret.md", (NOW_TS - 300 * DAY,) * 2)
    (inst.ws / "memory" / "2026-01-02.md").symlink_to(outside / "secret.md")
    (inst.ws / "memory" / "linked").symlink_to(outside, target_is_directory=True)
    inst.write("memory/2026-01-03.md", "a real old note", NOW_TS - 300 * DAY)
    inst.hits(
        [
            ("../outside/secret.md", NOW_TS - DAY, "x"),
            ("/etc/passwd", NOW_TS - DAY, "x"),
            ("memory/../../outside/secret.md", NOW_TS - DAY, "x"),
            ("memory/linked/2026-01-01.md", NOW_TS - DAY, "x"),
        ]
    )
    outside_before = inst.tree(outside)

    plan = inst.json("expire", "--force")
    assert [a["path"] for a in plan["archive"]] == ["memory/2026-01-03.md"]
    assert inst.tree(outside) == outside_before
    assert (inst.ws / "memory" / "2026-01-02.md").is_symlink()  # left alone, not followed
    for cmd in (("reflect",), ("promote", "--apply"), ("search", "secret")):
        inst.run(*cmd)
    for hostile in ("../outside/secret.md", "/etc/passwd", str(outside / "secret.md")):
        proc = inst.run("explain", hostile, check=False)
        assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr
        proc = inst.run("mark", hostile, check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        proc = inst.run("restore", hostile, check=False)
        assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr
    assert inst.tree(outside) == outside_before
    assert not list((inst.state / "memoryd" / "reports").glob("*secret*"))


def test_marks_and_pins_protect_and_explain_gives_the_numbers(inst: Install) -> None:
    inst.seed_policy()
    for name in ("2026-08-01", "2026-08-02", "2026-08-03"):
        inst.write(f"memory/{name}.md", name, NOW_TS - 90 * DAY)
    inst.hits([("memory/2026-08-03.md", NOW_TS - k * DAY - 60, "boat trip") for k in (1, 2)])
    inst.run("mark", "memory/2026-08-01.md")
    inst.run("pin", "memory/2026-08-02*")
    assert "memory/2026-08-02*" in inst.run("pin").stdout

    plan = inst.json("expire", "--dry-run")
    assert [a["path"] for a in plan["archive"]] == ["memory/2026-08-03.md"]
    rules = {k["path"]: k["rule"] for k in plan["keep"]}
    assert rules == {"memory/2026-08-01.md": "marked", "memory/2026-08-02.md": "pinned"}

    doc = inst.json("explain", "memory/2026-08-03.md")
    sig = doc["signals"]
    assert (sig["hits_7d"], sig["hits_30d"], sig["hits_total"]) == (2, 2, 2)
    assert sig["created"] == "2026-08-03T00:00:00Z" and sig["created_from"] == "name"
    assert doc["expire"]["action"] == "archive" and doc["expire"]["numbers"]["hits_window"] == 2
    assert doc["score"]["query"] == "boat trip"
    words = inst.run("explain", str(inst.ws / "memory" / "2026-08-03.md")).stdout
    assert "expire: ARCHIVE — 92 days old and 2 hits in the last 30 days (at most 2)" in words
    assert "recall strength" in words and "score:" in words and "promote:" in words

    inst.run("unmark", "memory/2026-08-01.md")
    inst.run("unpin", "memory/2026-08-02*")
    assert len(inst.json("expire", "--dry-run")["archive"]) == 3


def test_restore_by_original_or_archived_path(inst: Install) -> None:
    inst.write("memory/2026-08-01.md", "one", NOW_TS - 90 * DAY)
    inst.write("memory/2026-08-02.md", "two", NOW_TS - 90 * DAY)
    inst.run("expire", "--force")
    assert not (inst.ws / "memory/2026-08-01.md").exists()
    inst.run("restore", "memory/2026-08-01.md")
    inst.run("restore", "memory-archive/2026-11/memory/2026-08-02.md")
    assert (inst.ws / "memory/2026-08-01.md").read_text() == "one"
    assert (inst.ws / "memory/2026-08-02.md").read_text() == "two"
    # Back already: said where it is, nothing moved, exit 0 (issue 30: restore means "back").
    again = inst.run("restore", "memory/2026-08-01.md", check=False)
    assert again.returncode == 0 and again.stderr == ""
    assert again.stdout.startswith("memory/2026-08-01.md: already back at memory/2026-08-01.md")
    never = inst.run("restore", "memory/2026-08-09.md", check=False)
    assert never.returncode == 2 and "no journaled move" in never.stderr
    assert never.stdout == "", "errors go to stderr, not into what a script reads"
    # Restored: nothing at the archived path now, and no move of it in force (exit 2).
    explained = inst.run("explain", "memory-archive/2026-11/memory/2026-08-02.md", check=False)
    assert explained.returncode == 2 and "no such file" in explained.stderr


def _table_ok(markdown: str) -> None:
    """Every table row has as many cells as its header (pipes in cells escaped)."""
    width = None
    for line in markdown.splitlines():
        if line.startswith("|"):
            cells = len(line.replace("\\|", "").strip().strip("|").split("|"))
            if width is None:
                width = cells
            assert cells == width, line
        else:
            width = None


def test_reports_land_under_the_state_dir_and_read_cleanly(inst: Install) -> None:
    inst.seed_policy()
    inst.write("memory/espresso.md", "---\ntags: [coffee]\n---\n1. grind\n2. tamp\n3. pull\n")
    inst.write("memory/odd|name.md", "a | pipe", NOW_TS - 50 * DAY)
    inst.write("memory/2026-10-30.md", "boat day")
    rows = [("memory/espresso.md", NOW_TS - k * DAY / 2, "espresso recipe") for k in range(1, 6)]
    inst.hits(rows)
    with Store.open(inst.db) as store, store.transaction():  # one search returning two files
        store.conn.execute(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query) VALUES "
            "('main', 'together', 'memory/2026-10-30.md', 'search', ?, 'boat'), "
            "('main', 'together', 'memory/espresso.md', 'search', ?, 'boat')",
            (NOW_TS - 3600, NOW_TS - 3600),
        )
    before = inst.tree()
    doc = inst.json("reflect")
    report = Path(doc["report"])
    assert report == inst.state / "memoryd" / "reports" / "reflect-2026-11-03.md"
    assert inst.tree() == before  # nothing written into the workspace
    md = report.read_text()
    _table_ok(md)
    assert "`memory/espresso.md`" in md and "odd\\|name" in md
    assert doc["top"][0]["path"] == "memory/espresso.md"
    assert doc["together"] == [
        {"a": "memory/2026-10-30.md", "b": "memory/espresso.md", "together": 1}
    ]
    assert {"memory/odd|name.md"} <= {r["path"] for r in doc["never_hit"]}
    assert doc["expire_next"]["archive"][0]["path"] == "memory/odd|name.md"
    assert json.loads(report.with_suffix(".json").read_text())["files"] == 3

    promo = inst.json("promote")
    assert [c["path"] for c in promo["candidates"]] == ["memory/espresso.md"]
    assert promo["candidates"][0]["category"] == "skill" and promo["applied"] is False
    assert (inst.state / "memoryd" / "reports" / "promote_report.md").is_file()
    assert inst.json("promote", "--apply")["applied"] is True
    assert inst.json("promote")["candidates"] == []  # never nominated twice

    found = inst.json("search", "espresso grind", "--top", "2")
    assert found["results"][0]["path"] == "memory/espresso.md"
    assert set(found["results"][0]) >= {"keyword", "time", "access", "tag", "score"}
    assert len(found["results"]) == 1  # only the files the words are in (issue 32)


def test_bad_usage_is_exit_2_with_a_message(inst: Install) -> None:
    proc = inst.run("restore", check=False)
    assert proc.returncode == 2 and "PATH" in proc.stderr
    proc = inst.run("mark", "notes/elsewhere.txt", check=False)
    assert proc.returncode == 2 and "not a memory file" in proc.stderr
    proc = inst.run("mark", "memory/missing.md", check=False)
    assert proc.returncode == 2 and "no such file" in proc.stderr
