"""The plugin's JavaScript (hooks, tool, commands, failure cases) under Node, without OpenClaw.

Runs ``node --test tests/plugin_js/plugin_test.mjs`` with the plugin folder shipped in the
package. Node is not needed by the rest of the suite: without a Node (on PATH, or the live
harness's cached Node 24) this test is skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memoryd.commands.plugin import plugin_dir

pytestmark = pytest.mark.subprocess

HERE = Path(__file__).resolve().parents[1]  # tests/


def find_node() -> str | None:
    cache = Path(os.environ.get("MEMORYD_LIVE_CACHE") or Path.home() / ".cache" / "memoryd-live")
    for candidate in (shutil.which("node"), cache / "node24/node_modules/node/bin/node"):
        if candidate and Path(candidate).is_file():
            version = subprocess.run(
                [str(candidate), "--version"], capture_output=True, text=True, timeout=60
            ).stdout.strip()
            if version.startswith("v") and int(version[1:].split(".")[0]) >= 18:
                return str(candidate)
    return None


def test_plugin_javascript_under_node():
    node = find_node()
    if node is None:
        pytest.skip("no Node >= 18 here (the plugin's JavaScript is checked where there is one)")
    env = {**os.environ, "MEMORYD_PLUGIN_DIR": str(plugin_dir())}
    proc = subprocess.run(
        [node, "--test", str(HERE / "plugin_js" / "plugin_test.mjs")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "# fail 0" in proc.stdout
