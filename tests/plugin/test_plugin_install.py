"""memoryd's copy of its OpenClaw plugin, outside any venv (issue 29), and `status` about it.

``memoryd plugin install`` runs here with a stand-in ``openclaw`` that only records what it
was asked (the real OpenClaw runs the same install in the live check, tests/live/plugin_live.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoryd.commands.plugin import plugin_dir
from support import plugin_inprocess
from support.plugin_inprocess import run, run_json

pytestmark = pytest.mark.subprocess

install = plugin_inprocess.install  # the plugin tests' OpenClaw install (a fixture)


def _fake_openclaw(root: Path) -> Path:
    """An `openclaw` that only records its arguments (the real one runs in the live check)."""
    prog = root / "bin" / "openclaw"
    prog.parent.mkdir(parents=True, exist_ok=True)
    prog.write_text(f'#!/bin/sh\necho "$@" >> {root / "openclaw.args"}\n')
    prog.chmod(0o755)
    return prog


def test_install_copies_the_plugin_out_of_the_venv_and_status_tells_a_stale_copy(install, capsys):
    """Issue 29: the plugin OpenClaw loads is memoryd's own copy, outside any venv, naming
    the memoryd that installed it; `status` says when it differs from this memoryd's."""
    import sys

    prog = _fake_openclaw(install["root"])
    doc = run_json(capsys, install["cfg"], "plugin", "install", "--json", "--openclaw", str(prog))
    copy = Path(doc["plugin"])
    assert copy != plugin_dir() and not copy.is_relative_to(sys.prefix)
    assert copy.is_relative_to(install["root"] / "mstate")
    assert (copy / "index.js").read_bytes() == (plugin_dir() / "index.js").read_bytes()
    stamp = json.loads((copy / "installed.json").read_text())
    assert stamp["memoryd"] == doc["steps"][2]["command"][-1]  # the memoryd that installed it
    args = (install["root"] / "openclaw.args").read_text()
    assert f"plugins install {copy} --link" in args and str(plugin_dir()) not in args
    # OpenClaw's record of it (as the real install writes it)
    oc = install["state"] / "openclaw.json"
    data = json.loads(oc.read_text())
    data["plugins"] = {"load": {"paths": [str(copy)]}, "entries": {"memoryd": {"enabled": True}}}
    oc.write_text(json.dumps(data))
    status = run_json(capsys, install["cfg"], "status", "--json")["plugin"]
    assert status["installed"] and status["folder"] == str(copy) and status["same"] is True
    _, out = run(capsys, install["cfg"], "status")
    assert f"plugin:      installed ({copy}" in out
    # an upgraded memoryd ships another plugin: the copy is stale until installed again
    (copy / "index.js").write_text("// an older plugin\n")
    status = run_json(capsys, install["cfg"], "status", "--json")["plugin"]
    assert status["same"] is False
    _, out = run(capsys, install["cfg"], "status")
    assert "differs from this memoryd's: run `memoryd plugin install`" in out
    run_json(capsys, install["cfg"], "plugin", "install", "--json", "--openclaw", str(prog))
    assert run_json(capsys, install["cfg"], "status", "--json")["plugin"]["same"] is True


def test_status_without_the_plugin_says_so(install, capsys):
    status = run_json(capsys, install["cfg"], "status", "--json")["plugin"]
    assert status["installed"] is False
    _, out = run(capsys, install["cfg"], "status")
    assert "plugin:      not installed (memoryd plugin install)" in out


def _installed(install, capsys) -> Path:
    """The plugin installed (a stand-in openclaw) and recorded in openclaw.json."""
    prog = _fake_openclaw(install["root"])
    doc = run_json(capsys, install["cfg"], "plugin", "install", "--json", "--openclaw", str(prog))
    oc = install["state"] / "openclaw.json"
    data = json.loads(oc.read_text())
    data["plugins"] = {
        "load": {"paths": [doc["plugin"]]},
        "entries": {"memoryd": {"enabled": True}},
    }
    oc.write_text(json.dumps(data))
    return Path(doc["plugin"])


