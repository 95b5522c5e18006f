"""memoryd's copy of its OpenClaw plugin, outside any venv (issue 29), and `status` about it.

``memoryd plugin install`` runs here with a stand-in ``openclaw`` that only records what it
was asked (the real OpenClaw runs the same install in the live check, tests/live/plugin_live.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import test_plugin
from memoryd.commands.plugin import plugin_dir
from test_plugin import run, run_json

pytestmark = pytest.mark.subprocess

install = test_plugin.install  # the same OpenClaw install (a fixture)


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
