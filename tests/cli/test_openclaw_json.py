"""An ``openclaw.json`` that does not parse (issue 29): never read as an empty config.

Read as ``{}``, discovery fell back to ``~/.openclaw/workspace``: memoryd reported on (and
``expire --force`` would have archived from) a folder the user never configured, exit 0.
Now every command stops with one line naming the file and the parse error (exit 2), and a
running daemon keeps the view it resolved before and says so.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from support.daemon_harness import DaemonProcess, wait_until
from support.inprocess import memoryd as run_memoryd

pytestmark = pytest.mark.subprocess

# A JSON5 file cut short while being written (an editor's half-saved buffer).
TRUNCATED = '{\n  // my workspace\n  agents: { defaults: { workspace: "/srv/ws",\n'


def _install(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """OpenClaw's state with a configured workspace, and the default one beside it (which an
    empty config would send memoryd to), each holding old notes; a memoryd config that
    names neither (the workspace comes from openclaw.json)."""
    home = tmp_path / "home"
    state = home / ".openclaw"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    configured = tmp_path / "work-notes"
    default = state / "workspace"
    for ws in (configured, default):
        (ws / "memory").mkdir(parents=True)
        for i in range(3):
            note = ws / "memory" / f"old-{i}.md"
            note.write_text("old\n")
            os.utime(note, (1_600_000_000, 1_600_000_000))
    oc = state / "openclaw.json"
    oc.write_text(json.dumps({"agents": {"defaults": {"workspace": str(configured)}}}))
    cfg = tmp_path / "memoryd.toml"
    cfg.write_text(f'[state]\ndir = "{tmp_path / "md"}"\n[expire]\nmin_age_days = 1\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    env.update(HOME=str(home), MEMORYD_CONFIG=str(cfg))
    return oc, configured, default, env


COMMANDS = (
    ("status",),
    ("status", "--json"),
    ("scan",),
    ("hits", "--no-scan"),
    ("explain", "memory/old-0.md"),
    ("expire", "--force"),
    ("simulate", "--no-scan"),
    ("search", "oolong"),
)


def test_every_command_stops_on_an_unreadable_openclaw_json(tmp_path: Path) -> None:
    oc, configured, default, env = _install(tmp_path)
    oc.write_text(TRUNCATED)
    for args in COMMANDS:
        r = run_memoryd(args, env=env)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        line = r.stderr
        assert line.count("\n") == 1 and line.startswith("memoryd: "), (args, line)
        assert str(oc) in line and "JSON5" in line and "line 4" in line, (args, line)
        assert r.stdout == "", args
    # nothing was acted on in the default workspace (nor in the configured one)
    for ws in (configured, default):
        assert sorted(p.name for p in (ws / "memory").iterdir()) == [
            "old-0.md",
            "old-1.md",
            "old-2.md",
        ]
    daemon = run_memoryd(("run",), env=env)
    assert daemon.returncode == 2
    assert str(oc) in daemon.stderr and "JSON5" in daemon.stderr


def test_a_missing_openclaw_json_still_means_openclaws_defaults(tmp_path: Path) -> None:
    """No file at all is OpenClaw's own default install, not an error."""
    oc, _configured, default, env = _install(tmp_path)
    oc.unlink()
    r = run_memoryd(("explain", "memory/old-0.md", "--no-scan"), env=env)
    assert r.returncode == 0, r.stderr
    assert str(default) in r.stdout or "old-0.md" in r.stdout


def test_the_daemon_keeps_its_last_good_view_and_status_says_so(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    oc, configured, _default, env = _install(tmp_path)
    cfg = Path(env["MEMORYD_CONFIG"])
    d = DaemonProcess(inst=_Inst(tmp_path, cfg), fake_jobs=False)
    d.env_extra = {"HOME": env["HOME"]}
    daemons.append(d)
    d.start()
    d.wait_event("daemon.ready")
    oc.write_text(TRUNCATED)
    d.send(signal.SIGHUP)  # a reload resolves the paths again
    (event,) = d.wait_event("config.openclaw_json_unreadable")
    assert event["file"] == str(oc) and "line 4" in event["reason"]
    d.check_alive()
    r = run_memoryd(("status",), env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert str(oc) in r.stderr
    assert f"the running daemon (pid {d.proc.pid}) keeps its last good view" in r.stderr
    # fixed again: the next reload reads it, and status works
    oc.write_text(json.dumps({"agents": {"defaults": {"workspace": str(configured)}}}))
    d.send(signal.SIGHUP)
    d.wait_event("config.openclaw_json_readable")
    wait_until(lambda: run_memoryd(("status",), env=env).returncode == 0)
    assert not [
        e
        for e in d.logs()
        if e.get("level") == "error" and e.get("event") != ("daemon.reload_rejected")
    ]


class _Inst:
    """What :class:`DaemonProcess` reads of an install: its root and config file."""

    def __init__(self, root: Path, config: Path) -> None:
        self.root = root
        self.config = config
        self.jobs_log = root / "jobs.log"
        self.hooks = root / "hooks"


def test_env_references_in_openclaw_json_are_resolved_as_openclaw_resolves_them(
    tmp_path: Path,
) -> None:
    """OpenClaw replaces ``${VAR}`` in any string of its config (upper-case names; the
    config's ``env.vars`` for what the environment lacks; ``$${VAR}`` the literal text).
    memoryd took ``"${NOTES}/work-notes"`` as a folder of that name and stopped: "is not a
    folder". Now it finds the workspace OpenClaw uses; an unset variable stays as written,
    as OpenClaw leaves it, and the message shows it."""
    oc, configured, _default, env = _install(tmp_path)
    cases = [
        ({"agents": {"defaults": {"workspace": "${NOTES}/work-notes"}}}, {"NOTES": str(tmp_path)}),
        ({"env": {"vars": {"NOTES": str(tmp_path)}},
          "agents": {"defaults": {"workspace": "${NOTES}/work-notes"}}}, {}),
        ({"env": {"NOTES": str(tmp_path)},  # (OpenClaw takes a string beside vars alike)
          "agents": {"defaults": {"workspace": "${NOTES}/work-notes"}}}, {}),
    ]  # fmt: skip
    for doc, extra in cases:
        oc.write_text(json.dumps(doc))
        r = run_memoryd(("hits", "--no-scan"), env={**env, **extra})
        assert r.returncode == 0, r.stderr
        assert f"workspace {configured}" in r.stdout.splitlines()[0]
    oc.write_text(json.dumps({"agents": {"defaults": {"workspace": "${NOPE_UNSET}/x"}}}))
    r = run_memoryd(("hits", "--no-scan"), env=env)
    assert r.returncode == 2 and "${NOPE_UNSET}/x" in r.stderr, r.stderr
    from memoryd.config.openclaw import with_env_refs

    got = with_env_refs({"a": ["$${HOME} is ${HOME}", "${lower}"], "n": 1}, {"HOME": "/h"})
    assert got == {"a": ["${HOME} is /h", "${lower}"], "n": 1}
