"""``memoryd sections MEMORY.md`` end to end: transcripts in the shapes OpenClaw 2026.9.6 writes
(search results with ``startLine``/``endLine``/``snippet``/``citation``, ``memory_get`` with
``from``/``lines``), scanned for real into a real state database, then an edit that moves lines
between two searches and a dreaming-style append: every section's hits exact, the hit's text
stored once with it, and the sections OpenClaw's bootstrap cut drops marked."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from memoryd.bootstrap_cut import bootstrap_cuts, js_trim_end, kept_ranges
from support import transcripts as tx
from support.inprocess import memoryd as run_memoryd

pytestmark = pytest.mark.subprocess

NOW = 1_796_000_000.0  # 2026-11-30
DAY = 86400.0


def _memory_md(order: list[int], extra_top: str = "") -> str:
    """A MEMORY.md of 16 topics of about 2,700 characters each (over 40,000 in all)."""
    out = ["# Long-term memory", "", *([extra_top, ""] if extra_top else [])]
    for i in order:
        out.append(f"## Topic {i}")
        out += [f"- fact {i}.{j}: {'detail ' * 40}{i * 100 + j}" for j in range(9)]
        out.append("")
    return "\n".join(out)


def _lines_of(text: str, heading: str) -> tuple[int, int]:
    lines = text.split("\n")
    first = lines.index(heading) + 1
    last = first
    while last < len(lines) and not lines[last].startswith("#"):
        last += 1
    return first, last


def _search_result(text: str, chunks: list[tuple[int, int]]) -> dict:
    results = []
    for first, last in chunks:
        body = "\n".join(text.split("\n")[first - 1 : last])
        results.append({
            "path": "MEMORY.md", "startLine": first, "endLine": last, "score": 0.6,
            "textScore": 0.6, "snippet": f"{body}\n\nSource: MEMORY.md#L{first}-L{last}",
            "source": "memory", "provenance": {"originClass": "agent"}, "corpus": "memory",
            "citation": f"MEMORY.md#L{first}-L{last}",
        })  # fmt: skip
    return {"results": results, "provider": "none", "citations": "auto"}


def _get_result(text: str, first: int, count: int) -> dict:
    body = "\n".join(text.split("\n")[first - 1 : first - 1 + count])
    return {"status": "ok", "text": body, "path": "MEMORY.md", "from": first, "lines": count}


@pytest.fixture
def install(tmp_path: Path):
    sessions, ws, cfg = tx.make_install(tmp_path, [])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))
    return sessions, ws, env, tmp_path


def _sections(env: dict[str, str]) -> dict:
    proc = run_memoryd(["sections", "MEMORY.md", "--json"], env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _by_heading(doc: dict) -> dict[str, dict]:
    return {s["heading"]: s for s in doc["sections"]}


def test_hits_per_section_survive_an_edit_that_moves_lines(install):
    sessions, ws, env, root = install
    v1 = _memory_md(list(range(16)))
    (ws / "MEMORY.md").write_text(v1, encoding="utf-8")
    t1 = NOW - 40 * DAY
    lines = [tx.header("s1", t1)]
    # one search returns two chunks of MEMORY.md (topics 2 and 5), one returns topic 9
    lines += [tx.call("c1", query="two and five", ts=t1)]
    lines += [tx.result("c1", _search_result(v1, [_lines_of(v1, "## Topic 2"),
                                                  _lines_of(v1, "## Topic 5")]),
                        ts=t1 + 1, details="same")]  # fmt: skip
    lines += [tx.call("c2", query="nine", ts=t1 + 10)]
    lines += [tx.result("c2", _search_result(v1, [_lines_of(v1, "## Topic 9")]), ts=t1 + 11,
                        details="same")]  # fmt: skip
    # a memory_get of three lines of topic 14
    first14, _ = _lines_of(v1, "## Topic 14")
    lines += [tx.call("g1", tool="memory_get", path="MEMORY.md", ts=t1 + 20)]
    lines += [tx.result("g1", _get_result(v1, first14 + 1, 3), ts=t1 + 21, tool="memory_get",
                        details="same")]  # fmt: skip
    (sessions / "s1.jsonl").write_bytes(b"".join(lines))
    doc = _sections(env)
    got = {h: s["hits_total"] for h, s in _by_heading(doc).items() if s["hits_total"]}
    assert got == {"Topic 2": 1, "Topic 5": 1, "Topic 9": 1, "Topic 14": 1}
    # (c1's two chunks are one hit of the file, credited to both sections)
    assert doc["hits"]["total"] == 3 and doc["hits"]["unplaced"] == 0

    # The user (or OpenClaw) rewrites MEMORY.md: topics reordered, a note added at the top;
    # then a search of topic 2 in the new file and a dreaming-style append.
    order = [9, 14, 0, 1, 3, 4, 6, 7, 8, 10, 11, 12, 13, 15, 5, 2]
    v2 = _memory_md(order, extra_top="- a new first note, written since")
    v2 += "\n## Light Sleep\n- promoted by dreaming: something new\n"
    (ws / "MEMORY.md").write_text(v2, encoding="utf-8")
    t2 = NOW - 5 * DAY
    more = [tx.call("c3", query="two again", ts=t2)]
    more += [tx.result("c3", _search_result(v2, [_lines_of(v2, "## Topic 2")]), ts=t2 + 1,
                       details="same")]  # fmt: skip
    with (sessions / "s1.jsonl").open("ab") as fh:
        fh.write(b"".join(more))
    doc = _sections(env)
    secs = _by_heading(doc)
    got = {h: s["hits_total"] for h, s in secs.items() if s["hits_total"]}
    assert got == {"Topic 2": 2, "Topic 5": 1, "Topic 9": 1, "Topic 14": 1}
    assert secs["Topic 2"]["hits_30d"] == 1 and secs["Topic 2"]["hits_90d"] == 2
    assert secs["Topic 2"]["last_hit"] == "2026-11-25T00:53:21Z"
    assert secs["Light Sleep"]["label"] == "never looked up"
    # a scan again reads nothing twice: the hit's text is stored with it, once
    doc_again = _sections(env)
    assert doc_again["sections"] == doc["sections"]
    db = sqlite3.connect(root / "md" / "state.db")
    anchors = db.execute("SELECT call_id, anchor FROM hits ORDER BY call_id").fetchall()
    assert [c for c, _ in anchors] == ["c1", "c2", "c3", "g1"]
    assert anchors[0][1].count(";") == 1  # the two chunks of c1, each with its own text
    assert all(a and ":" in a for _, a in anchors)


def test_the_sections_openclaw_cuts_are_marked_and_those_never_looked_up_told_apart(install):
    sessions, ws, env, _ = install
    text = _memory_md(list(range(16)))
    assert len(text) > 20_000
    (ws / "MEMORY.md").write_text(text, encoding="utf-8")
    (ws / "AGENTS.md").write_text("# Agents\n- be kind\n", encoding="utf-8")
    t1 = NOW - 2 * DAY
    lines = [tx.header("s1", t1), tx.call("c1", query="seven", ts=t1)]
    lines += [tx.result("c1", _search_result(text, [_lines_of(text, "## Topic 7")]), ts=t1 + 1,
                        details="same")]  # fmt: skip
    (sessions / "s1.jsonl").write_bytes(b"".join(lines))
    doc = _sections(env)
    boot = doc["bootstrap"]
    assert boot["bootstrapMaxChars"] == 20_000 and boot["bootstrapTotalMaxChars"] == 60_000
    # the cut, as computed from the files (checked against OpenClaw's own code elsewhere)
    cut = bootstrap_cuts({"AGENTS.md": (ws / "AGENTS.md").read_text(), "MEMORY.md": text})
    ranges = kept_ranges(js_trim_end(text), cut["MEMORY.md"])
    assert boot["loaded_ranges"] == [list(r) for r in ranges] and len(ranges) == 2
    for s in doc["sections"]:
        start, end = s["start"], s["start"] + s["chars"]
        inside = sum(max(0, min(end, b) - max(start, a)) for a, b in ranges)
        want = "loaded" if inside >= min(end, boot["length"]) - start else (
            "cut" if inside == 0 else "partly cut")
        assert s["bootstrap"] == want, s["title"]
        if s["hits_total"]:
            assert s["label"] is None
        elif want == "cut":
            assert s["label"] == "never looked up, and not in the loaded part"
        else:
            assert s["label"] == "never looked up"
    secs = _by_heading(doc)
    assert secs["Topic 7"]["bootstrap"] == "cut" and secs["Topic 7"]["label"] is None
    assert secs["Topic 0"]["bootstrap"] == "loaded" and secs["Topic 15"]["bootstrap"] == "loaded"
    assert sum(s["bootstrap"] == "cut" for s in doc["sections"]) >= 2
    proc = run_memoryd(["sections", "MEMORY.md", "--no-scan"], env=env)
    assert proc.returncode == 0
    assert "never looked up, and not in the loaded part" in proc.stdout
    assert "never looked up: the agent has never seen them" in proc.stdout


def test_a_limit_from_openclaw_json_moves_the_cut_and_a_note_is_not_a_bootstrap_file(install):
    _, ws, env, root = install
    state = root / "state"
    (state / "openclaw.json").write_text(
        json.dumps({"agents": {"defaults": {"bootstrapMaxChars": 5000, "workspace": str(ws)}}}),
        encoding="utf-8",
    )
    (ws / "MEMORY.md").write_text(_memory_md([0, 1, 2, 3, 4, 5]), encoding="utf-8")
    (ws / "memory").mkdir()
    (ws / "memory" / "notes.md").write_text("# Notes\n- one\n## Two\n- two\n", encoding="utf-8")
    doc = _sections(env)
    assert doc["bootstrap"]["bootstrapMaxChars"] == 5000
    assert doc["bootstrap"]["head"] + doc["bootstrap"]["tail"] < 5000
    proc = run_memoryd(["sections", "memory/notes.md", "--json", "--no-scan"], env=env)
    note = json.loads(proc.stdout)
    assert note["bootstrap"] is None and [s["title"] for s in note["sections"]] == [
        "# Notes", "## Two"]  # fmt: skip
    assert all(s["label"] == "never looked up" for s in note["sections"])
    bad = run_memoryd(["sections", "memory/missing.md", "--no-scan"], env=env)
    assert bad.returncode == 2 and "no such file" in bad.stderr


def test_sections_without_a_scan_reads_a_state_database_from_before_anchors(install):
    """`--no-scan` opens the state database read-only, so one from before migration 11 stays
    unmigrated: its hits are placed by their line ranges, as hits counted before anchors are,
    and the command still answers."""
    sessions, ws, env, root = install
    v1 = _memory_md(list(range(4)))
    (ws / "MEMORY.md").write_text(v1, encoding="utf-8")
    t1 = NOW - 3 * DAY
    lines = [tx.header("s1", t1), tx.call("c1", query="two", ts=t1)]
    lines += [tx.result("c1", _search_result(v1, [_lines_of(v1, "## Topic 2")]), ts=t1 + 1,
                        details="same")]  # fmt: skip
    (sessions / "s1.jsonl").write_bytes(b"".join(lines))
    assert run_memoryd(["scan"], env=env).returncode == 0
    db = sqlite3.connect(root / "md" / "state.db")
    db.execute("DROP INDEX IF EXISTS hits_by_path_anchor")  # (migration 13's)
    db.execute("ALTER TABLE hits DROP COLUMN anchor")  # as the database was before it
    db.execute("PRAGMA user_version = 10")
    db.commit()
    db.close()
    proc = run_memoryd(["sections", "MEMORY.md", "--json", "--no-scan"], env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert {h: s["hits_total"] for h, s in _by_heading(doc).items() if s["hits_total"]} == {
        "Topic 2": 1
    }


def test_sections_and_retire_give_one_length_for_memory_md(install):
    """The length ``sections`` prints is the one ``retire`` holds to the budget: the text
    OpenClaw's bootstrap counts, its trailing blank lines not in it (they once differed by
    the final newline, and a person comparing the two could not tell which was right)."""
    _, ws, env, _ = install
    text = _memory_md([1, 2, 3]) + "\n\n  \n"
    (ws / "MEMORY.md").write_text(text, encoding="utf-8")
    assert _sections(env)["chars"] == len(text.rstrip())
    proc = run_memoryd(["retire", "--dry-run"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"MEMORY.md: {len(text.rstrip()):,} characters, budget" in proc.stdout
    plain = run_memoryd(["sections", "MEMORY.md", "--no-scan"], env=env).stdout
    assert f"{len(text.rstrip()):,} characters;" in plain


def test_a_memory_md_over_openclaws_read_bound_is_not_loaded_and_the_files_before_it_count_so(
    install,
):
    """OpenClaw 2026.9.6 reads no bootstrap file over 2 MiB: a session gets one
    ``[UNREADABLE: …]`` line in its place (dist/workspace-bootstrap-read-*.mjs). ``sections``
    said such a MEMORY.md's first 15,000 characters were loaded; and an AGENTS.md over the
    bound took its whole 20,000 of the total budget, not the line's 40."""
    _, ws, env, _ = install
    big = _memory_md(list(range(16)))
    big = big * (2 * 1024 * 1024 // len(big) + 1)
    (ws / "MEMORY.md").write_text(big, encoding="utf-8")
    doc = _sections(env)
    assert doc["bootstrap"]["loaded"] is False and doc["bootstrap"]["unreadable"] is True
    assert doc["bootstrap"]["dropped"] == len(big.rstrip())
    assert {s["bootstrap"] for s in doc["sections"]} == {"not loaded"}
    plain = run_memoryd(["sections", "MEMORY.md", "--no-scan"], env=env).stdout
    assert "OpenClaw reads no bootstrap file over 2,097,152 bytes" in plain
    (ws / "MEMORY.md").write_text(_memory_md([0, 1]), encoding="utf-8")
    (ws / "AGENTS.md").write_text(big, encoding="utf-8")
    (ws / "SOUL.md").write_text("# Soul\n" + "x" * 19_000, encoding="utf-8")
    (ws / "IDENTITY.md").write_text("# Identity\n" + "y" * 19_000, encoding="utf-8")
    (ws / "BOOTSTRAP.md").write_text("# Bootstrap\n", encoding="utf-8")
    doc = _sections(env)
    assert doc["bootstrap"]["loaded"] is True and doc["bootstrap"]["dropped"] == 0


@pytest.mark.parametrize(
    "value", [0, -5, "30000", 4000.5, 2**60, None, pytest.param(10**400, id="past-a-double")]
)
def test_a_limit_openclaw_refuses_is_said_and_retire_leaves_memory_md_whole(install, value):
    """`bootstrapMaxChars: "30000"` (a string), 0, a fraction, past JavaScript's safe
    integers, null ("expected number, received null"), an integer past a double's range
    (JSON.parse's Infinity; Python's json gives an int, which ended sections, retire and
    session-inject in an OverflowError): `openclaw config validate` refuses the file and
    OpenClaw does not run on it.
    sections showed a cut at 20,000 with no word of it, and retire moved sections out to fit
    that budget, one the user never set."""
    _, ws, env, root = install
    (root / "state" / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {
        "bootstrapMaxChars": value, "workspace": str(ws)}}}), encoding="utf-8")  # fmt: skip
    (ws / "MEMORY.md").write_text(_memory_md(list(range(16))), encoding="utf-8")
    doc = _sections(env)
    assert doc["bootstrap"]["refused_by_openclaw"] == [
        f"agents.defaults.bootstrapMaxChars = {json.dumps(value)}"
    ]
    plain = run_memoryd(["sections", "MEMORY.md", "--no-scan"], env=env).stdout
    assert "OpenClaw refuses the file" in plain
    before = (ws / "MEMORY.md").read_bytes()
    proc = run_memoryd(["retire", "--force", "--json"], env=env)
    assert proc.returncode == 0, proc.stderr
    (left,) = json.loads(proc.stdout)["skipped"]
    assert left["path"] == "MEMORY.md" and "OpenClaw refuses the file" in left["why"]
    assert (ws / "MEMORY.md").read_bytes() == before


