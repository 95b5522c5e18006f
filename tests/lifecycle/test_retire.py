"""``memoryd retire``: the plan (least used first, never a pinned or dreaming section, down to
the budget), and the rewrite end to end: ``retire --force`` then ``restore --last`` gives the
bytes back, an edit made between the plan and the rewrite wins, and a process killed at every
step of the rewrite loses no text (real processes killed at the fault points)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.policy.retire_plan import (
    DREAMING,
    PINNED,
    RECENT,
    Use,
    cut_spans,
    line_offsets,
    plan_retire,
    put_back,
    section_text_span,
)
from memoryd.section_map import parse_sections
from support import transcripts as tx
from support.inprocess import memoryd as run_memoryd
from support.stopped import wait_stopped

NOW = 1_796_000_000.0  # 2026-11-30
DAY = 86400.0


def _memory(n: int, size: int = 2_000, extra: dict[int, str] | None = None) -> str:
    out = ["# Long-term memory", ""]
    for i in range(n):
        out.append(f"## Topic {i}")
        body = f"- fact {i}: " + "detail " * (size // 7)
        out += [body, *([extra[i]] if extra and i in extra else []), ""]
    return "\n".join(out)


def _uses(text: str, hits: dict[str, tuple[int, float | None]]) -> list[Use]:
    out = []
    for sec in parse_sections(text):
        n, last = hits.get(sec.heading, (0, None))
        out.append(Use(sec, n, n, n, last, False))
    return out


@pytest.mark.unit
def test_the_plan_takes_the_least_used_first_and_only_what_the_budget_needs():
    text = _memory(12)
    hits = {f"Topic {i}": (i, NOW - 60 * DAY) for i in range(1, 12)}  # Topic 0: never
    plan = plan_retire(text, _uses(text, hits), 20_000, NOW)
    assert plan.chars_before > 20_000 and plan.fits
    taken = [t.title for t in plan.taken]
    assert taken[0] == "## Topic 0"  # never looked up goes first
    assert taken == [f"## Topic {i}" for i in range(len(taken))]
    assert len(taken) == 3  # 12 topics of ~2,000 chars: three take it under 20,000
    assert plan.new_text == cut_spans(text, [(t.begin, t.end) for t in plan.taken])
    # a file under its budget loses nothing
    assert not plan_retire(text, _uses(text, hits), 100_000, NOW).taken


@pytest.mark.unit
def test_pinned_dreaming_recent_and_the_title_are_never_taken():
    extra = {
        0: "<!-- memoryd:pin -->",
        1: "- promoted <!-- trigger: boats, sails --> <!-- importance: 7 -->",
        2: "<!-- openclaw:dreaming:light:start -->",
    }
    text = _memory(6, extra=extra) + "## Light Sleep\n- staged\n"
    hits = {"Topic 3": (1, NOW - 2 * DAY)}
    plan = plan_retire(text, _uses(text, hits), 10, NOW, heading_pins=["Topic 4"])
    kept = dict(plan.kept)
    assert kept["## Topic 0"] == PINNED and kept["## Topic 4"] == PINNED
    assert kept["## Topic 1"] == DREAMING and kept["## Topic 2"] == DREAMING
    assert kept["## Light Sleep"] == DREAMING and kept["## Topic 3"] == RECENT
    assert "# Long-term memory" in kept
    assert [t.title for t in plan.taken] == ["## Topic 5"] and not plan.fits


_heading = st.text(alphabet="abcdefgh ", min_size=1, max_size=8).map(str.strip).filter(bool)
_body = st.lists(st.text(alphabet="xyz -.\u00e9\U0001f600", max_size=20), max_size=4)


@st.composite
def _file_and_spans(draw):
    heads = draw(st.lists(_heading, min_size=1, max_size=8, unique=True))
    parts = [draw(st.sampled_from(["", "preface\n"]))]
    for h in heads:
        parts.append(f"## {h}\n" + "".join(f"{line}\n" for line in draw(_body)))
    if draw(st.booleans()):
        parts[-1] = parts[-1].rstrip("\n")
    text = "".join(parts)
    secs = parse_sections(text)
    offsets = line_offsets(text)
    chosen = draw(st.lists(st.sampled_from(range(len(secs))), unique=True))
    return text, [section_text_span(offsets, secs[i]) for i in chosen]


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(_file_and_spans())
def test_put_back_of_an_unedited_file_is_the_original(case):
    text, spans = case
    assert put_back(cut_spans(text, spans), text, spans) == text


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(_file_and_spans(), st.text(alphabet="qrs\n", min_size=1, max_size=12))
def test_put_back_after_an_edit_keeps_the_edit_and_every_section(case, edit):
    text, spans = case
    edited = cut_spans(text, spans) + "\n## added since\n" + edit
    back = put_back(edited, text, spans)
    for b, e in spans:
        assert text[b:e].rstrip("\n") in back
    assert "## added since\n" + edit in back  # the edit made since is all there


# --------------------------------------------------------------------------- end to end


@pytest.fixture
def install(tmp_path: Path):
    sessions, ws, cfg = tx.make_install(tmp_path, [])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))
    text = _memory(16, size=2_400)
    (ws / "MEMORY.md").write_text(text, encoding="utf-8")
    lines = [tx.header("s1", NOW - 50 * DAY)]
    for k, topic in enumerate((3, 7, 11)):  # three topics looked up (50 days ago)
        first = text.split("\n").index(f"## Topic {topic}") + 1
        body = "\n".join(text.split("\n")[first - 1 : first + 1])
        res = {
            "results": [
                {
                    "path": "MEMORY.md",
                    "startLine": first,
                    "endLine": first + 1,
                    "score": 0.5,
                    "snippet": body,
                    "citation": f"MEMORY.md#L{first}",
                }
            ]
        }
        lines += [tx.call(f"c{k}", query=f"topic {topic}", ts=NOW - 50 * DAY + k)]
        lines += [tx.result(f"c{k}", res, ts=NOW - 50 * DAY + k + 0.5, details="same")]
    (sessions / "s1.jsonl").write_bytes(b"".join(lines))
    return ws, env


def _retire(env, *args):
    proc = run_memoryd(["retire", "--json", *args], env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)


@pytest.mark.subprocess
def test_retire_force_then_restore_last_gives_the_bytes_back(install):
    ws, env = install
    before = (ws / "MEMORY.md").read_bytes()
    plan = _retire(env)  # the dry run: exactly what would move, and the weight after
    (note,) = plan["notes"]
    assert note["chars_before"] > 20_000 and note["chars_after"] <= 20_000
    titles = [s["title"] for s in note["retire"]]
    assert not {"## Topic 3", "## Topic 7", "## Topic 11"} & set(titles)  # looked up: last
    assert (ws / "MEMORY.md").read_bytes() == before  # a dry run changes nothing
    done = _retire(env, "--force")
    assert [s["title"] for s in done["notes"][0]["retire"]] == titles
    after = (ws / "MEMORY.md").read_text(encoding="utf-8")
    archive = (ws / "memory-archive" / "retired" / "MEMORY.md").read_text(encoding="utf-8")
    for t in titles:
        assert t not in after.split("\n") and t in archive.split("\n")
    assert "memoryd retired from MEMORY.md lines" in archive
    assert len(after) <= 20_000
    proc = run_memoryd(["restore", "--last"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert "undoing the retire run" in proc.stdout and "byte for byte" in proc.stdout
    assert " (1 file; retire:" in proc.stdout
    assert (ws / "MEMORY.md").read_bytes() == before
    assert not (ws / "memory-archive" / "retired" / "MEMORY.md").exists()
    again = run_memoryd(["restore", "--last"], env=env)
    assert again.returncode == 1 and "undone already" in again.stderr


@pytest.mark.subprocess
def test_restore_last_after_an_edit_puts_the_sections_back_and_keeps_the_edit(install):
    ws, env = install
    before = (ws / "MEMORY.md").read_text(encoding="utf-8")
    titles = [s["title"] for s in _retire(env, "--force")["notes"][0]["retire"]]
    edited = (ws / "MEMORY.md").read_text(encoding="utf-8") + "## Written since\n- new\n"
    (ws / "MEMORY.md").write_text(edited, encoding="utf-8")
    proc = run_memoryd(["restore", "--last"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert "edited since" in proc.stdout
    now = (ws / "MEMORY.md").read_text(encoding="utf-8")
    assert now == before + "## Written since\n- new\n"
    assert all(t in now.split("\n") for t in titles)


def _child(env: dict[str, str], fault: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args], env={**env, "MEMORYD_FAULT": fault},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _all_text_there(ws: Path, original: str) -> None:
    """Every section of ``original`` is in MEMORY.md or in its archive file, whole."""
    names = [
        ws / "MEMORY.md",
        *ws.glob(".MEMORY.md.memoryd-*"),
        *ws.glob("MEMORY.md.memoryd-kept-*"),
    ]
    note = "".join(p.read_text(encoding="utf-8") for p in names if p.exists())
    arch = ws / "memory-archive" / "retired" / "MEMORY.md"
    archive = arch.read_text(encoding="utf-8") if arch.exists() else ""
    offsets = line_offsets(original)
    for sec in parse_sections(original):
        b, e = section_text_span(offsets, sec)
        body = original[b:e].rstrip("\n")
        assert body in note or body in archive, sec.title


# Where names cannot be swapped in one step (fsutil.exchange), the note goes through an aside.
NO_SWAP = "retire.exchange:*:einval,"


@pytest.mark.crash
@pytest.mark.parametrize(
    "point",
    ["retire.journaled", "retire.archived", "retire.swapped", "retire.placed",
     NO_SWAP + "retire.aside", NO_SWAP + "retire.placed"],
)  # fmt: skip
def test_a_retire_killed_at_every_step_loses_no_text(install, point):
    ws, env = install
    original = (ws / "MEMORY.md").read_text(encoding="utf-8")
    before = original.encode()
    proc = _child(env, f"{point}:1:kill", "retire", "--force")
    assert proc.returncode == -9, proc.stderr
    _all_text_there(ws, original)
    # the next acting command repairs, then retires; restore --last gives the bytes back
    done = _retire(env, "--force")
    assert done["repaired"], done
    assert (ws / "MEMORY.md").read_bytes() != before or point.endswith("retire.placed")
    _all_text_there(ws, original)
    proc = run_memoryd(["restore", "--last"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert (ws / "MEMORY.md").read_bytes() == before
    assert not list(ws.glob(".MEMORY.md.memoryd-*"))


@pytest.mark.crash
def test_an_edit_made_between_the_plan_and_the_rewrite_wins(install, tmp_path):
    """The retire stops after its plan read MEMORY.md (SIGSTOP at the fault point); the user
    saves an edit; the retire goes on: the edit is there, and the plan made again on it."""
    ws, env = install
    spec = tmp_path / "fault"
    spec.write_text("retire.journaled:1:stop")
    child = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "retire", "--force", "--json"],
        env={**env, "MEMORYD_FAULT": f"@{spec}"}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_stopped(child, timeout=300)
        edited = (ws / "MEMORY.md").read_text(encoding="utf-8") + "## Saved meanwhile\n- x\n"
        tmp = ws / ".MEMORY.md.editor"
        tmp.write_text(edited, encoding="utf-8")
        os.replace(tmp, ws / "MEMORY.md")  # as an editor saves
        spec.write_text("")
    finally:
        os.kill(child.pid, 18)  # SIGCONT
    out, _ = child.communicate(timeout=300)
    assert child.returncode == 0, out
    doc = json.loads(out)
    now = (ws / "MEMORY.md").read_text(encoding="utf-8")
    assert "## Saved meanwhile\n- x\n" in now  # the edit won
    assert doc["applied"] and doc["applied"][0]["sections"]  # planned again, on the edit
    _all_text_there(ws, edited)
    proc = run_memoryd(["restore", "--last"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert (ws / "MEMORY.md").read_text(encoding="utf-8") == edited
    assert hashlib.sha256(edited.encode()).hexdigest()


@pytest.mark.subprocess
def test_the_daily_job_retires_nothing_until_the_user_sets_retire_auto(install):
    ws, env = install
    before = (ws / "MEMORY.md").read_bytes()
    proc = run_memoryd(["reflect"], env=env)  # the daily job, as the daemon runs it
    assert proc.returncode == 0, proc.stderr
    assert (ws / "MEMORY.md").read_bytes() == before and "retired" not in proc.stdout
    cfg = Path(env["MEMORYD_CONFIG"])
    cfg.write_text(cfg.read_text() + "\n[retire]\nauto = true\n")
    proc = run_memoryd(["reflect"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert "retired " in proc.stdout and "sections from 1 note (undo" in proc.stdout
    assert len((ws / "MEMORY.md").read_text(encoding="utf-8")) <= 20_000
    proc = run_memoryd(["restore", "--last"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert (ws / "MEMORY.md").read_bytes() == before


@pytest.mark.subprocess
def test_a_file_the_user_pinned_is_left_whole_and_a_pinned_heading_stays(install):
    ws, env = install
    before = (ws / "MEMORY.md").read_bytes()
    assert run_memoryd(["pin", "MEMORY.md#Topic 0"], env=env).returncode == 0
    note = _retire(env)["notes"][0]
    assert {"title": "## Topic 0", "why": "pinned"} in note["kept"]
    assert "## Topic 0" not in [s["title"] for s in note["retire"]]
    assert run_memoryd(["pin", "MEMORY.md"], env=env).returncode == 0
    doc = _retire(env, "--force")
    assert not doc["applied"] and doc["skipped"][0]["path"] == "MEMORY.md"
    assert (ws / "MEMORY.md").read_bytes() == before


@pytest.mark.subprocess
def test_a_pin_with_double_star_leaves_a_file_at_the_top_whole_too(install):
    """``pin '**/*.md'`` keeps every note from expire, and from retire too: retire read the
    pin with fnmatch alone (``**/`` needing a folder) and cut MEMORY.md to its budget."""
    ws, env = install
    before = (ws / "MEMORY.md").read_bytes()
    assert run_memoryd(["pin", "**/*.md"], env=env).returncode == 0
    doc = _retire(env, "--force")
    assert not doc["applied"] and doc["skipped"][0]["path"] == "MEMORY.md"
    assert (ws / "MEMORY.md").read_bytes() == before


@pytest.mark.subprocess
def test_recall_finds_a_retired_section_in_the_archive(install):
    ws, env = install
    text = (ws / "MEMORY.md").read_text(encoding="utf-8")
    text = text.replace("## Topic 0\n", "## Topic 0\n- the wombat lives in the shed\n", 1)
    (ws / "MEMORY.md").write_text(text, encoding="utf-8")
    done = _retire(env, "--force")
    assert "## Topic 0" in done["applied"][0]["sections"]
    proc = run_memoryd(["recall", "wombat", "--json"], env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["tier"] == "retired" and doc["matches"] == 1
    (hit,) = doc["shown"]
    assert hit["note"] == "MEMORY.md" and hit["path"] == "memory-archive/retired/MEMORY.md"
    assert hit["text"].startswith("## Topic 0\n- the wombat lives in the shed\n")
    assert "restore --last" in doc["message"]


@pytest.mark.crash
@pytest.mark.parametrize("point", ["retire.archived", "retire.swapped", NO_SWAP + "retire.aside"])
def test_a_restore_killed_while_it_puts_sections_back_loses_no_text(install, point):
    ws, env = install
    before = (ws / "MEMORY.md").read_bytes()
    _retire(env, "--force")
    proc = _child(env, f"{point}:1:kill", "restore", "--last")
    assert proc.returncode == -9, proc.stderr
    _all_text_there(ws, before.decode())
    # the next restore repairs first: the undo is completed (killed after the note was back)
    # or rolled back and made again (killed before)
    proc = run_memoryd(["restore", "--last"], env=env)
    assert "repaired: retire" in proc.stdout
    if point != NO_SWAP + "retire.aside":  # (an undo writes the note first, then the archive)
        assert proc.returncode == 1 and "undone already" in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr + proc.stdout
    assert (ws / "MEMORY.md").read_bytes() == before
    assert not (ws / "memory-archive" / "retired" / "MEMORY.md").exists()


@pytest.mark.subprocess
@pytest.mark.parametrize("name", ["big.md", "b" * 251 + ".md"])  # (a name at the 255-byte limit)
def test_a_long_note_is_brought_under_retire_note_max_chars_and_bad_paths_refused(install, name):
    """A note over retire.note_max_chars is cut under it and restore --last gives its bytes
    back; one whose name is near 255 bytes too (its temporary and aside names were too long:
    retire --force failed with "File name too long")."""
    ws, env = install
    (ws / "memory").mkdir(exist_ok=True)
    big = ws / "memory" / name
    big.write_text(_memory(30, size=1_600), encoding="utf-8")  # ~49,000 characters
    before = big.read_bytes()
    done = _retire(env, "--force", f"memory/{name}")
    (note,) = done["notes"]
    assert note["budget"] == 40_000 and note["chars_after"] <= 40_000 and note["retire"]
    assert note["archive"] == f"memory-archive/retired/memory/{name}"
    assert (ws / note["archive"]).is_file() and len(big.read_text(encoding="utf-8")) <= 40_000
    assert run_memoryd(["restore", "--last"], env=env).returncode == 0
    assert big.read_bytes() == before
    bad = run_memoryd(["retire", "tiers/warm/x.md"], env=env)
    assert bad.returncode == 2 and "Markdown memory files" in bad.stderr


@pytest.mark.subprocess
def test_a_note_longer_than_retire_reads_is_left_whole_and_said(install, monkeypatch):
    """Retire reads a bounded prefix of a note; a note longer than that could never be
    rewritten (the rewrite compares the whole file with what the plan read): it is skipped
    with its reason, never planned and then reported as changing."""
    import memoryd.retire_run as retire_run

    ws, env = install
    (ws / "memory").mkdir(exist_ok=True)
    big = ws / "memory" / "big.md"
    big.write_text(_memory(30, size=1_600), encoding="utf-8")
    before = big.read_bytes()
    monkeypatch.setattr(retire_run, "READ_MAX", 20_000)
    done = _retire(env, "--force", "memory/big.md")
    assert done["notes"] == [] and done["changed"] == []
    assert [s["path"] for s in done["skipped"]] == ["memory/big.md"]
    assert "left whole" in done["skipped"][0]["why"]
    assert big.read_bytes() == before


@pytest.mark.subprocess
def test_a_symlinked_memory_md_is_left_whole_and_said_why(install, tmp_path):
    """MEMORY.md a link into a dotfiles checkout: retire said "cannot read: Too many levels
    of symbolic links" for one plain link. It leaves the file whole either way (a rewrite
    would put a file where the link is); now it says that, and the target is untouched."""
    ws, env = install
    target = tmp_path / "dotfiles" / "MEMORY.md"
    target.parent.mkdir()
    (ws / "MEMORY.md").rename(target)
    (ws / "MEMORY.md").symlink_to(target)
    before = target.read_bytes()
    for args in ((), ("--force",)):
        doc = _retire(env, *args)
        [left] = [s for s in doc["skipped"] if s["path"] == "MEMORY.md"]
        assert left["why"].startswith("a symbolic link (retire rewrites only a regular file")
    assert target.read_bytes() == before and (ws / "MEMORY.md").is_symlink()


@pytest.mark.subprocess
def test_a_file_named_that_is_not_there_is_the_users_input(install):
    """`retire nope.md` said "left nope.md: cannot read" and exited 0, as for a note it had
    found itself; a file you name that is not there is your input: one line, exit 2."""
    ws, env = install
    before = (ws / "MEMORY.md").read_bytes()
    for args in (("memory/nope.md",), ("--force", "memory/nope.md", "MEMORY.md")):
        r = run_memoryd(["retire", *args], env=env)
        assert (r.returncode, r.stdout) == (2, ""), r.stdout + r.stderr
        assert r.stderr == f"memoryd: memory/nope.md: no such file in {ws}\n"
    assert (ws / "MEMORY.md").read_bytes() == before


@pytest.mark.subprocess
def test_the_budget_is_what_openclaw_leaves_memory_md_after_the_missing_files_lines(install):
    """Each bootstrap file missing before MEMORY.md (AGENTS.md, SOUL.md, IDENTITY.md) takes
    its ``[MISSING] Expected at: PATH`` line of the total budget in OpenClaw 2026.9.6; the
    retire budget left those out, so a MEMORY.md planned to "fit" was still cut by a few
    hundred characters. A missing BOOTSTRAP.md takes none: a workspace without it has its
    setup completed, and OpenClaw then drops BOOTSTRAP.md from the list (the live
    recording's requests hold no such line)."""
    ws, env = install
    state = ws.parent / "state"
    (state / "openclaw.json").write_text(
        json.dumps({"agents": {"defaults": {"bootstrapTotalMaxChars": 30_000}}}), encoding="utf-8"
    )
    missing = sum(
        len(f"[MISSING] Expected at: {ws / name}")
        for name in ("AGENTS.md", "SOUL.md", "IDENTITY.md")
    )
    (note,) = _retire(env)["notes"]
    assert note["budget"] == 20_000  # (the file's own limit is the smaller)
    (state / "openclaw.json").write_text(
        json.dumps({"agents": {"defaults": {"bootstrapTotalMaxChars": 15_000}}}), encoding="utf-8"
    )
    (note,) = _retire(env)["notes"]
    assert note["budget"] == 15_000 - missing
    proc = run_memoryd(["sections", "MEMORY.md", "--json", "--no-scan"], env=env)
    assert json.loads(proc.stdout)["bootstrap"]["injected"] <= note["budget"]


@pytest.mark.subprocess
def test_a_second_restore_last_after_two_retires_says_where_the_older_sections_are(install):
    """Retire, write more, retire again, then restore --last twice: the second one refused
    and sent the user to `memoryd restore PATH`, which undoes moves, not a retire (it answers
    "no journaled move of this path"). It now names the archive holding the older run's
    sections, which are all there."""
    ws, env = install
    first = [s["title"] for s in _retire(env, "--force")["notes"][0]["retire"]]
    grown = (ws / "MEMORY.md").read_text(encoding="utf-8") + _memory(1, size=3_000).replace(
        "## Topic 0", "## Written later"
    )
    (ws / "MEMORY.md").write_text(grown, encoding="utf-8")
    assert _retire(env, "--force")["applied"]
    assert run_memoryd(["restore", "--last"], env=env).returncode == 0
    assert (ws / "MEMORY.md").read_text(encoding="utf-8") == grown
    again = run_memoryd(["restore", "--last"], env=env)
    assert again.returncode == 1 and "undone already" in again.stderr
    assert "memoryd restore PATH" not in again.stderr
    assert "memory-archive/retired/MEMORY.md" in again.stderr
    archive = (ws / "memory-archive" / "retired" / "MEMORY.md").read_text(encoding="utf-8")
    assert all(t in archive.split("\n") for t in first)


@pytest.mark.subprocess
def test_a_memory_md_of_underlined_headings_is_said_to_have_no_section_not_to_be_pinned(install):
    """A MEMORY.md over its budget written with `===` / `---` underlined (setext) headings is
    one title to retire: it said "nothing may go (pinned, dreaming's, used lately)", none of
    which was so."""
    ws, env = install
    text = "Long-term memory\n================\n\n" + "".join(
        f"Topic {i}\n-------\n" + "- a fact of some length about the topic\n" * 60 + "\n"
        for i in range(12)
    )
    (ws / "MEMORY.md").write_text(text, encoding="utf-8")
    proc = run_memoryd(["retire"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert "pinned" not in proc.stdout and "no section that may go" in proc.stdout


@pytest.mark.subprocess
def test_a_memory_md_the_total_budget_leaves_out_is_not_emptied_for_nothing(install):
    """With bootstrapTotalMaxChars spent by the files before it (less than 64 left), OpenClaw
    loads no MEMORY.md at all, however short: retire took every section it could to fit a
    budget of 0, and the file was still not loaded."""
    ws, env = install
    state = ws.parent / "state"
    (state / "openclaw.json").write_text(
        json.dumps({"agents": {"defaults": {"bootstrapTotalMaxChars": 3_000}}}), encoding="utf-8"
    )
    (ws / "SOUL.md").write_text("# Soul\n" + "be kind. " * 400, encoding="utf-8")
    before = (ws / "MEMORY.md").read_bytes()
    doc = _retire(env, "--force")
    assert doc["applied"] == []
    (left,) = doc["skipped"]
    assert left["path"] == "MEMORY.md" and left["why"].startswith("not loaded at all")
    assert (ws / "MEMORY.md").read_bytes() == before


@pytest.mark.subprocess
def test_a_bootstrap_max_chars_under_64_is_a_budget_not_a_file_left_out(install):
    """`bootstrapMaxChars: 50` (valid: OpenClaw cuts MEMORY.md to 50 characters, its total
    budget untouched) was taken for the total's room under 64: retire said MEMORY.md was
    not loaded at all and left it whole."""
    ws, env = install
    (ws.parent / "state" / "openclaw.json").write_text(
        json.dumps({"agents": {"defaults": {"bootstrapMaxChars": 50}}}), encoding="utf-8"
    )
    doc = _retire(env)
    assert doc["skipped"] == []
    (note,) = doc["notes"]
    assert note["budget"] == 50 and note["retire"]


@pytest.mark.subprocess
def test_counts_of_one_are_singular_in_retire_and_its_undo(install):
    """"1 hits in 90 days" in the plan, "(1 files; ...)" naming the run restore undoes."""
    ws, env = install
    (ws.parent / "state" / "openclaw.json").write_text(  # a budget the looked-up topics pass
        json.dumps({"agents": {"defaults": {"bootstrapMaxChars": 3000, "workspace": str(ws)}}}),
        encoding="utf-8",
    )
    plan = run_memoryd(["retire"], env=env).stdout
    assert "0 hits in 90 days" in plan and "1 hit in 90 days" in plan, plan
    assert "1 hits" not in plan
    assert run_memoryd(["retire", "--force"], env=env).returncode == 0
    back = run_memoryd(["restore", "--last"], env=env)
    assert back.returncode == 0 and "undoing the retire run of " in back.stdout, back.stderr
    assert "(1 file; " in back.stdout and "1 files" not in back.stdout, back.stdout


@pytest.mark.subprocess
def test_restore_last_after_an_edit_that_is_no_utf8_says_so_and_keeps_both(install):
    """An edit since the retire saved a byte that is no UTF-8 (a Latin-1 editor): restore
    --last answered with Python's codec error. The note and the archive stay as they are,
    and it says where the sections are."""
    ws, env = install
    _retire(env, "--force")
    edited = (ws / "MEMORY.md").read_bytes() + b"- caf\xe9\n"
    (ws / "MEMORY.md").write_bytes(edited)
    archive = (ws / "memory-archive" / "retired" / "MEMORY.md").read_bytes()
    proc = run_memoryd(["restore", "--last"], env=env)
    assert proc.returncode == 1
    assert "codec" not in proc.stderr and "no UTF-8 text now" in proc.stderr
    assert "memory-archive/retired/MEMORY.md" in proc.stderr
    assert (ws / "MEMORY.md").read_bytes() == edited
    assert (ws / "memory-archive" / "retired" / "MEMORY.md").read_bytes() == archive


@pytest.mark.subprocess
def test_retire_of_a_named_file_takes_only_memory_files_there_now(install):
    """`memoryd retire memory-archive/retired/MEMORY.md` planned to retire the archive's own
    sections into memory-archive/retired/memory-archive/retired/MEMORY.md; `retire SOUL.md`
    would rewrite a bootstrap file that is no memory file; a name with no file was "left"
    with exit 0. Each is the user's input: one line, exit 2, nothing changed."""
    ws, env = install
    _retire(env, "--force")
    (ws / "SOUL.md").write_text("# Soul\n" + "## Part\n- x\n" * 5_000, encoding="utf-8")
    for rel, says in (
        ("memory-archive/retired/MEMORY.md", "not the archive"),
        ("SOUL.md", "retire takes the workspace's Markdown memory files"),
        ("memory/nope.md", "no such file"),
    ):
        proc = run_memoryd(["retire", "--force", rel], env={**env, "MEMORYD_NOW": str(NOW)})
        assert proc.returncode == 2 and says in proc.stderr, proc.stderr + proc.stdout
    assert not (ws / "memory-archive" / "retired" / "memory-archive").exists()
    assert not (ws / "memory-archive" / "retired" / "SOUL.md").exists()


@pytest.mark.subprocess
def test_the_sections_of_a_private_memory_md_stay_private_in_the_archive(install):
    """MEMORY.md kept 0600 (a shared machine): retire wrote its sections to a new archive file
    0644, readable by every user; an archive the user made private was widened the same way
    when rewritten. The archive is now no wider than the note, nor than it was."""
    ws, env = install
    os.chmod(ws / "MEMORY.md", 0o600)
    _retire(env, "--force")
    archive = ws / "memory-archive" / "retired" / "MEMORY.md"
    assert (ws / "MEMORY.md").stat().st_mode & 0o777 == 0o600
    assert archive.stat().st_mode & 0o777 == 0o600
    os.chmod(ws / "MEMORY.md", 0o644)
    os.chmod(archive, 0o640)
    grown = (ws / "MEMORY.md").read_text(encoding="utf-8") + "## Later\n" + "- more\n" * 3_000
    (ws / "MEMORY.md").write_text(grown, encoding="utf-8")
    assert _retire(env, "--force")["applied"]
    assert archive.stat().st_mode & 0o777 == 0o640


@pytest.mark.subprocess
def test_retire_and_its_undo_keep_the_notes_own_mode_under_a_strict_umask(install):
    """Run with umask 077, retire put a MEMORY.md kept 0640 (read by an OpenClaw running as
    another user of its group) back under its name 0600, and restore --last left it so:
    the note's new version was made with the umask applied. The archive may take the umask
    (it is no wider than the note)."""
    ws, env = install
    os.chmod(ws / "MEMORY.md", 0o640)
    old = os.umask(0o077)
    try:
        assert _retire(env, "--force")["applied"]
        assert (ws / "MEMORY.md").stat().st_mode & 0o777 == 0o640
        archive = ws / "memory-archive" / "retired" / "MEMORY.md"
        assert archive.stat().st_mode & 0o777 == 0o600
        proc = run_memoryd(["restore", "--last"], env=env)
        assert proc.returncode == 0, proc.stderr
        assert (ws / "MEMORY.md").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


@pytest.mark.subprocess
def test_a_read_only_memory_md_is_left_whole_and_said_so(install):
    """`chmod a-w MEMORY.md`: retire --force swapped a new file in under its name (a rename
    needs only the folder's permission) and the note the user had made read-only changed."""
    ws, env = install
    os.chmod(ws / "MEMORY.md", 0o444)
    before = (ws / "MEMORY.md").read_bytes()
    doc = _retire(env, "--force")
    assert doc["applied"] == []
    assert doc["skipped"] == [{"path": "MEMORY.md", "why": "read-only (chmod a-w): left whole"}]
    assert (ws / "MEMORY.md").read_bytes() == before


@pytest.mark.unit
def test_a_section_pin_that_is_a_heading_as_written_keeps_it_brackets_and_all():
    """``memoryd pin 'MEMORY.md#[WIP] launch'`` names the heading ``## [WIP] launch``: as a
    glob, ``[WIP]`` is one of W, I, P, and the section was retired while the pin command said
    it matched no section (a file's name as written already names its file: 3347b41)."""
    text = "# Long-term memory\n\n## [WIP] launch\n" + "- step\n" * 400 + "## Other\n- x\n"
    plan = plan_retire(text, _uses(text, {}), 10, NOW, heading_pins=["[WIP] launch"])
    assert dict(plan.kept)["## [WIP] launch"] == PINNED
    assert "## [WIP] launch" not in [t.title for t in plan.taken]


@pytest.mark.subprocess
def test_the_pin_command_finds_a_heading_written_with_brackets(install):
    """The pin command read ``[WIP]`` as a glob too, and said the pin matched no section."""
    ws, env = install
    with (ws / "MEMORY.md").open("a", encoding="utf-8") as f:
        f.write("\n## [WIP] launch\n- step\n")
    out = run_memoryd(["pin", "MEMORY.md#[WIP] launch"], env=env)
    assert out.returncode == 0, out.stderr
    assert "matches 1 section now: MEMORY.md ## [WIP] launch" in out.stdout, out.stdout
