"""A new user's first hour (issue 11, items 5, 10, 11, 12, 14), as they meet it: the real CLI
(its ``main``, run in the pytest process by :mod:`support.inprocess`; a bug's traceback in a
real one).

Hostile or mistaken configurations are refused with exit 2 and the key named; nothing is
written before an OpenClaw install is found; input errors are one line, not a traceback;
and the demo leaves a tier store to try organize, recall and inject on.
"""

from __future__ import annotations

import json
import os
import plistlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from memoryd.commands.registry import COMMAND_GROUPS
from memoryd.config import Config, is_table
from support import transcripts as tx
from support.inprocess import memoryd as run_memoryd
from support.systemd import systemd_verify

DAY = 86400.0
NOW = tx.T0 + 40 * DAY
NO_INSTALL = "no OpenClaw state directory at"


def memoryd(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    config: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    full["MEMORYD_NOW"] = str(NOW)
    if config is not None:
        full["MEMORYD_CONFIG"] = str(config)
    full.update(env or {})
    return run_memoryd(args, env=full, cwd=cwd)  # in this process: what it says is the point


def one_line(stderr: str) -> str:
    """The message of a refusal: exactly one line, no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (with its bytes) and folder below ``root``."""
    out: dict[str, bytes | None] = {}
    for p in sorted(root.rglob("*")):
        out[p.relative_to(root).as_posix()] = p.read_bytes() if p.is_file() else None
    return out


@pytest.fixture
def install(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A state dir, a workspace with old notes, a config file; one search hit recorded."""
    sessions, ws, cfg = tx.make_install(
        tmp_path, ["MEMORY.md", "memory/2026-01-10.md", "memory/topic.md", "memory/old.md"]
    )
    (sessions / "s1.jsonl").write_bytes(
        tx.header("s1")
        + tx.call("a", ts=NOW - DAY - 1)
        + tx.result("a", tx.search_payload(["memory/topic.md"]), ts=NOW - DAY)
    )
    old = NOW - 90 * DAY
    for p in (ws / "memory").iterdir():
        os.utime(p, (old, old))
    return sessions, ws, cfg


def with_config(cfg: Path, extra: str) -> Path:
    cfg.write_text(cfg.read_text() + "\n" + extra + "\n", encoding="utf-8")
    return cfg


# --------------------------------------------------------------------------- item 5


@pytest.mark.parametrize(
    "archive_dir",
    [
        "memory/../../state/memory_fs/forgotten",  # the tier store's forgotten/ (found outside)
        "../elsewhere/{month}",
        "/etc",
        "/tmp/archive/{month}",
        "",
        ".",
        "./",
        "memory",
        "memory/",
        "./memory",
        "memory/{month}",
        "memory/{month}/old",
        "memory/{year}",
    ],
)
def test_an_archive_dir_that_leaves_or_folds_into_the_workspace_is_refused(
    install: tuple[Path, Path, Path], archive_dir: str
) -> None:
    _, ws, cfg = install
    with_config(cfg, f"[archive]\ndir = {json.dumps(archive_dir)}")
    before = tree(ws)
    r = memoryd("expire", "--force", config=cfg)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "archive.dir" in one_line(r.stderr)
    assert tree(ws) == before, "a refused configuration moves nothing"


def test_an_archive_inside_the_tier_store_is_refused(install: tuple[Path, Path, Path]) -> None:
    _, ws, cfg = install
    with_config(
        cfg, f'[tiers]\nroot = "{ws / "memory_fs"}"\n[archive]\ndir = "memory_fs/x/{{month}}"'
    )
    r = memoryd("expire", "--force", config=cfg)
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "archive.dir" in line and "tier store" in line


@pytest.mark.parametrize("archive_dir", ["memory/archive-{month}", "memory-archive/{month}"])
def test_the_seed_layout_and_the_default_stay_allowed(
    install: tuple[Path, Path, Path], archive_dir: str
) -> None:
    _, ws, cfg = install
    with_config(cfg, f"[archive]\ndir = {json.dumps(archive_dir)}")
    r = memoryd("expire", "--force", "--json", config=cfg)
    assert r.returncode == 0, r.stderr
    month = archive_dir.replace("{month}", "2026-")  # the run's month, whatever it is
    moved = json.loads(r.stdout)["archive"]
    assert moved and all(m["to"].startswith(month) for m in moved)
    assert all((ws / m["to"]).is_file() for m in moved)


def test_a_state_dir_inside_memory_is_refused(install: tuple[Path, Path, Path]) -> None:
    _, ws, cfg = install
    inside = ws / "memory" / ".memoryd"
    cfg.write_text(re.sub(r'(?m)^dir = ".*"$', f'dir = "{inside}"', cfg.read_text()))
    r = memoryd("hits", config=cfg)
    assert r.returncode == 2
    assert "state.dir" in one_line(r.stderr)
    assert not inside.exists()


def _float_keys(obj: object = None, prefix: str = "") -> list[tuple[str, str]]:
    obj = Config() if obj is None else obj
    out = []
    for name in obj._fields:  # type: ignore[attr-defined]
        if name == "source":
            continue
        value = getattr(obj, name)
        if is_table(type(value)):
            out += _float_keys(value, f"{prefix}{name}.")
        elif isinstance(value, float):
            out.append((prefix.rstrip("."), name))
    return out


@pytest.mark.parametrize("table,key", _float_keys())
@pytest.mark.parametrize("value", ["nan", "inf", "+inf", "-nan"])
def test_nan_and_inf_are_refused_in_every_float_key(
    tmp_path: Path, table: str, key: str, value: str
) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[{table}]\n{key} = {value}\n")
    r = memoryd("status", config=cfg, env={"HOME": str(tmp_path)})
    assert r.returncode == 2
    assert f"{table}.{key}" in one_line(r.stderr)


# --------------------------------------------------------------------------- item 10

EVERY_COMMAND = [
    ["scan"],
    ["hits"],
    ["hits", "--no-scan"],
    ["export", "hits-jsonl"],
    ["export", "hits-jsonl", "-"],
    ["expire"],
    ["expire", "--force"],
    ["reflect"],
    ["report"],
    ["report", "--open"],
    ["promote"],
    ["promote", "--apply"],
    ["search", "boat"],
    ["explain", "MEMORY.md"],
    ["sections", "MEMORY.md"],
    ["retire"],
    ["retire", "--force"],
    ["simulate"],
    ["simulate", "--json"],
    ["mark", "memory/x.md"],
    ["unmark", "memory/x.md"],
    ["pin"],
    ["pin", "memory/projects/*"],
    ["unpin", "memory/projects/*"],
    ["restore", "--last"],
    ["restore", "memory/x.md"],
    ["on-read", "memory/x.md"],
    ["on-search", "boat"],
    ["organize"],
    ["organize", "--dry-run"],
    ["recall", "boat"],
    ["recall", "--peek", "boat"],
    ["inject"],
    ["refresh"],
    ["refresh", "--dry-run"],
    ["status"],
    ["run"],
    ["service", "install", "--systemd"],
    ["service", "install", "--launchd"],
    ["plugin", "install", "--dry-run"],
]


def test_the_list_below_covers_every_command_but_demo() -> None:
    # (completion prints a shell script: it needs no OpenClaw either)
    assert {args[0] for args in EVERY_COMMAND} == set(COMMAND_GROUPS) - {"demo", "completion"}


@pytest.mark.parametrize("args", EVERY_COMMAND, ids=" ".join)
def test_without_openclaw_every_command_exits_2_and_writes_nothing(
    tmp_path: Path, args: list[str]
) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    expected = memoryd("hits", env=env, cwd=cwd)
    assert expected.returncode == 2 and NO_INSTALL in expected.stderr

    r = memoryd(*args, env=env, cwd=cwd)
    assert r.returncode == 2, r.stdout + r.stderr
    said = one_line(r.stderr)
    if args == ["run"]:  # the daemon, stderr not a terminal: its one line is a JSON log line
        said = "memoryd: " + json.loads(said)["message"]
    assert said == one_line(expected.stderr), "the same message as `hits`"
    assert list(home.iterdir()) == [] and list(cwd.iterdir()) == [], "nothing written"


def test_removing_the_service_needs_no_openclaw(tmp_path: Path) -> None:
    r = memoryd("service", "uninstall", "--systemd", env={"HOME": str(tmp_path)})
    assert r.returncode == 0 and "nothing to remove" in r.stdout
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- item 11


def test_an_export_into_a_missing_folder_is_one_line_exit_2(
    install: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, _, cfg = install
    target = tmp_path / "nonexistent" / "dir" / "f.jsonl"
    r = memoryd("export", "hits-jsonl", str(target), config=cfg)
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert str(target) in line and "No such file or directory" in line


def test_an_export_onto_a_folder_is_one_line_exit_2(
    install: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, _, cfg = install
    (tmp_path / "some-folder").mkdir()
    r = memoryd("export", "hits-jsonl", "some-folder/", config=cfg, cwd=tmp_path)
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "some-folder" in line and "directory" in line.lower()


def test_debug_adds_the_traceback_to_the_one_line(
    install: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, _, cfg = install
    target = tmp_path / "nonexistent" / "f.jsonl"
    r = memoryd("--debug", "export", "hits-jsonl", str(target), config=cfg)
    assert r.returncode == 2
    assert "Traceback (most recent call last)" in r.stderr and "FileNotFoundError" in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("memoryd: ")
    after = memoryd("export", "hits-jsonl", str(target), "--debug", config=cfg)
    assert after.returncode == 2 and "Traceback" in after.stderr, "--debug after the command too"


def test_a_fault_in_a_file_memoryd_manages_is_one_line_exit_1(
    install: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, _, cfg = install
    default_target = tmp_path / "md" / "hit_counts.jsonl"  # the fixture's state.dir
    default_target.mkdir(parents=True)
    r = memoryd("export", "hits-jsonl", config=cfg)
    assert r.returncode == 1, "not the user's input: a runtime fault"
    assert str(default_target) in one_line(r.stderr)


def test_demo_onto_an_existing_file_is_one_line_exit_2(tmp_path: Path) -> None:
    target = tmp_path / "FILE"
    target.write_text("mine\n")
    r = memoryd("demo", str(target), env={"HOME": str(tmp_path / "home")})
    assert r.returncode == 2
    assert str(target) in one_line(r.stderr)
    assert target.read_text() == "mine\n"


def test_a_config_that_is_not_utf8_is_one_line_exit_2(tmp_path: Path) -> None:
    cfg = tmp_path / "latin1.toml"
    cfg.write_bytes('[log]\nlevel = "info" # caf\xe9\n'.encode("latin-1"))
    r = memoryd("hits", config=cfg, env={"HOME": str(tmp_path)})
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert str(cfg) in line and "UTF-8" in line


@pytest.mark.parametrize(
    "name,value", [("MEMORYD_NOW", "garbage"), ("MEMORYD_CLOCK_OFFSET", "soon")]
)
def test_a_bad_clock_variable_is_one_line_exit_2(
    install: tuple[Path, Path, Path], name: str, value: str
) -> None:
    _, _, cfg = install
    r = memoryd("hits", config=cfg, env={"MEMORYD_NOW": "", name: value})
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert name in line and repr(value) in line


# --------------------------------------------------------------------------- item 12


def test_export_to_stdout_gives_the_same_records_as_to_a_file(
    install: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, _, cfg = install
    target = tmp_path / "hits.jsonl"
    assert memoryd("export", "hits-jsonl", str(target), config=cfg).returncode == 0
    to_file = [json.loads(line) for line in target.read_text().splitlines()]
    r = memoryd("export", "hits-jsonl", "-", config=cfg)
    assert r.returncode == 0, r.stderr
    to_stdout = [json.loads(line) for line in r.stdout.splitlines()]
    assert to_file and to_stdout == to_file
    assert {"agent", "session", "call_id", "score"} <= set(to_stdout[0])
    assert to_stdout[0]["agent"] == "main" and to_stdout[0]["call_id"] == "a"


def test_hits_top_also_shortens_the_never_hit_list(tmp_path: Path) -> None:
    names = [f"memory/n{i:02d}.md" for i in range(12)]
    _, _, cfg = tx.make_install(tmp_path, names)
    r = memoryd("hits", "--top", "3", config=cfg)
    assert r.returncode == 0, r.stderr
    listed = [line.strip() for line in r.stdout.splitlines() if line.startswith("        ")]
    assert listed == names[:3]
    assert "never hit (12 of 12 files; the first 3 shown)" in r.stdout
    doc = json.loads(memoryd("hits", "--top", "3", "--json", config=cfg).stdout)
    assert doc["never_hit"] == names[:3] and doc["never_hit_total"] == 12


def test_config_works_after_the_command(install: tuple[Path, Path, Path]) -> None:
    _, ws, cfg = install
    after = memoryd("hits", "--config", str(cfg))
    assert after.returncode == 0, after.stderr
    assert f"workspace {ws}" in after.stdout
    nested = memoryd("export", "hits-jsonl", "-", f"--config={cfg}")
    assert nested.returncode == 0 and json.loads(nested.stdout.splitlines()[0])["file"]
    before = memoryd("--config", str(cfg), "hits")
    assert before.stdout == after.stdout


def test_pin_and_inject_say_when_there_is_nothing(install: tuple[Path, Path, Path]) -> None:
    _, _, cfg = install
    pins = memoryd("pin", config=cfg)
    assert pins.returncode == 0 and "no pins" in pins.stdout
    inj = memoryd("inject", config=cfg)
    assert inj.returncode == 0
    assert inj.stdout == "", "stdout goes into the agent's session: nothing there"
    assert "nothing to inject" in inj.stderr


def test_restore_removes_the_archive_month_folder_it_empties(
    install: tuple[Path, Path, Path],
) -> None:
    _, ws, cfg = install
    done = json.loads(memoryd("expire", "--force", "--json", config=cfg).stdout)
    month_dirs = {ws / Path(m["to"]).parts[0] / Path(m["to"]).parts[1] for m in done["archive"]}
    assert len(month_dirs) == 1 and len(done["archive"]) >= 2
    first = done["archive"][0]["path"]
    r = memoryd("restore", first, config=cfg)
    assert r.returncode == 0, r.stderr
    (month,) = month_dirs
    assert month.is_dir(), "other notes are still archived there"
    r = memoryd("restore", "--last", config=cfg)
    assert r.returncode == 0, r.stderr
    assert not month.exists(), "an archive month folder left empty by restore goes"
    assert not (ws / "memory-archive").exists(), "and the archive folder its last month left"
    assert all((ws / m["path"]).is_file() for m in done["archive"])
    assert (ws / "memory").is_dir() and ws.is_dir()


def test_restore_keeps_an_archive_folder_that_still_holds_anything(
    install: tuple[Path, Path, Path],
) -> None:
    """Issue 22: emptied folders go, a folder with anything of the user's in it never does."""
    _, ws, cfg = install
    done = json.loads(memoryd("expire", "--force", "--json", config=cfg).stdout)
    assert done["archive"]
    mine = ws / "memory-archive" / "my-own-notes.txt"
    mine.write_text("kept by hand\n", encoding="utf-8")
    r = memoryd("restore", "--last", config=cfg)
    assert r.returncode == 0, r.stderr
    assert mine.read_text(encoding="utf-8") == "kept by hand\n"
    assert sorted(p.name for p in (ws / "memory-archive").iterdir()) == ["my-own-notes.txt"]


def test_recall_peek_does_not_claim_a_move(install: tuple[Path, Path, Path]) -> None:
    sessions, _, cfg = install
    warm = sessions.parent.parent.parent / "memory_fs" / "warm"
    warm.mkdir(parents=True)
    (warm / "boat.md").write_text("# Boat trip\n\nSaturday at the harbour.\n")
    r = memoryd("recall", "--peek", "harbour", config=cfg)
    assert r.returncode == 0, r.stderr
    assert "moved" not in r.stdout.splitlines()[0].replace("nothing moved", "")
    assert "nothing moved" in r.stdout
    assert (warm / "boat.md").is_file()


def _service_env(tmp_path: Path) -> dict[str, str]:
    state = tmp_path / "openclaw state"  # a space: quoted in the unit
    state.mkdir()
    (tmp_path / "oc-home").mkdir()
    return {
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / ".config"),
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_HOME": str(tmp_path / "oc-home"),
    }


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_service_install_carries_openclaw_variables_into_the_unit(tmp_path: Path) -> None:
    env = _service_env(tmp_path)
    r = memoryd("service", "install", "--systemd", env=env)
    assert r.returncode == 0, r.stderr
    unit = tmp_path / ".config" / "systemd" / "user" / "memoryd.service"
    text = unit.read_text()
    assert f'Environment="OPENCLAW_STATE_DIR={env["OPENCLAW_STATE_DIR"]}"' in text
    assert f"Environment=OPENCLAW_HOME={env['OPENCLAW_HOME']}" in text
    verified = systemd_verify(unit, tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert verified.stderr.strip() == "", verified.stderr


def test_service_install_carries_openclaw_variables_into_the_plist(tmp_path: Path) -> None:
    env = _service_env(tmp_path)
    r = memoryd("service", "install", "--launchd", env=env)
    assert r.returncode == 0, r.stderr
    plist = tmp_path / "Library" / "LaunchAgents" / "io.github.memoryd.plist"
    variables = plistlib.loads(plist.read_bytes())["EnvironmentVariables"]
    assert variables["OPENCLAW_STATE_DIR"] == env["OPENCLAW_STATE_DIR"]
    assert variables["OPENCLAW_HOME"] == env["OPENCLAW_HOME"]


def test_demo_into_a_non_empty_folder_refuses(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.md").write_text("keep me\n")
    r = memoryd("demo", str(target), env={"HOME": str(tmp_path / "home")})
    assert r.returncode == 2
    assert "not empty" in one_line(r.stderr)
    assert tree(target) == {"notes.md": b"keep me\n"}


# --------------------------------------------------------------------------- item 14


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo") / "d"
    r = memoryd("demo", str(root), env={"HOME": str(root.parent / "home")})
    assert r.returncode == 0, r.stderr
    assert "organize --dry-run" in r.stdout and "recall" in r.stdout and "inject" in r.stdout
    return root / "memoryd.toml"


def test_the_demo_tier_store_gives_organize_something_to_do(demo: Path) -> None:
    from memoryd.demo_notes import DEMO_TIER_PLAN

    r = memoryd("organize", "--dry-run", "--json", config=demo)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["counts"]["move"] >= 2 and doc["counts"]["gist"] >= 1
    acted_on = {a["note"] for a in doc["actions"]}
    assert set(DEMO_TIER_PLAN) <= acted_on
    ops = {(a["op"], a["src"], a["dst"]) for a in doc["actions"]}
    assert ("move", "hot/boat-trip.md", "warm/boat-trip.md") in ops
    assert ("gist", "warm/db-migration.md", "gist/db-migration.md") in ops
    assert ("move", "warm/vendor-evaluation.md", "forgotten/vendor-evaluation.md") in ops


def test_the_demo_tier_store_answers_recall_and_inject(demo: Path) -> None:
    inj = memoryd("inject", config=demo)
    assert inj.returncode == 0 and "## hot/deploy-checklist.md" in inj.stdout
    peek = memoryd("recall", "--peek", "kafka", config=demo)
    assert peek.returncode == 0 and "warm/kafka-upgrade.md" in peek.stdout
    r = memoryd("recall", "rate", "limits", "--json", config=demo)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["tier"] == "warm" and doc["shown"][0]["now"] == "hot/api-rate-limits.md"
    assert [x["status"] for x in doc["rotations"]] == ["done"]
    assert "payments API" in memoryd("inject", config=demo).stdout, "now hot: injected"


def test_the_demo_has_history_enough_for_simulate_to_replay(demo: Path) -> None:
    """A replayed run needs 30 days of hits before it and 60 after: the demo's history must
    hold several, and the rules must differ on them, or `simulate` shows a newcomer nothing."""
    r = memoryd("simulate", "--json", "--no-scan", config=demo)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["runs"]) >= 3, doc["runs"]
    by_name = {p["name"]: p for p in doc["policies"]}
    assert by_name["cut30"]["archived"] > by_name["likely"]["archived"] > 0
    assert by_name["cut30"]["strong_false_archives"] > 0, "some archive was later needed"
    assert by_name["none"]["archived"] == 0


@pytest.mark.parametrize(
    "raised,debug,code,traceback",
    [
        ("KeyError('bug')", False, 1, True),  # a bug: its traceback, always
        ("ValueError('bad value')", False, 1, False),  # a runtime fault: one line
        ("ValueError('bad value')", True, 1, True),  # ... and its traceback with --debug
        ("OSError(28, 'No space left on device')", False, 1, False),
    ],
)
def test_a_bug_keeps_its_traceback_a_fault_is_one_line(
    install: tuple[Path, Path, Path], raised: str, debug: bool, code: int, traceback: bool
) -> None:
    """The command is replaced by one that raises, in a real `memoryd` process."""
    _, _, cfg = install
    argv = ["--debug", "status"] if debug else ["status"]
    probe = (
        "import sys\n"
        "import memoryd.commands.service as s\n"
        "def broken(args, ctx):\n"
        f"    raise {raised}\n"
        "s.cmd_status = broken\n"
        "from memoryd.cli import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    env["MEMORYD_CONFIG"] = str(cfg)
    r = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert r.returncode == code
    assert ("Traceback (most recent call last)" in r.stderr) == traceback, r.stderr
    if not traceback:
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("memoryd: ")


_PIECES = ["memory", "archive", "archive-", "{month}", "..", ".", "/", "\\", "~", "x", "-", "{y}"]


@given(st.lists(st.sampled_from(_PIECES), max_size=8).map("".join))
# (about 40 % of the templates are refused; none accepted at all would fail: Unsatisfiable)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
def test_an_accepted_archive_dir_keeps_archived_notes_inside_and_apart(template: str) -> None:
    """Whatever archive.dir the validator lets through, an archived note lands inside the
    workspace, somewhere else than it was, and never in a bare memory/YYYY-MM/ folder."""
    import posixpath

    from memoryd.config import archive_dir_problem
    from memoryd.policy.expire import archive_relpath

    assume(archive_dir_problem(template) is None)
    for rel in ("memory/2026-01-05.md", "MEMORY.md", "memory/deep/x.md"):
        to = posixpath.normpath(archive_relpath(rel, template, "2026-11"))
        assert not to.startswith(("/", "../")) and to != "..", (template, to)
        assert to != rel, (template, to)
        parts = to.split("/")
        assert not (parts[0] == "memory" and parts[1] == "2026-11"), (template, to)


# --------------------------------------------------------------------------- issue 22


def test_a_misspelled_option_shows_the_commands_own_usage(
    install: tuple[Path, Path, Path],
) -> None:
    _, _, cfg = install
    r = memoryd("hits", "--dayz", "3", config=cfg)
    assert r.returncode == 2 and r.stdout == ""
    line = one_line(r.stderr)  # (issue 32: one line, as every other refusal)
    assert line.startswith("memoryd: unrecognized arguments: --dayz 3 (usage: memoryd hits ")
    assert "--days N" in line
    nested = memoryd("service", "install", "--bogus", config=cfg)
    assert nested.returncode == 2 and "(usage: memoryd service install" in one_line(nested.stderr)


def test_status_says_unread_bytes_as_scan_does(install: tuple[Path, Path, Path]) -> None:
    sessions, _, cfg = install
    assert memoryd("scan", config=cfg).returncode == 0
    with open(sessions / "s1.jsonl", "ab") as fh:
        fh.write(b'{"type": "custom", "pad": "' + b"x" * 3_000_000 + b'"}\n')
    status = memoryd("status", config=cfg)
    assert status.returncode == 0, status.stderr
    assert "unread:      2.9 MB" in status.stdout, status.stdout
    doc = json.loads(memoryd("status", "--json", config=cfg).stdout)
    assert doc["pending_bytes"] > 3_000_000  # the JSON keeps the exact number


def test_restoring_a_path_with_no_move_is_an_input_error(install: tuple[Path, Path, Path]) -> None:
    _, ws, cfg = install
    assert memoryd("expire", "--force", config=cfg).returncode == 0
    archived = sorted(p.name for p in ws.glob("memory-archive/*/memory/*.md"))
    assert archived
    r = memoryd("restore", "memory/nope.md", f"memory/{archived[0]}", config=cfg)
    assert r.returncode == 2 and r.stdout == ""
    assert one_line(r.stderr).startswith("memoryd: memory/nope.md: no journaled move")
    assert not (ws / "memory" / archived[0]).exists(), "nothing restored on a bad input"


def test_restore_last_names_the_run_and_never_reaches_back_past_it(
    install: tuple[Path, Path, Path],
) -> None:
    """Run twice, ``restore --last`` once undid a ``recall`` made before the expire run, saying
    nothing. It names the run it undoes, and once it has undone one it does not reach back."""
    sessions, _, cfg = install
    tiers = sessions.parent.parent.parent / "memory_fs"
    (tiers / "warm").mkdir(parents=True)
    (tiers / "warm" / "boat.md").write_text("# Boat\nketch Albatross\n", encoding="utf-8")
    assert memoryd("recall", "Albatross", config=cfg).returncode == 0
    assert (tiers / "hot" / "boat.md").is_file()
    forced = json.loads(memoryd("expire", "--force", "--json", config=cfg).stdout)
    assert forced["archive"]
    first = memoryd("restore", "--last", config=cfg)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("undoing the expire run of "), first.stdout
    assert f"({len(forced['archive'])} files; expire:" in first.stdout
    again = memoryd("restore", "--last", "--json", config=cfg)
    doc = json.loads(again.stdout)
    assert again.returncode == 1 and doc["restored"] == [] and "undoing" not in doc
    error = doc["errors"][0]["error"]
    assert "already undid expire" in error and "does not reach back to the recall run" in error
    assert (tiers / "hot" / "boat.md").is_file(), "the recall stays done"
    plain = memoryd("restore", "--last", config=cfg)
    assert "memoryd restore PATH" in plain.stderr


def test_the_demo_in_a_relative_folder_with_a_space_works_from_anywhere(tmp_path: Path) -> None:
    """``memoryd demo "my demo"`` from its parent: the config it writes names absolute folders
    (it worked only from that parent), and the lines it prints paste into a shell whole."""
    import shlex

    home = tmp_path / "home"
    home.mkdir()
    r = memoryd("demo", "my demo", cwd=tmp_path, env={"HOME": str(home)})
    assert r.returncode == 0, r.stderr
    config = tmp_path / "my demo" / "memoryd.toml"
    text = config.read_text(encoding="utf-8")
    assert f"{tmp_path / 'my demo'}" in text and "'my demo" not in text
    tried = [ln.split("#")[0].strip() for ln in r.stdout.splitlines() if "memoryd --config" in ln]
    assert tried
    for line in tried:
        argv = shlex.split(line.removeprefix("$ "))
        assert argv[:3] == ["memoryd", "--config", str(config)], line
    elsewhere = memoryd("--config", str(config), "hits", "--no-scan", cwd=home)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert "memory hits" in elsewhere.stdout