def test_another_workspaces_hits_on_its_own_memory_md_are_not_this_ones(install):
    """Two agents, each with a workspace and a MEMORY.md of its own, both with a `## Topic 2`:
    the other agent's searches of its file were credited to this file's `## Topic 2` by
    sections and by retire (which then kept it as looked up lately). `--agent` shows that
    agent's hits on its own workspace's file, and a name no agent has is refused."""
    _, ws, env, root = install
    play_ws = root / "ws-play"
    play_ws.mkdir()
    cfg = Path(env["MEMORYD_CONFIG"])  # (no workspace override: each agent has its own)
    cfg.write_text("\n".join(line for line in cfg.read_text().splitlines()
                             if not line.startswith("workspace")), encoding="utf-8")  # fmt: skip
    (root / "state" / "openclaw.json").write_text(json.dumps({"agents": {
        "defaults": {"workspace": str(ws)},
        "list": [{"id": "main", "default": True}, {"id": "play", "workspace": str(play_ws)}],
    }}), encoding="utf-8")  # fmt: skip
    mine = _memory_md(list(range(16)))  # (over 20,000: retire has a plan)
    theirs = _memory_md([2, 7])
    (ws / "MEMORY.md").write_text(mine, encoding="utf-8")
    (play_ws / "MEMORY.md").write_text(theirs, encoding="utf-8")
    play = root / "state" / "agents" / "play" / "sessions"
    play.mkdir(parents=True)
    t1 = NOW - 3 * DAY
    first, _ = _lines_of(theirs, "## Topic 2")
    lines = [tx.header("p1", t1), tx.call("c1", query="two", ts=t1)]
    lines += [tx.result("c1", _search_result(theirs, [(first, first)]), ts=t1 + 1,
                        details="same")]  # fmt: skip
    (play / "p1.jsonl").write_bytes(b"".join(lines))
    doc = _sections(env)
    assert doc["hits"]["total"] == 0 and _by_heading(doc)["Topic 2"]["hits_total"] == 0
    proc = run_memoryd(["sections", "MEMORY.md", "--json", "--agent", "play"], env=env)
    assert proc.returncode == 0, proc.stderr
    other = json.loads(proc.stdout)
    assert other["workspace"] == str(play_ws)
    assert [s["heading"] for s in other["sections"] if s["hits_total"]] == ["Topic 2"]
    typo = run_memoryd(["sections", "MEMORY.md", "--agent", "plya"], env=env)
    assert typo.returncode == 2 and "no agent 'plya'" in typo.stderr
    plan = json.loads(run_memoryd(["retire", "--json"], env=env).stdout)
    assert {"title": "## Topic 2", "why": "looked up lately"} not in plan["notes"][0]["kept"]


