"""The first hour's rough edges of issue 32 (item 4), each as a new user met it on the demo:
a search that matches nothing, a mark recall set, a pin that matches nothing, a typo'd key,
``memoryd`` alone, argparse's refusals, plurals, the demo's promotion candidates, a bigger
demo, taking back ``expire --schedule``, and shell completion from the parser.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.config import ConfigError, load_config
from support.inprocess import memoryd as run_memoryd

NOW = 1_790_000_000.0


def memoryd(*args: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    env["MEMORYD_NOW"] = str(NOW)
    if config is not None:
        env["MEMORYD_CONFIG"] = str(config)
    return run_memoryd(args, env=env)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo install, scanned; its config file."""
    root = tmp_path_factory.mktemp("demo") / "d"
    r = memoryd("demo", str(root))
    assert r.returncode == 0, r.stderr
    return root / "memoryd.toml"


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    root = tmp_path / "d"
    assert memoryd("demo", str(root)).returncode == 0
    return root / "memoryd.toml"


def test_a_search_that_matches_nothing_says_so(demo: Path) -> None:
    r = memoryd("search", "zzzzqqq", "--no-scan", config=demo)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("nothing matched 'zzzzqqq' in ")
    assert "0.00" not in r.stdout
    doc = json.loads(memoryd("search", "zzzzqqq", "--no-scan", "--json", config=demo).stdout)
    assert doc["results"] == []


def test_a_search_lists_only_files_the_words_are_in(demo: Path) -> None:
    doc = json.loads(memoryd("search", "router", "--no-scan", "--json", config=demo).stdout)
    assert doc["results"]
    assert all(row["keyword"] > 0 for row in doc["results"]), doc["results"]


def test_promote_says_recall_marked_a_note_not_the_user(fresh: Path) -> None:
    r = memoryd("recall", "printer", "floor2", config=fresh)
    assert r.returncode == 0 and "recovered from forgotten/" in r.stdout, r.stdout
    r = memoryd("promote", "--no-scan", config=fresh)
    line = next(ln for ln in r.stdout.splitlines() if "tiers/printer-setup.md" in ln)
    assert "marked: recovered from forgotten/ by recall" in line
    assert "marked by the user" not in line
    memoryd("mark", "memory/people.md", config=fresh)
    r = memoryd("promote", "--no-scan", config=fresh)
    line = next(ln for ln in r.stdout.splitlines() if "memory/people.md" in ln)
    assert "marked by the user" in line  # what `memoryd mark` set


def test_a_pin_says_what_it_matches_now(fresh: Path) -> None:
    r = memoryd("pin", "memory/zzz/*", config=fresh)
    assert r.returncode == 0
    assert r.stdout.splitlines() == [
        "pinned memory/zzz/*",
        "  (matches no memory file now; it will keep any that comes to match)",
    ]
    r = memoryd("pin", "memory/projects/*", config=fresh)
    said = r"pinned memory/projects/\*\n  \(matches \d+ memory files? now\)\n"
    assert re.fullmatch(said, r.stdout), r.stdout


def test_a_section_pin_says_the_sections_it_keeps(fresh: Path) -> None:
    """`memoryd pin 'MEMORY.md#Work'` pins the demo's `## Work` for retire, and said "matches
    no memory file now"; `MEMORY.md#work` (another case) pins nothing and said the same."""
    r = memoryd("pin", "MEMORY.md#Work", config=fresh)
    assert r.stdout.splitlines() == [
        "pinned MEMORY.md#Work",
        "  (matches 1 section now: MEMORY.md ## Work)",
    ]
    r = memoryd("pin", "MEMORY.md#work", config=fresh)
    assert "matches no section now: a heading is matched as written, its case too" in r.stdout


@pytest.mark.parametrize(
    "toml,suggested",
    [
        ("[expire]\npolicyy = 'seed'\n", "did you mean 'expire.policy'?"),
        ("[shedule]\nexpire = 'off'\n", "did you mean 'schedule'?"),
        ("[openclaw]\nworkspce = '/x'\n", "did you mean 'openclaw.workspace'?"),
    ],
)
def test_a_typo_in_a_config_key_gets_a_did_you_mean(
    tmp_path: Path, toml: str, suggested: str
) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert suggested in str(err.value)


