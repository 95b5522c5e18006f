"""`memoryd hits`, `scan --json` and `export hits-jsonl` as a user runs them (subprocesses)."""

from __future__ import annotations

import json
import os

import pytest

from support import transcripts as tx
from support.inprocess import memoryd as run_memoryd

DAY = 86400.0
NOW = tx.T0 + 40 * DAY
FILES = [
    "MEMORY.md",
    "memory/2026-01-10.md",
    "memory/topic.md",
    "memory/old.md",
    "memory/deep/x.md",
]


def memoryd(cfg, *args, now=NOW, check=True):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    env.update(MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(now))
    r = run_memoryd(args, env=env)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture
def install(tmp_path):
    sessions, ws, cfg = tx.make_install(tmp_path, FILES)
    lines = [tx.header("s1")]
    # memory/2026-01-10.md: hit 3 times recently; topic.md once recently, old.md 45 days ago
    plan = [
        ("a", ["memory/2026-01-10.md", "MEMORY.md"], NOW - 1 * DAY),
        ("b", ["memory/2026-01-10.md"], NOW - 2 * DAY),
        ("c", ["memory/2026-01-10.md", "memory/topic.md"], NOW - 3 * DAY),
        ("d", ["memory/old.md"], NOW - 45 * DAY),
    ]
    for cid, paths, ts in plan:
        lines.append(tx.call(cid, ts=ts - 1))
        lines.append(tx.result(cid, tx.search_payload(paths), ts=ts))
    (sessions / "s1.jsonl").write_bytes(b"".join(lines))
    return sessions, ws, cfg


def test_hits_json_is_one_document_covering_every_file(install):
    _, _, cfg = install
    doc = json.loads(memoryd(cfg, "hits", "--json").stdout)
    assert doc["window_days"] == 30
    files = {f["path"]: f for f in doc["files"]}
    assert {p: f["hits"] for p, f in files.items()} == {
        "memory/2026-01-10.md": 3,
        "MEMORY.md": 1,
        "memory/topic.md": 1,
        "memory/old.md": 0,  # hit, but not in the window
    }
    assert doc["files"][0]["path"] == "memory/2026-01-10.md"
    assert doc["never_hit"] == ["memory/deep/x.md"]
    assert set(files) | set(doc["never_hit"]) == set(FILES)
    assert not set(files) & set(doc["never_hit"])
    assert files["memory/old.md"]["last_hit"] == tx.iso(NOW - 45 * DAY)[:19] + "Z"


def test_hits_all_time_and_top(install):
    _, _, cfg = install
    doc = json.loads(memoryd(cfg, "hits", "--all", "--json").stdout)
    assert doc["window_days"] is None
    assert {f["path"]: f["hits"] for f in doc["files"]}["memory/old.md"] == 1
    top = json.loads(memoryd(cfg, "hits", "--all", "--top", "1", "--json").stdout)
    assert [f["path"] for f in top["files"]] == ["memory/2026-01-10.md"]
    assert top["never_hit"] == ["memory/deep/x.md"]


def test_hits_text_report(install):
    _, _, cfg = install
    out = memoryd(cfg, "hits", "--days", "7").stdout
    assert "last 7 days" in out
    first = next(ln for ln in out.splitlines() if ln.strip().endswith(".md"))
    assert first.split()[0] == "3" and first.endswith("memory/2026-01-10.md")
    assert "never hit (1 of 5 files)" in out


def test_scan_json_reports_what_it_did(install):
    _, _, cfg = install
    first = json.loads(memoryd(cfg, "scan", "--json").stdout)
    assert first["new_hits"] == 6 and first["files_read"] == 1 and first["malformed"] == 0
    again = json.loads(memoryd(cfg, "scan", "--json").stdout)
    assert again["new_hits"] == 0 and again["files_read"] == 0 and again["bytes_read"] == 0


def test_export_is_append_only_and_resumable(install, tmp_path):
    sessions, _, cfg = install
    target = tmp_path / "hit_counts.jsonl"
    assert "appended 6 hits" in memoryd(cfg, "export", "hits-jsonl", str(target)).stdout
    records = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(records) == 6 and {r["file"] for r in records} >= {"memory/old.md", "MEMORY.md"}
    assert "appended 0 hits" in memoryd(cfg, "export", "hits-jsonl", str(target)).stdout
    # a torn last record (crash mid-write) is cut and written again whole
    with open(target, "ab") as fh:
        fh.write(b'{"id": 99, "ts": "2026-')
    with open(sessions / "s1.jsonl", "ab") as fh:
        fh.write(
            tx.call("e", ts=NOW - 10)
            + tx.result("e", tx.search_payload(["memory/topic.md"]), ts=NOW)
        )
    assert "appended 1 hit " in memoryd(cfg, "export", "hits-jsonl", str(target)).stdout
    lines = target.read_text().splitlines()
    assert len(lines) == 7 and all(json.loads(line)["id"] for line in lines)
    assert [json.loads(line)["id"] for line in lines] == sorted(
        json.loads(line)["id"] for line in lines
    )