def test_context_injection_never_puts_no_section_in_a_session_and_retire_leaves_it(install):
    """`agents.defaults.contextInjection: "never"`: OpenClaw 2026.9.6 injects no bootstrap
    file (resolveContextInjectionMode, builtin-openclaw's shouldSkipBootstrapInjection).
    sections said MEMORY.md's first 15,000 characters were in every new session, and retire
    moved sections out to fit a budget no session uses. An agent's own "always" wins."""
    _, ws, env, root = install
    oc = root / "state" / "openclaw.json"
    oc.write_text(json.dumps({"agents": {"defaults": {
        "contextInjection": "never", "workspace": str(ws)}}}), encoding="utf-8")  # fmt: skip
    (ws / "MEMORY.md").write_text(_memory_md(list(range(16))), encoding="utf-8")
    doc = _sections(env)
    assert doc["bootstrap"]["context_injection_never"] is True
    assert {s["bootstrap"] for s in doc["sections"]} == {"not loaded"}
    plain = run_memoryd(["sections", "MEMORY.md", "--no-scan"], env=env).stdout
    assert 'contextInjection is "never"' in plain
    before = (ws / "MEMORY.md").read_bytes()
    proc = run_memoryd(["retire", "--force", "--json"], env=env)
    (left,) = json.loads(proc.stdout)["skipped"]
    assert 'contextInjection is "never"' in left["why"]
    assert (ws / "MEMORY.md").read_bytes() == before
    oc.write_text(json.dumps({"agents": {"defaults": {
        "contextInjection": "never", "workspace": str(ws)}, "list": [
        {"id": "main", "contextInjection": "always"}]}}), encoding="utf-8")  # fmt: skip
    assert _sections(env)["bootstrap"]["loaded"] is True
