"""Configuration: the documented file, validation messages and exit codes, discovery."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memoryd.config import (
    Config,
    ConfigError,
    discover_state_dir,
    is_table,
    load_config,
    parse_config,
    resolve_paths,
)
from support import config_reference
from support.inprocess import memoryd as run_memoryd

REPO = Path(__file__).resolve().parents[2]


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    full_env.update(env or {})
    return run_memoryd(args, env=full_env, cwd=cwd)


def schema_keys(obj: object = None, prefix: str = ""):
    """Every key of the configuration schema, dotted (``notify.telegram.token``)."""
    obj = Config() if obj is None else obj
    for name in obj._fields:
        if name == "source":
            continue
        value = getattr(obj, name)
        if is_table(type(value)):
            yield from schema_keys(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


def test_documented_config_is_exactly_the_defaults():
    """config/memoryd.toml lists every key with its default: nothing missing, nothing stale."""
    cfg = load_config(str(REPO / "config" / "memoryd.toml"))
    assert cfg._replace(source="") == Config()
    text = (REPO / "config" / "memoryd.toml").read_text()

    for dotted in schema_keys():
        key = dotted.rsplit(".", 1)[1]
        assert f"\n{key} = " in text, f"{dotted} is not documented in config/memoryd.toml"


@pytest.mark.parametrize(
    "doc,message",
    [
        ({"openclaw": {"agentz": ["main"]}}, "unknown key 'openclaw.agentz'"),
        ({"bogus": {}}, "unknown key 'bogus'"),
        ({"openclaw": {"agents": "main"}}, "openclaw.agents: expected a list"),
        ({"expire": {"max_hits": "2"}}, "expire.max_hits: expected an integer"),
        ({"expire": {"max_hits": -1}}, "expire.max_hits: must not be negative"),
        ({"expire": {"max_hits": True}}, "expire.max_hits: expected an integer"),
        ({"score": {"keyword_weight": "high"}}, "score.keyword_weight: expected a number"),
        ({"daemon": {"polling": "yes"}}, "daemon.polling: expected true or false"),
        ({"log": {"level": "loud"}}, "log.level: must be one of"),
        ({"openclaw": "x"}, "openclaw: expected a table"),
        ({"notify": {"telegram": {"tokn": "x"}}}, "unknown key 'notify.telegram.tokn'"),
        ({"schedule": {"timezone": "Mars/Olympus"}}, "schedule.timezone: unknown time zone"),
        ({"schedule": {"expire": "monthly"}}, "schedule.expire: 'monthly' is not a cron"),
        ({"schedule": {"organize": "5 * * *"}}, "schedule.organize: '5 * * *' is not a cron"),
        ({"schedule": {"expire": "0 0 31 2 *"}}, "schedule.expire: '0 0 31 2 *' never fires"),
        ({"schedule": {"reflect": "0 0 30 2 *"}}, 'no such day in any year); write "off"'),
        ({"daemon": {"rescan_seconds": 0}}, "daemon.rescan_seconds: must be at least 1 seconds"),
        ({"daemon": {"polling_interval": 0}}, "daemon.polling_interval: must be at least 0.1"),
        # (1e10 s passed, then the daemon's waits overflowed: a restart loop under systemd)
        ({"daemon": {"rescan_seconds": 1e10}}, "daemon.rescan_seconds: at most 2,592,000"),
        ({"daemon": {"polling_interval": 1e10}}, "daemon.polling_interval: at most 2,592,000"),
        ({"tiers": {"summarizer_timeout": 1e12}}, "tiers.summarizer_timeout: at most"),
        ({"archive": {"dir": "a\0b"}}, "archive.dir: 'a\\x00b' holds a NUL character"),
        ({"openclaw": {"agents": ["ma\0in"]}}, "openclaw.agents: 'ma\\x00in' holds a NUL"),
    ],
)
def test_invalid_values_name_the_key(doc, message):
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    assert message in str(err.value)


def test_broken_config_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[expire]\nmax_hits = 'two'\n")
    r = run("--config", str(bad), "hits")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0
    assert "expire.max_hits" in r.stderr

    bad.write_text("[expire\nmax_hits = 2\n")
    r = run("scan", env={"MEMORYD_CONFIG": str(bad)})
    assert r.returncode == 2 and "invalid TOML" in r.stderr and str(bad) in r.stderr

    r = run("--config", str(tmp_path / "nope.toml"), "scan")
    assert r.returncode == 2 and "not found" in r.stderr


def test_what_is_no_config_file_is_refused_at_once_with_exit_2(tmp_path):
    """``/dev/zero`` would be read until memory runs out, and nesting deeper than the parser's
    stack end in a traceback: each is one line, exit 2, naming the file. A pipe with a
    writer (``--config <(…)``) is read like a file."""
    import threading

    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 2000 + "]" * 2000 + "\n")
    big = tmp_path / "big.toml"
    big.write_text("# padding\n" * 120_000)
    for path, said in ((Path("/dev/zero"), "larger than 1 MiB"),
                       (deep, "invalid TOML: nested too deeply"), (big, "larger than 1 MiB"),
                       (tmp_path, "is a directory")):  # fmt: skip
        r = run("--config", str(path), "status")
        assert r.returncode == 2, (path, r.stderr)
        assert f"config file {path}: {said}" in r.stderr and r.stderr.count("\n") == 1, r.stderr

    pipe = tmp_path / "pipe.toml"
    os.mkfifo(pipe)
    writer = threading.Thread(target=pipe.write_text, args=("[expire]\nmax_hits = 'two'\n",))
    writer.start()
    r = run("--config", str(pipe), "status")
    writer.join(timeout=30)
    assert r.returncode == 2 and "expire.max_hits: expected an integer" in r.stderr, r.stderr


def test_an_openclaw_json_that_cannot_be_read_is_never_taken_for_a_missing_one(tmp_path):
    """Missing, OpenClaw's defaults apply; but one that is there and cannot be read (a folder,
    a FIFO, nested past the parser's stack, a device) would send discovery to
    ``~/.openclaw/workspace``: exit 2 with the reason, as for one that does not parse."""
    state = tmp_path / "state"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    oc = state / "openclaw.json"
    env = {"OPENCLAW_STATE_DIR": str(state), "HOME": str(tmp_path / "home")}
    oc.mkdir()
    r = run("hits", "--no-scan", env=env)
    assert r.returncode == 2 and "not a regular file" in r.stderr and str(oc) in r.stderr
    oc.rmdir()
    oc.write_text("[" * 100_000 + "]" * 100_000)
    r = run("status", env=env)
    assert r.returncode == 2 and "nested too deeply" in r.stderr, r.stderr
    oc.unlink()
    os.mkfifo(oc)
    r = run("hits", "--no-scan", env=env)
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr
    r = run("hits", "--no-scan", env={**env, "OPENCLAW_CONFIG_PATH": "/dev/zero"})
    assert r.returncode == 2 and "/dev/zero" in r.stderr and "not a regular file" in r.stderr


def test_missing_directories_are_config_errors(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[openclaw]\nstate_dir = "{tmp_path / "nowhere"}"\n')
    r = run("--config", str(cfg), "scan")
    assert r.returncode == 2 and "openclaw.state_dir" in r.stderr
    (tmp_path / "st").mkdir()
    cfg.write_text(
        f'[openclaw]\nstate_dir = "{tmp_path / "st"}"\nworkspace = "{tmp_path / "nows"}"\n'
    )
    r = run("--config", str(cfg), "hits")
    assert r.returncode == 2 and "openclaw.workspace" in r.stderr


def test_no_openclaw_install_says_so_and_creates_nothing(tmp_path):
    r = run("scan", env={"HOME": str(tmp_path)})
    assert r.returncode == 2
    assert "no OpenClaw state directory" in r.stderr and "memoryd demo" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_bad_usage_exits_2():
    assert run("hits", "--days", "0").returncode == 2
    assert run("nosuchcommand").returncode == 2


def test_state_dir_discovery_order(tmp_path):
    home = tmp_path
    assert discover_state_dir({"HOME": str(home)}) == home / ".openclaw"
    (home / ".moltbot").mkdir()
    assert discover_state_dir({"HOME": str(home)}) == home / ".moltbot"
    (home / ".clawdbot").mkdir()
    assert discover_state_dir({"HOME": str(home)}) == home / ".clawdbot"
    (home / ".openclaw").mkdir()
    assert discover_state_dir({"HOME": str(home)}) == home / ".openclaw"
    other = tmp_path / "oh"
    (other / ".openclaw").mkdir(parents=True)
    assert (
        discover_state_dir({"HOME": str(home), "OPENCLAW_HOME": str(other)}) == other / ".openclaw"
    )
    env = {"HOME": str(home), "CLAWDBOT_STATE_DIR": "/x/legacy"}
    assert discover_state_dir(env) == Path("/x/legacy")
    env["OPENCLAW_STATE_DIR"] = "/x/new"
    assert discover_state_dir(env) == Path("/x/new")


def test_workspaces_from_openclaw_json5(tmp_path):
    state = tmp_path / ".openclaw"
    for agent in ("main", "work", "play"):
        (state / "agents" / agent / "sessions").mkdir(parents=True)
    (state / "openclaw.json").write_text(
        """// JSON5: comments and trailing commas
        {
          agents: {
            defaults: { workspace: "~/ws-default", },
            list: [ { id: "work", workspace: "/srv/ws-work" }, ],
            entries: { play: { workspace: "/srv/ws-play" } },
          },
        }"""
    )
    paths = resolve_paths(Config(), {"HOME": str(tmp_path)})
    got = {a.id: a.workspace for a in paths.agents}
    assert got == {
        "main": tmp_path / "ws-default",
        "play": Path("/srv/ws-play"),
        # `list` beside `entries` is not read (OpenClaw reads the keyed roster alone)
        "work": tmp_path / "ws-default" / "work",
    }
    assert paths.workspace == tmp_path / "ws-default"
    assert paths.db == state / "memoryd" / "state.db"
    assert paths.tiers_root == state / "memory_fs"


def test_default_workspace_without_openclaw_json(tmp_path):
    state = tmp_path / ".openclaw"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    paths = resolve_paths(Config(), {"HOME": str(tmp_path)})  # no openclaw.json: defaults
    assert [a.workspace for a in paths.agents] == [state / "workspace"]
    # one that does not parse is no default install (tests/cli/test_openclaw_json.py)
    (state / "openclaw.json").write_text("{ this is : not json5 ]")
    with pytest.raises(ConfigError, match=r"openclaw\.json: cannot be read as JSON5"):
        resolve_paths(Config(), {"HOME": str(tmp_path)})
    profile = tmp_path / ".openclaw-work"
    (profile / "agents" / "main").mkdir(parents=True)
    paths = resolve_paths(Config(), {"HOME": str(tmp_path), "OPENCLAW_STATE_DIR": str(profile)})
    assert paths.workspace == tmp_path / ".openclaw" / "workspace-work"


def test_the_generated_reference_is_current():
    """config/memoryd.toml and docs/configuration.md's key table are what the schema says:
    run ``python tests/support/config_reference.py`` after changing a key or its description."""
    assert config_reference.stale_files(REPO) == []
    documented = [k.dotted for k in config_reference.schema_keys()]
    assert documented == list(schema_keys())  # every key, each with a description
    reference = (REPO / "docs" / "configuration.md").read_text()
    for heading in ("## Refused values", "## Switching a scheduled job off", "MEMORYD_CONFIG"):
        assert heading in reference  # the hand-written parts stay


def test_the_reference_check_names_a_stale_file(tmp_path):
    """``--check`` fails, naming the file, when a generated file no longer matches."""
    for rel in (config_reference.TOML_PATH, config_reference.DOCS_PATH):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((REPO / rel).read_text())
    assert config_reference.main(["--root", str(tmp_path), "--check"]) == 0
    toml = tmp_path / config_reference.TOML_PATH
    toml.write_text(toml.read_text().replace("max_hits = 2", "max_hits = 3"))
    assert config_reference.stale_files(tmp_path) == [toml]
    assert config_reference.main(["--root", str(tmp_path)]) == 0  # rewrites it
    assert config_reference.stale_files(tmp_path) == []


COMMANDS_THAT_LOAD_A_CONFIG = (
    ("status",),
    ("expire",),
    ("hits", "--no-scan"),
    ("simulate", "--no-scan"),
    ("explain", "memory/a.md"),
)


@pytest.mark.parametrize(
    ("expire", "refusal"),
    [
        ("0 4 last * *", None),
        ("*/20 3 * jan-mar mon-fri", None),
        ("99 * * * *", "minute: 99 is above 59"),
        ("0 4 31 * 8", "weekday"),
        ("", 'write "off"'),
    ],
)
def test_every_command_accepts_or_refuses_a_config_alike(tmp_path, expire, refusal):
    """One validation for every command: ``schedule.expire = "99 * * * *"`` once passed
    ``memoryd expire`` (exit 0) and failed ``memoryd status`` (exit 2)."""
    (tmp_path / "oc" / "agents" / "main" / "sessions").mkdir(parents=True)
    (tmp_path / "ws" / "memory").mkdir(parents=True)
    (tmp_path / "ws" / "memory" / "a.md").write_text("a note\n")
    cfg = tmp_path / "memoryd.toml"
    cfg.write_text(
        f'[openclaw]\nstate_dir = "{tmp_path / "oc"}"\nworkspace = "{tmp_path / "ws"}"\n'
        f'[schedule]\ntimezone = "Europe/Berlin"\nexpire = "{expire}"\n'
    )
    outcomes = {args: run("--config", str(cfg), *args) for args in COMMANDS_THAT_LOAD_A_CONFIG}
    codes = {args: r.returncode for args, r in outcomes.items()}
    if refusal is None:
        assert set(codes.values()) == {0}, {a: r.stderr for a, r in outcomes.items()}
        return
    assert set(codes.values()) == {2}, codes
    daemon = run("--config", str(cfg), "run")  # the daemon refuses it too
    assert daemon.returncode == 2
    messages = {r.stderr for r in outcomes.values()}
    # ... in its log's format: stderr is no terminal here, so one JSON line, the same words
    messages.add(f"memoryd: {json.loads(daemon.stderr)['message']}\n")
    assert len(messages) == 1, messages  # the same one line from each
    (message,) = messages
    assert message.startswith("memoryd: schedule.expire: ") and refusal in message
    assert message.count("\n") == 1


def test_agent_ids_are_normalized_as_openclaw_files_them(tmp_path):
    """OpenClaw's ``normalizeAgentId``: an id of ASCII letters, digits, ``_`` and ``-`` (at
    most 64, not starting with ``_`` / ``-``) is lowered; anything else has each run of
    other characters turned into ``-``, dashes trimmed from both ends, 64 kept, ``main`` if
    nothing is left. Its case-insensitive check knows ASCII letters only: ``Akıl`` is
    filed as ``agents/ak-l/``, so its roster workspace belongs to that folder."""
    from memoryd.config import normalize_agent_id

    assert normalize_agent_id("Work") == "work"
    assert normalize_agent_id("  Ops Team ") == "ops-team"
    assert normalize_agent_id("-x-") == "x"
    assert normalize_agent_id("") == normalize_agent_id(None) == "main"
    assert normalize_agent_id("a" * 70) == "a" * 64
    assert normalize_agent_id("Akıl") == "ak-l"  # dotless i is no `i`
    assert normalize_agent_id("ſ") == "main"  # long s is no `s`
    assert normalize_agent_id("İ") == "i"  # lowered to i + a combining dot, which goes

    state = tmp_path / ".openclaw"
    (state / "agents" / "ak-l" / "sessions").mkdir(parents=True)
    own = tmp_path / "akil-notes"
    own.mkdir()
    (state / "openclaw.json").write_text(
        json.dumps({"agents": {"list": [{"id": "main"}, {"id": "Akıl", "workspace": str(own)}]}})
    )
    paths = resolve_paths(Config(), {"HOME": str(tmp_path)})
    assert {a.id: a.workspace for a in paths.agents} == {"ak-l": own}


def test_an_agent_id_that_is_a_path_never_reads_outside_agents(tmp_path):
    """``openclaw.agents = ["../../outside"]`` named a folder outside the state folder and
    read its transcripts: an id is one folder's name, so a path is taken as OpenClaw files
    such an id (``outside``), inside ``agents/`` (``"Sales/EU"`` is ``agents/sales-eu/``)."""
    state = tmp_path / ".openclaw"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    outside = tmp_path / "outside" / "sessions"
    outside.mkdir(parents=True)
    for wanted, want in ((["../../outside"], "outside"), (["Sales/EU"], "sales-eu"),
                         ([".."], "main"), (["main"], "main")):  # fmt: skip
        cfg = parse_config({"openclaw": {"agents": wanted}})
        (agent,) = resolve_paths(cfg, {"HOME": str(tmp_path)}).agents
        assert agent.id == want and agent.sessions_dir == state / "agents" / want / "sessions"


@pytest.mark.parametrize(
    ("where", "workspace"),
    [
        ("defaults", "/tmp/a\u0000b"),
        ("entries", "/tmp/" + "a" * 300),
        ("defaults", "~no-such-user-of-memoryd/ws"),
        ("defaults", 5),  # (refused by OpenClaw 2026.9.6's `config validate` too)
        ("entries", {}),
    ],
    ids=["nul", "too-long", "unknown-user", "a-number", "an-object"],
)
def test_an_unusable_workspace_in_openclaw_json_is_a_config_error(tmp_path, where, workspace):
    """A workspace path no system call takes (a NUL byte, a name longer than the file
    system allows, the home of a user there is none of) is the user's openclaw.json to fix:
    exit 2 naming the file, not exit 1 with "embedded null byte" or "File name too long" and
    no hint where it came from, or a traceback."""
    state = tmp_path / ".openclaw"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    (state / "workspace" / "memory").mkdir(parents=True)
    agents = (
        {"defaults": {"workspace": workspace}}
        if where == "defaults"
        else {"entries": {"main": {"workspace": workspace}}}
    )
    (state / "openclaw.json").write_text(json.dumps({"agents": agents}))
    for command in ("scan", "hits", "status"):
        got = run(command, env={"HOME": str(tmp_path), "OPENCLAW_STATE_DIR": str(state)})
        assert got.returncode == 2, (command, got.stderr)
        assert "openclaw.json" in got.stderr and "workspace" in got.stderr
        assert "Traceback" not in got.stderr


@pytest.mark.parametrize(
    "key", ["openclaw.workspace", "openclaw.state_dir", "state.dir", "tiers.root"]
)
def test_a_relative_or_root_folder_is_refused_wherever_the_command_runs(tmp_path, key):
    """A relative folder meant one folder for a command run in the clone and another for the
    service (which runs in /): the two would manage different notes. Refused, the key named,
    from every directory alike; `~/x` and absolute paths stand."""
    table, name = key.split(".")
    (tmp_path / "notes").mkdir()
    root = "is the file system's root"
    for value, says in (("notes", "is relative"), ("./notes", "is relative"), ("/", root)):
        cfg = tmp_path / "c.toml"
        cfg.write_text(f'[{table}]\n{name} = "{value}"\n')
        for cwd in (tmp_path, tmp_path / "notes"):
            r = run("--config", str(cfg), "status", cwd=cwd)
            assert r.returncode == 2, (value, r.stderr)
            assert f"{key}: {value!r} {says}" in r.stderr, r.stderr
    for value in ("~/notes", str(tmp_path / "notes")):
        parse_config({table: {name: value}})  # no error
