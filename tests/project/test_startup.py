"""Read commands start light: what ``python -X importtime -m memoryd …`` shows they import.

A person types ``memoryd status`` or ``memoryd hits`` and waits for the answer; importing the
daemon's scheduler and logging (APScheduler, structlog, watchdog) or the scanner would cost
them more than the answer does. Each command runs on a real generated install, in its own
process, and the modules it imported are read from ``-X importtime``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.commands.formats import json_dumps
from support.corpus import generate_demo

NOW = 1_790_000_000.0
# Never on a read command's path.
HEAVY = (
    "structlog",
    "apscheduler",
    "watchdog",
    "memoryd.service.main",
    "memoryd.service.ingest_worker",
    "memoryd.service.job_runner",
    "memoryd.service.systemd",
    "memoryd.ingest.scan",
    "tzlocal",
)
# memoryd's modules that ``status`` and ``hits --no-scan`` do without (other commands' parts).
READ_SPARED = ("memoryd.signals", "memoryd.strength")
# Standard-library modules memoryd's own code does not import on those reads: each costs them a
# millisecond or more of a run of about fifty (dataclasses brings inspect, ast and dis; shutil
# brings bz2, lzma and zlib, for argparse's terminal width). The standard library may load one
# for itself, which memoryd does not choose (3.12+: zoneinfo -> sysconfig -> threading), so what
# counts is who imported it: a memoryd module, or the command's code at run time.
READ_SPARED_STDLIB = ("logging", "dataclasses", "inspect", "shutil", "threading", "signal")
# The scanner's parts: a read command that does not scan imports none of them.
SCANNER = (
    "memoryd.ingest.parser",
    "memoryd.ingest.events",
    "memoryd.ingest.result_paths",
    "memoryd.ingest.tool_names",
    "memoryd.ingest.timestamps",
    "memoryd.ingest.prescan",
    "memoryd.ingest.region_apply",
    "memoryd.ingest.tailer",
)


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A generated install, scanned once; the environment that points memoryd at it."""
    root = tmp_path_factory.mktemp("startup")
    truth = generate_demo(root / "corpus", now=NOW)
    cfg = root / "memoryd.toml"
    cfg.write_text(
        f"[openclaw]\nstate_dir = {json.dumps(str(truth.state_dir))}\n"
        f"workspace = {json.dumps(str(truth.workspace))}\n"
        f"[state]\ndir = {json.dumps(str(root / 'state'))}\n"
        '[schedule]\ntimezone = "Europe/Berlin"\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    env.update(MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))
    subprocess.run([sys.executable, "-m", "memoryd", "scan"], env=env, check=True, timeout=120)
    return env


def import_tree(env: dict[str, str], *args: str) -> tuple[dict[str, str | None], str]:
    """Each module ``memoryd ARGS`` imports, with the module whose import imported it (None:
    imported at run time, by the code then running), read from -X importtime; and what it
    printed. Only what the command imports: the interpreter's own start (site,
    sitecustomize, the .pth hooks of the venv) ends with runpy, before memoryd runs."""
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memoryd", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    tree = importers(r.stderr)
    assert "memoryd.cli" in tree  # the probe works
    return tree, r.stdout


def importers(importtime: str) -> dict[str, str | None]:
    """-X importtime's report as module -> importer. It lists a module when its import ends,
    after the modules that import imported, each one level (two spaces) deeper."""
    lines = [
        line.rsplit("|", 1)[1]
        for line in importtime.splitlines()
        if line.startswith("import time:") and "|" in line
    ]
    names = [field.strip() for field in lines]
    start = names.index("runpy") + 1 if "runpy" in names else 0
    tree: dict[str, str | None] = {}
    waiting: list[tuple[int, str]] = []  # listed, their importer not yet
    for field in lines[start:]:
        name, level = field.strip(), (len(field) - len(field.lstrip()) - 1) // 2
        while waiting and waiting[-1][0] > level:
            tree.setdefault(waiting.pop()[1], name)
        waiting.append((level, name))
    for _, name in waiting:
        tree.setdefault(name, None)
    return tree


def imported(env: dict[str, str], *args: str) -> tuple[set[str], str]:
    """The modules ``memoryd ARGS`` imports (from -X importtime), and what it printed."""
    tree, out = import_tree(env, *args)
    return set(tree), out


def is_stdlib(module: str) -> bool:
    top_name = module.split(".", 1)[0]
    return top_name in sys.stdlib_module_names or top_name.startswith("_sysconfigdata")


def top(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.parametrize(
    "args",
    [
        ["status"],
        ["status", "--json"],
        ["hits", "--no-scan"],
        ["hits", "--no-scan", "--json"],
        ["hits", "--no-scan", "--all", "--top", "3"],
        ["explain", "--no-scan", "MEMORY.md"],
        ["search", "--no-scan", "router"],
        ["expire", "--no-scan", "--dry-run"],
    ],
)
def test_read_commands_import_neither_the_daemon_stack_nor_the_scanner(
    install: dict[str, str], args: list[str]
) -> None:
    modules, _ = imported(install, *args)
    assert top(modules, HEAVY) == []
    assert top(modules, SCANNER) == []


@pytest.mark.parametrize(
    "args",
    [["status"], ["status", "--json"], ["hits", "--no-scan"], ["hits", "--no-scan", "--json"]],
)
def test_reading_does_not_load_orjson(install: dict[str, str], args: list[str]) -> None:
    """orjson's import pulls in uuid, dataclasses and inspect; a report's JSON needs none."""
    modules, _ = imported(install, *args)
    assert "orjson" not in modules


@pytest.mark.parametrize(
    "args",
    [["status"], ["status", "--json"], ["hits", "--no-scan"], ["hits", "--no-scan", "--json"]],
)
def test_the_everyday_reads_import_only_what_they_use(
    install: dict[str, str], args: list[str]
) -> None:
    """Of memoryd, only the modules a read uses; of other packages, none at all (the daemon's
    scheduler, watcher and logging the least); and no standard-library module it can spare
    imported by memoryd itself. Which others the standard library loads varies by Python."""
    tree, out = import_tree(install, *args)
    assert top(set(tree), READ_SPARED) == []
    # json5 is the one other package a read may need: OpenClaw's own config (openclaw.json,
    # JSON5 in the demo) is read by every command, and JSON5 proper needs its parser.
    others = (m for m in tree if not m.startswith(("memoryd", "json5")) and not is_stdlib(m))
    assert sorted(others) == []
    by_memoryd = [
        f"{m} (by {tree[m] or 'the command at run time'})"
        for m in top(set(tree), READ_SPARED_STDLIB)
        if tree[m] is None or str(tree[m]).startswith("memoryd")
    ]
    assert by_memoryd == []
    assert out  # and they still answer


def test_the_import_tree_names_who_imported_each_module() -> None:
    """The probe's reading of -X importtime (3.13's, abridged): the interpreter's start is
    left out, a nested import has its importer, a module imported at run time has none."""
    report = "\n".join(
        f"import time: {self_us:>9} | {self_us:>10} | {name}"
        for self_us, name in [
            (300, "  sitecustomize"),
            (900, "site"),
            (300, "runpy"),
            (90, "memoryd"),
            (80, "        _weakrefset"),
            (90, "      threading"),
            (70, "    sysconfig"),
            (60, "  zoneinfo._tzpath"),
            (50, "zoneinfo"),
            (40, "  json"),
            (30, "memoryd.health"),
            (20, "calendar"),
        ]
    )
    assert importers("import time: self [us] | cumulative | imported package\n" + report) == {
        "memoryd": None,
        "_weakrefset": "threading",
        "threading": "sysconfig",
        "sysconfig": "zoneinfo._tzpath",
        "zoneinfo._tzpath": "zoneinfo",
        "zoneinfo": None,
        "json": "memoryd.health",
        "memoryd.health": None,
        "calendar": None,
    }


plain = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text() | st.integers(0, 99), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(plain, st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=3))
def test_json_output_is_what_orjson_wrote(doc: object, floats: list[float]) -> None:
    """Byte for byte on plain documents; numbers with an exponent may be spelled otherwise."""
    import orjson

    want = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    assert json_dumps(doc) == want
    assert orjson.loads(json_dumps({"x": doc, "f": floats})) == {
        "x": orjson.loads(want),
        "f": floats,
    }
    # what the standard encoder refuses still comes out, as orjson writes it
    assert json_dumps({"nan": float("nan")}) == '{\n  "nan": null\n}'


def test_reading_openclaw_json_does_not_load_orjson(install: dict[str, str]) -> None:
    """Without a workspace in memoryd's config, it comes from openclaw.json (JSON5 here)."""
    cfg = Path(install["MEMORYD_CONFIG"])
    plain = cfg.with_name("no-workspace.toml")
    plain.write_text(
        "\n".join(ln for ln in cfg.read_text().splitlines() if not ln.startswith("workspace")),
        encoding="utf-8",
    )
    env = dict(install, MEMORYD_CONFIG=str(plain))
    for args in (["status"], ["hits", "--no-scan", "--json"]):
        modules, out = imported(env, *args)
        assert "orjson" not in modules
    assert json.loads(out)["files"]  # the workspace was found: its files are listed


def test_status_still_says_when_each_job_runs_next(install: dict[str, str]) -> None:
    """Without APScheduler: the next runs come from the pure time rules (``memoryd.timerules``),
    in the configured zone, and nothing of the daemon's package is imported."""
    modules, out = imported(install, "status", "--json")
    assert top(modules, ("memoryd.service",)) == []
    assert "memoryd.timerules" in modules
    doc = json.loads(out)
    assert doc["timezone"] == "Europe/Berlin"
    assert doc["hits"]["total"] > 0
    # NOW is 2026-09-21T14:13:20Z; defaults: organize hourly at :05, reflect 03:30 daily,
    # expire 04:00 on the 1st (Berlin is UTC+2 in September).
    assert {name: job["next_run"] for name, job in doc["jobs"].items()} == {
        "organize": "2026-09-21T15:05:00Z",
        "reflect": "2026-09-22T01:30:00Z",
        "expire": "2026-10-01T02:00:00Z",
    }


def test_the_scan_itself_still_works_from_the_same_entry_point(install: dict[str, str]) -> None:
    """Guard for the probe: a command that does scan does import the scanner."""
    modules, _ = imported(install, "hits")
    assert "memoryd.ingest.scan" in modules


# ``memoryd ARGS`` through the console script's function, with a module-level object whose
# finaliser says when Python tore the process down, an atexit function, and a thread.
ENTRY = """
import atexit, sys, threading
class Witness:
    def __del__(self):
        sys.stderr.write("torn down\\n")
witness = Witness()
atexit.register(lambda: sys.stderr.write("atexit ran\\n"))
if sys.argv[1] == "thread":  # a thread the exit must wait for: it reads stdin to its end
    def late():
        sys.stdin.read()
        sys.stderr.write("thread finished\\n")
    threading.Thread(target=late).start()
sys.argv.pop(1)
from memoryd import command
command()
"""


def run_entry(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("args", [["status"], ["hits", "--no-scan", "--json"]])
def test_a_read_ends_without_python_s_teardown_and_loses_nothing(
    install: dict[str, str], args: list[str]
) -> None:
    """The whole answer, the exit code and the atexit functions; only the teardown skipped."""
    r = run_entry(install, "plain", *args)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == ["atexit ran"]
    assert r.stdout == imported(install, *args)[1]  # as `python -m memoryd` printed it


def test_a_scan_ends_at_once_with_everything_it_counted_kept(install: dict[str, str]) -> None:
    """A scan may skip the teardown too: its database is committed and closed before that.

    The fixture's install was scanned once already; a fresh state scanned through the quick
    exit must hold the same hits, and a scan after it must find nothing new.
    """
    cfg = Path(install["MEMORYD_CONFIG"])
    fresh = cfg.with_name("fresh-state.toml")
    fresh.write_text(
        cfg.read_text(encoding="utf-8").replace(
            json.dumps(str(cfg.with_name("state"))), json.dumps(str(cfg.with_name("fresh")))
        ),
        encoding="utf-8",
    )
    env = dict(install, MEMORYD_CONFIG=str(fresh))
    r = run_entry(env, "plain", "scan", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["new_hits"] > 0
    assert r.stderr.splitlines() == ["atexit ran"]  # no "torn down": the teardown was skipped
    again = subprocess.run(
        [sys.executable, "-m", "memoryd", "scan", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(again.stdout)["new_hits"] == 0
    assert (
        imported(env, "hits", "--no-scan", "--json")[1]
        == imported(install, "hits", "--no-scan", "--json")[1]
    )


def test_a_command_that_writes_exits_as_usual(install: dict[str, str]) -> None:
    """A command that does not say it may end at once (here organize's dry run: the
    deciding commands, expire's dry run among them, do) tears down."""
    r = run_entry(install, "plain", "organize", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-2:] == ["atexit ran", "torn down"]


def test_a_read_waits_for_a_running_thread(install: dict[str, str]) -> None:
    """A thread still running when the command is done (here: until its stdin ends, which
    the test closes only once the whole answer is out) is waited for, as by the usual exit."""
    p = subprocess.Popen(
        [sys.executable, "-u", "-c", ENTRY, "thread", "status", "--json"],
        env=install,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout is not None and p.stdin is not None
        lines = []
        while not lines or lines[-1] != "}\n":  # the document is complete: main has finished
            line = p.stdout.readline()
            assert line, "the answer ended early"
            lines.append(line)
        p.stdin.close()
        p.wait(timeout=120)
        err = p.stderr.read() if p.stderr else ""
    finally:
        p.kill()
    assert p.returncode == 0, err
    # The thread was waited for, then the exit ran. Usually the thread still runs when the
    # command is done, and the exit is the usual one ("torn down"); on a loaded machine the
    # test may close stdin and the thread finish before the command looks, which then may
    # end at once: both keep the order that matters.
    assert err.splitlines() in (
        ["thread finished", "atexit ran", "torn down"],
        ["thread finished", "atexit ran"],
    )
    assert json.loads("".join(lines))["hits"]["total"] > 0


@pytest.mark.parametrize("args", [["status"], ["hits", "--no-scan", "--json"]])
def test_a_read_into_a_closed_pipe_exits_quietly(install: dict[str, str], args: list[str]) -> None:
    """``memoryd status | true``: the reader is gone before anything is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "memoryd", *args],
            env=install,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert r.returncode == 0
    assert "Traceback" not in r.stderr


def _closing(fd: int) -> Callable[[], None]:
    return lambda: os.close(fd)


@pytest.mark.parametrize("args", [["status"], ["hits", "--no-scan", "--json"]])
def test_a_read_with_its_stdout_or_stderr_closed_exits_as_before(
    install: dict[str, str], args: list[str]
) -> None:
    """``memoryd status >&-`` (a cron line, a service with no output): Python then has no
    ``sys.stdout`` (None) and the answer goes nowhere, as it always did; the quick exit must
    not fail on the missing stream (it did: a traceback and exit 1). With stderr closed,
    the whole answer still comes out on stdout, exit 0."""
    no_stdout = subprocess.run(
        [sys.executable, "-m", "memoryd", *args],
        env=install,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        preexec_fn=_closing(1),
    )
    assert no_stdout.returncode == 0, no_stdout.stderr
    assert no_stdout.stderr == ""
    no_stderr = subprocess.run(
        [sys.executable, "-m", "memoryd", *args],
        env=install,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        timeout=120,
        preexec_fn=_closing(2),
    )
    assert no_stderr.returncode == 0
    assert no_stderr.stdout == imported(install, *args)[1]


# ``inject --session --json`` is what the OpenClaw plugin runs while a session's first turn
# waits (issue 21: at most 150 ms p95 added to a turn); memoryd.commands.session_inject
# answers it without the command line's parser, the state database or the other commands.
INJECT_SPARED = (
    "argparse",
    "sqlite3",
    "dataclasses",
    "inspect",
    "shutil",
    "logging",
    "memoryd.cli",
    "memoryd.store",
    "memoryd.commands.tiers",
    "memoryd.tierstore.recall",
    "memoryd.tierstore.search",
    "memoryd.tierstore.organize",
)
SESSION = ("inject", "--session", "--json")


@pytest.fixture(scope="module")
def hot_install(
    install: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """The install with two notes in the tier store's hot/, one of them already in MEMORY.md."""
    cfg = Path(install["MEMORYD_CONFIG"])
    text = cfg.read_text(encoding="utf-8")
    workspace = Path(json.loads(text.split("workspace = ", 1)[1].splitlines()[0]))
    hot = tmp_path_factory.mktemp("tiers") / "hot"
    hot.mkdir()
    (hot / "deploy.md").write_text("# Deploy\n\nFreeze main at 14:00 before the release.\n")
    promoted = "The staging database is rebuilt every Sunday night from the backup."
    (hot / "staging.md").write_text(f"# Staging\n\n{promoted}\n")
    memory = workspace / "MEMORY.md"
    if promoted not in memory.read_text(encoding="utf-8"):
        memory.write_text(memory.read_text(encoding="utf-8") + f"\n{promoted}\n")
    tiers = cfg.with_name("tiers.toml")
    tiers.write_text(text + f"[tiers]\nroot = {json.dumps(str(hot.parent))}\n", encoding="utf-8")
    return dict(install, MEMORYD_CONFIG=str(tiers))


def session_inject(
    env: dict[str, str], *args: str
) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memoryd", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in r.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return modules, r


@pytest.mark.parametrize(
    "args",
    [
        [*SESSION],
        ["inject", "--json", "--session", "--agent", "main"],
        ["--config", "CONFIG", *SESSION, "--max-chars", "60"],
        ["inject", "--config=CONFIG", "--session", "--agent=main", "--json"],
    ],
)
def test_the_plugins_inject_is_answered_without_the_command_line(
    hot_install: dict[str, str], args: list[str]
) -> None:
    """Light, and the same document, byte for byte, as the full command line prints
    (``--debug`` takes that path: the short one hands every other option to it)."""
    args = [a.replace("CONFIG", hot_install["MEMORYD_CONFIG"]) for a in args]
    modules, r = session_inject(hot_install, *args)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "memoryd.commands.session_inject" in modules  # the probe works
    assert top(modules, INJECT_SPARED) == []
    assert top(modules, HEAVY + SCANNER) == []
    full_modules, full = session_inject(hot_install, "--debug", *args)
    assert "memoryd.cli" in full_modules
    assert r.stdout == full.stdout
    doc = json.loads(r.stdout)
    assert doc["included"] == ["deploy.md"][: len(doc["included"])]
    assert doc["already_in_bootstrap"] == ["staging.md"]  # said in MEMORY.md: left out
    assert doc["session"]["watch"]  # what the plugin checks before reusing this answer
    if "60" in args:
        assert doc["max_chars"] == 60 and doc["truncated"]


@pytest.mark.parametrize(
    ("args", "config", "expect"),
    [
        ([*SESSION, "--max-chars", "-5"], None, "must not be negative"),
        ([*SESSION, "--bogus"], None, "unrecognized arguments: --bogus"),
        ([*SESSION], "this is [[[ not toml\n", "invalid TOML"),
        ([*SESSION], "[tiers]\nsession_inject_max_chars = 'lots'\n", "session_inject_max_chars"),
    ],
)
def test_what_the_short_path_does_not_answer_fails_as_before(
    hot_install: dict[str, str],
    tmp_path: Path,
    args: list[str],
    config: str | None,
    expect: str,
) -> None:
    """A bad option or configuration: the full command line's message and exit code 2,
    and nothing on stdout for the plugin to take for an answer."""
    env = dict(hot_install)
    if config is not None:
        bad = tmp_path / "bad.toml"
        bad.write_text(config, encoding="utf-8")
        env["MEMORYD_CONFIG"] = str(bad)
    r = subprocess.run(
        [sys.executable, "-m", "memoryd", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2
    assert r.stdout == ""
    assert expect in r.stderr


def test_the_short_path_refuses_a_bad_clock_as_the_command_line_does(
    hot_install: dict[str, str],
) -> None:
    env = dict(hot_install, MEMORYD_NOW="yesterday")
    r = subprocess.run(
        [sys.executable, "-m", "memoryd", *SESSION],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert "MEMORYD_NOW" in r.stderr