def test_status_says_whether_a_gateway_loaded_the_plugin_and_when_it_last_called(
    install, capsys, monkeypatch
):
    """Issue 29: installed is not loaded. The plugin runs each memoryd command with its
    gateway's pid and folder (MEMORYD_PLUGIN_CALLER); `status` then says the plugin is loaded
    in that gateway and when it last called, or that the gateway no longer runs."""
    import os
    import subprocess

    copy = _installed(install, capsys)
    assert run_json(capsys, install["cfg"], "status", "--json")["plugin"]["last_seen"] is None
    _, out = run(capsys, install["cfg"], "status")
    assert "not seen in a gateway yet" in out
    # a gateway (here: this process) runs `memoryd hits` through the plugin
    caller = json.dumps({"pid": os.getpid(), "folder": str(copy)})
    monkeypatch.setenv("MEMORYD_PLUGIN_CALLER", caller)
    assert run(capsys, install["cfg"], "hits")[0] == 0
    monkeypatch.delenv("MEMORYD_PLUGIN_CALLER")
    seen = run_json(capsys, install["cfg"], "status", "--json")["plugin"]["last_seen"]
    assert seen["gateway_pid"] == os.getpid() and seen["gateway_running"] is True
    assert seen["folder"] == str(copy) and seen["command"] == "hits"
    _, out = run(capsys, install["cfg"], "status")
    assert f"loaded in gateway pid {os.getpid()}, last call" in out
    # a gateway that has stopped since
    dead = subprocess.Popen(["true"])
    dead.wait()
    monkeypatch.setenv("MEMORYD_PLUGIN_CALLER", json.dumps({"pid": dead.pid, "folder": "/x/p"}))
    assert run(capsys, install["cfg"], "hits")[0] == 0
    monkeypatch.delenv("MEMORYD_PLUGIN_CALLER")
    _, out = run(capsys, install["cfg"], "status")
    assert f"in gateway pid {dead.pid}, which no longer runs" in out


@pytest.mark.parametrize(
    "caller",
    [
        "not json",
        "[1, 2]",
        json.dumps({"pid": -1, "folder": "/p"}),
        json.dumps({"pid": True, "folder": "/p"}),
        json.dumps({"pid": 5, "folder": "/p\u0000/../etc"}),
        json.dumps({"pid": 5, "folder": "x" * 100_000}),
        json.dumps({"pid": 5}),
    ],
)
def test_a_caller_variable_that_is_not_the_plugin_s_is_ignored(
    install, capsys, monkeypatch, caller
):
    """What the variable holds is data: anything but the plugin's shape notes nothing, and
    the command runs as without it."""
    monkeypatch.setenv("MEMORYD_PLUGIN_CALLER", caller)
    assert run(capsys, install["cfg"], "hits")[0] == 0
    monkeypatch.delenv("MEMORYD_PLUGIN_CALLER")
    assert run_json(capsys, install["cfg"], "status", "--json")["plugin"]["last_seen"] is None


def test_a_busy_gateway_is_noted_at_most_once_a_minute(tmp_path: Path):
    """Every hot-note run of a busy gateway would otherwise rewrite the note."""
    from memoryd.plugin_seen import last_seen, note_call

    caller = json.dumps({"pid": 4242, "folder": "/p"})
    assert note_call(tmp_path, caller, "inject", 1000.0) is True
    assert note_call(tmp_path, caller, "inject", 1030.0) is False
    assert last_seen(tmp_path)["at"] == 1000.0
    assert note_call(tmp_path, caller, "recall", 1061.0) is True  # a minute on
    other = json.dumps({"pid": 4343, "folder": "/p"})
    assert note_call(tmp_path, other, "inject", 1062.0) is True  # another gateway at once
    assert last_seen(tmp_path)["pid"] == 4343
    # a state folder that cannot be written (here: a file where the folder should be)
    (tmp_path / "not-a-folder").write_text("")
    assert note_call(tmp_path / "not-a-folder", caller, "inject", 1.0) is False


def test_the_plugins_session_start_call_is_noted_too(install, capsys):
    """The plugin's most frequent call, `inject --session --json` at every session start, is
    answered without the command line's parser: it notes the gateway all the same."""
    import os
    import subprocess
    import sys

    assert run(capsys, install["cfg"], "hits")[0] == 0  # memoryd has run: its state is there
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    env["MEMORYD_PLUGIN_CALLER"] = json.dumps({"pid": os.getpid(), "folder": "/p/memoryd"})
    proc = subprocess.run(
        [sys.executable, "-m", "memoryd", "--config", str(install["cfg"]), "inject", "--session",
         "--json"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "session" in json.loads(proc.stdout)
    seen = run_json(capsys, install["cfg"], "status", "--json")["plugin"]["last_seen"]
    assert seen["gateway_pid"] == os.getpid() and seen["command"] == "inject"