def test_a_key_like_no_other_gets_no_guess(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[expire]\nxyzzy = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert str(err.value) == "unknown key 'expire.xyzzy'"


def test_memoryd_alone_prints_the_help() -> None:
    r = memoryd()
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.startswith("usage: memoryd ") and "status" in r.stdout


@pytest.mark.parametrize(
    "args,says",
    [
        (["hits", "--dayz", "3"], "unrecognized arguments: --dayz 3"),
        (["hits", "--days", "x"], "argument --days: expected a whole number"),
        (["bogus"], "invalid choice: 'bogus'"),
        (["service"], "required: WHAT"),
        (["expire", "--schedule", "--no-schedule"], "not allowed with argument"),
        # (a negative time was taken; "nan" handed over a run that never timed out)
        (["promote", "--handoff", "--timeout", "-1"], "argument --timeout: must not be negative"),
        (["promote", "--handoff", "--timeout", "nan"], "argument --timeout: expected a number"),
    ],
)
def test_argparse_refusals_are_one_line(demo: Path, args: list[str], says: str) -> None:
    r = memoryd(*args, config=demo)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("memoryd: ") and "(usage: memoryd" in lines[0]
    assert says in lines[0] or says.split(":")[0] in lines[0], lines[0]


def test_counts_of_one_are_singular(tmp_path: Path) -> None:
    from memoryd.results import counted

    assert [counted(0, "hit"), counted(1, "hit"), counted(2, "file")] == [
        "0 hits",
        "1 hit",
        "2 files",
    ]
    from support import transcripts as tx

    sessions, _, cfg = tx.make_install(tmp_path, ["MEMORY.md"])
    (sessions / "s1.jsonl").write_bytes(
        tx.header("s1")
        + tx.call("a", ts=NOW - 100)
        + tx.result("a", tx.search_payload(["MEMORY.md"]), ts=NOW - 50)
    )
    r = memoryd("hits", config=cfg)
    assert "1 hit on 1 of 1 file in the window" in r.stdout, r.stdout
    assert "1 hits" not in r.stdout and "1 files" not in r.stdout
    r = memoryd("scan", config=cfg)
    assert "scanned 1 transcript (" in r.stdout, r.stdout
    ws = tmp_path / "workspace"
    (ws / "MEMORY.md").write_text("# Memory\n## Only\n" + "- a line\n" * 3_000, encoding="utf-8")
    r = memoryd("sections", "MEMORY.md", config=cfg)
    assert "— 2 sections," in r.stdout and "; 1 hit" in r.stdout, r.stdout
    r = memoryd("retire", config=cfg)
    assert "would retire 1 section →" in r.stdout and "0 hits in 90 days" in r.stdout, r.stdout


def test_the_demo_promotion_candidates_are_not_all_recipes(demo: Path) -> None:
    ws = json.loads(memoryd("status", "--json", config=demo).stdout)["state_db"]
    workspace = Path(ws).parent.parent / "workspace"
    notes = list(workspace.rglob("*.md"))
    with_recipe = [p for p in notes if "recipe" in p.read_text(encoding="utf-8")]
    assert len(with_recipe) <= 3, len(with_recipe)  # was 75 of 85
    doc = json.loads(memoryd("promote", "--json", "--no-scan", config=demo).stdout)
    reasons = {c["category_reason"] for c in doc["candidates"]}
    assert doc["candidates"] and "procedure words ('recipe')" not in reasons, reasons
    assert len({c["category"] for c in doc["candidates"]}) >= 2


def test_demo_size_builds_a_bigger_install(tmp_path: Path) -> None:
    r = memoryd("demo", "--size", "8", str(tmp_path / "big"))
    assert r.returncode == 0, r.stderr
    size = sum(
        p.stat().st_size for p in (tmp_path / "big" / "state").rglob("*.jsonl") if p.is_file()
    )
    assert size > 6 << 20, size  # about 8 MB, where the small demo is 0.5 MB
    scanned = re.search(r"scanned \d+ transcripts .*: (\d+) new hits", r.stdout)
    assert scanned and int(scanned[1]) > 2000, r.stdout


def test_expire_no_schedule_takes_the_yes_back(fresh: Path) -> None:
    r = memoryd("expire", "--schedule", config=fresh)
    assert r.returncode == 0 and r.stdout.startswith("yes recorded")
    status = json.loads(memoryd("status", "--json", config=fresh).stdout)
    assert status["expire"]["consent"]["given"] is True
    r = memoryd("expire", "--no-schedule", config=fresh)
    assert r.returncode == 0 and r.stdout.startswith("yes taken back"), r.stdout
    status = json.loads(memoryd("status", "--json", config=fresh).stdout)
    assert status["expire"]["consent"]["given"] is False
    assert "taken back with `memoryd expire --no-schedule`" in memoryd(
        "status", config=fresh
    ).stdout
    # the scheduled run only reports again
    from memoryd.config import load_config as load
    from memoryd.config import resolve_paths
    from memoryd.jobs import expire as job
    from memoryd.store import Store

    cfg = load(fresh)
    paths = resolve_paths(cfg, {})
    store = Store.open(paths.db)
    try:
        result = job.run_scheduled(cfg, paths, store, NOW)
    finally:
        store.close()
    assert not result.moved
    r = memoryd("expire", "--no-schedule", config=fresh)
    assert r.stdout.startswith("no yes to take back")
    r = memoryd("expire", "--schedule", config=fresh)
    assert r.stdout.startswith("yes recorded"), "said again, it is a new yes"


def _bash_complete(script: str, *words: str) -> list[str]:
    """What bash's completion offers for the last of ``words`` (``memoryd`` first)."""
    line = " ".join(f"{w!r}" if w else "''" for w in words)
    probe = (
        f"source {script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}\n"
        '_memoryd; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    r = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [w for w in r.stdout.splitlines() if w]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completion_completes_commands_and_options(tmp_path: Path) -> None:
    r = memoryd("completion", "bash")
    assert r.returncode == 0, r.stderr
    script = tmp_path / "memoryd.bash"
    script.write_text(r.stdout, encoding="utf-8")
    assert _bash_complete(str(script), "memoryd", "hi") == ["hits"]
    assert _bash_complete(str(script), "memoryd", "sta") == ["status"]
    assert _bash_complete(str(script), "memoryd", "service", "in") == ["install"]
    assert _bash_complete(str(script), "memoryd", "expire", "--no-") == [
        "--no-scan",
        "--no-schedule",
    ]
    assert "--days" in _bash_complete(str(script), "memoryd", "--config", "x.toml", "hits", "--")
    assert _bash_complete(str(script), "memoryd", "completion", "z") == ["zsh"]


def test_the_completion_follows_the_parser() -> None:
    """Every command and every option of every command is in the script (generated)."""
    from memoryd.cli import _subparsers, build_parser

    script = memoryd("completion", "bash").stdout
    parser = build_parser()
    for command in _subparsers(parser):
        for action in command._actions:
            for option in action.option_strings:
                if option.startswith("--"):
                    assert option in script, (command.prog, option)
    zsh = memoryd("completion", "zsh").stdout
    assert zsh.startswith("#compdef memoryd\n") and "bashcompinit" in zsh
    assert script in zsh


@pytest.mark.skipif(shutil.which("zsh") is None, reason="needs zsh")
def test_zsh_loads_the_completion(tmp_path: Path) -> None:
    script = tmp_path / "_memoryd"
    script.write_text(memoryd("completion", "zsh").stdout, encoding="utf-8")
    r = subprocess.run(
        ["zsh", "-f", "-c", f"autoload -U compinit && compinit -u; source {script}; "
         "print ${_comps[memoryd]}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0 and "_bash_complete" in r.stdout, r.stdout + r.stderr


def test_the_completion_command_needs_no_openclaw(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    r = subprocess.run(
        [sys.executable, "-m", "memoryd", "completion", "bash"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0 and "complete -o default -F _memoryd memoryd" in r.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_dry_run_never_records_a_yes_or_takes_it_back(fresh: Path) -> None:
    """``--dry-run`` changes nothing, so beside ``--schedule`` or ``--no-schedule`` (which
    record an answer) it is refused, and the answer stays as it was."""
    for flag in ("--schedule", "--no-schedule"):
        r = memoryd("expire", "--dry-run", flag, config=fresh)
        assert r.returncode == 2 and f"give {flag} without --dry-run" in r.stderr, r.stderr
        status = json.loads(memoryd("status", "--json", config=fresh).stdout)
        assert status["expire"]["consent"]["given"] is False
    assert memoryd("expire", "--schedule", config=fresh).returncode == 0
    assert memoryd("expire", "--dry-run", "--no-schedule", config=fresh).returncode == 2
    status = json.loads(memoryd("status", "--json", config=fresh).stdout)
    assert status["expire"]["consent"]["given"] is True


def test_a_name_too_long_for_the_file_system_is_the_users_input(fresh: Path) -> None:
    """``explain`` and ``mark`` of a 300-character name: the file system refuses the name,
    which is the user's input (exit 2, one line naming it), not a fault of memoryd's."""
    long_name = "memory/" + "a" * 300 + ".md"
    for command in ("explain", "mark"):
        r = memoryd(command, long_name, config=fresh)
        assert r.returncode == 2, (command, r.returncode, r.stderr)
        assert "File name too long" in r.stderr and r.stderr.count("\n") == 1
    # Only a name too long: a fault of memoryd's own file whose name ends alike (the note's
    # archived copy, a folder named like an option's value) is still memoryd's, exit 1.
    import errno

    from memoryd.cli import _names_user_path

    archived = "/ws/memory-archive/2026-01/memory/x.md"
    for fault, argv, users in (
        (errno.EIO, ["explain", "memory/x.md"], False),
        (errno.EACCES, ["retire", "--force", "MEMORY.md"], False),
        (errno.ENAMETOOLONG, ["explain", "memory/x.md"], True),
        (errno.ENAMETOOLONG, ["sections", "MEMORY.md", "--agent", "main"], False),
    ):
        name = archived if argv[0] != "retire" else "/ws/memory-archive/retired/MEMORY.md"
        assert _names_user_path(OSError(fault, os.strerror(fault), name), argv) is users, argv


def test_a_command_run_in_a_folder_deleted_since_answers_and_does_not_crash(
    demo: Path, tmp_path: Path
) -> None:
    """`cd /tmp/x`, the folder removed (a demo made again in its place), then `memoryd sections
    MEMORY.md`: Path.cwd() raised, and the error handler raised again, two tracebacks."""
    gone = tmp_path / "gone"
    gone.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    env.update(MEMORYD_NOW=str(NOW), MEMORYD_CONFIG=str(demo))
    script = (
        f"cd {gone} && rmdir {gone} && exec {sys.executable} -m memoryd sections MEMORY.md "
        "--no-scan"
    )
    proc = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0 and "sections of MEMORY.md" in proc.stdout


def test_a_state_folder_memoryd_makes_is_private(tmp_path: Path) -> None:
    """The state database holds the words of every search the agent made and the text of the
    sections retire took; a state folder memoryd made under the usual umask 022 was 0755 and
    its state.db 0644, readable by every user of the machine. A folder it makes is 0700, as
    OpenClaw makes its own."""
    root = tmp_path / "d"
    assert memoryd("demo", str(root)).returncode == 0
    config = root / "memoryd.toml"
    private = tmp_path / "new-state"
    text = config.read_text(encoding="utf-8")
    config.write_text(re.sub(r"(?m)^dir = .*$", f"dir = '{private}'", text), encoding="utf-8")
    old = os.umask(0o022)
    try:
        r = memoryd("scan", config=config)
    finally:
        os.umask(old)
    assert r.returncode == 0, r.stderr
    assert (private / "state.db").is_file()
    assert private.stat().st_mode & 0o777 == 0o700


def _on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """What ``memoryd ARGS`` writes to a terminal (a real pty for stdout and stderr)."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "memoryd", *args], env=env,
                            stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)  # fmt: skip
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # (EIO: the process closed its end)
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(leader)
    return out.decode("utf-8", "replace")


def test_a_name_with_an_escape_sequence_is_shown_not_obeyed_on_a_terminal(fresh: Path) -> None:
    """A note named with an escape sequence (or a carriage return, or a right-to-left
    override) went to the terminal as it was: `hits` turned the rest of the screen red, a
    `\\r` hid what came before it. On a terminal each such character is written as its
    escape; piped, a script still gets the name as it is."""
    ws = fresh.parent / "workspace"
    name = "memory/a\x1b[31mred\rX\u202eq.md"
    (ws / name).write_text("# odd\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    env.update(MEMORYD_NOW=str(NOW), MEMORYD_CONFIG=str(fresh))
    shown = _on_a_terminal(["hits", "--all", "--no-scan"], env)
    assert "memory/a\\x1b[31mred\\x0dX\\u202eq.md" in shown, shown
    assert "\x1b" not in shown and "\u202e" not in shown
    failed = _on_a_terminal(["explain", str(ws / (name + "x"))], env)
    assert "\\x1b[31m" in failed and "\x1b" not in failed, failed
    piped = memoryd("hits", "--all", "--no-scan", config=fresh)
    assert name in piped.stdout