def test_demo_runs_without_openclaw(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    env["HOME"] = str(tmp_path / "home")
    r = run_memoryd(["demo", str(tmp_path / "demo")], env=env)
    assert r.returncode == 0, r.stderr
    assert "new hits" in r.stdout and "memory hits, last 30 days" in r.stdout
    assert "memoryd scan" in r.stdout and "OPENCLAW_STATE_DIR" in r.stdout
    assert not (tmp_path / "home").exists()


def test_hits_and_explain_count_future_dated_hits_alike(tmp_path):
    """One hit count: a hit dated up to a day after now counts as now, a later one not yet,
    and ``hits`` says what ``explain`` says (they once counted such hits differently)."""
    sessions, _, cfg = tx.make_install(tmp_path, FILES)
    lines = [tx.header("s1")]
    plan = [
        ("a", ["memory/topic.md", "MEMORY.md"], NOW - 2 * DAY),
        ("b", ["memory/topic.md"], NOW + 0.5 * DAY),  # another clock: within the allowance
        ("c", ["memory/topic.md", "memory/old.md"], NOW + 3 * DAY),  # beyond it: not yet
        ("d", ["memory/old.md"], NOW - 40 * DAY),
    ]
    for cid, paths, ts in plan:
        lines.append(tx.call(cid, ts=ts - 1))
        lines.append(tx.result(cid, tx.search_payload(paths), ts=ts))
    (sessions / "s1.jsonl").write_bytes(b"".join(lines))

    window = json.loads(memoryd(cfg, "hits", "--json").stdout)
    ever = json.loads(memoryd(cfg, "hits", "--all", "--json", "--no-scan").stdout)
    from_hits = {
        f["path"]: {"hits_30d": f["hits"], "last_hit": f["last_hit"]} for f in window["files"]
    }
    for f in ever["files"]:
        from_hits.setdefault(f["path"], {"hits_30d": 0, "last_hit": f["last_hit"]})
        from_hits[f["path"]]["hits_total"] = f["hits"]
    from_explain = {}
    for path in FILES:
        sig = json.loads(memoryd(cfg, "explain", "--no-scan", "--json", path).stdout)["signals"]
        if sig["hits_total"]:
            from_explain[path] = {k: sig[k] for k in ("hits_30d", "hits_total", "last_hit")}
    assert from_hits == from_explain
    assert (
        from_hits["memory/topic.md"]
        == {
            "hits_30d": 2,  # NOW - 2 days, and the one half a day ahead (counted as now)
            "hits_total": 2,
            "last_hit": tx.iso(NOW)[:19] + "Z",
        }
    )
    assert from_hits["memory/old.md"]["hits_total"] == 1  # the one 3 days ahead is not yet
    assert ever["never_hit"] == ["memory/2026-01-10.md", "memory/deep/x.md"]


def test_hits_all_keeps_an_archived_notes_history_marked_archived(install):
    """``hits --all`` once dropped a note expire had archived: its hits looked lost next to
    ``status``'s total. It is shown, marked, with its history; the window view (the notes
    a user can act on) still lists only the notes in the workspace."""
    from memoryd.config import load_config, resolve_paths
    from memoryd.mover import mover_for
    from memoryd.store import Store

    _, ws, cfg = install
    memoryd(cfg, "scan")
    paths = resolve_paths(load_config(str(cfg)), {})
    with Store.open(paths.db) as store:
        mover_for(store, paths).move(
            ws / "memory/old.md", ws / "memory-archive/old.md", reason="test", batch="expire:t"
        )
    doc = json.loads(memoryd(cfg, "hits", "--all", "--json").stdout)
    files = {f["path"]: f for f in doc["files"]}
    assert files["memory/old.md"]["hits"] == 1 and files["memory/old.md"]["archived"] is True
    assert "archived" not in files["memory/topic.md"]
    status = json.loads(memoryd(cfg, "status", "--json", check=False).stdout)
    assert sum(f["hits"] for f in doc["files"]) == status["hits"]["total"]
    text = memoryd(cfg, "hits", "--all").stdout
    assert any(line.endswith("memory/old.md  (archived)") for line in text.splitlines())
    assert "6 hits on 4 of" in text
    window = json.loads(memoryd(cfg, "hits", "--json").stdout)
    assert "memory/old.md" not in {f["path"] for f in window["files"]}
