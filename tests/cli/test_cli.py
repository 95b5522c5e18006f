"""The command layer: every command reachable by the fast path, no heavy imports at start-up."""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys

import pytest

from memoryd.commands.registry import COMMAND_GROUPS, COMMAND_MODULES
from support import transcripts as tx


def test_every_command_is_in_the_fast_path_table():
    """A command missing from COMMAND_GROUPS still works, but imports every group."""
    seen = {}
    for module in COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(module).register(sub)
        seen.update(dict.fromkeys(sub.choices, module))
    assert seen == COMMAND_GROUPS


@pytest.mark.parametrize(
    "args",
    [
        ["hits", "--json"],
        ["scan"],
        ["expire", "--json"],
        ["explain", "MEMORY.md"],
        ["reflect"],
        # not `status`: it asks APScheduler's cron triggers when each job runs next
    ],
)
def test_one_shot_commands_do_not_import_the_daemon_stack(tmp_path, args):
    """APScheduler and watchdog are for `memoryd run` only: one-shot commands start fast."""
    _, _, cfg = tx.make_install(tmp_path, ["MEMORY.md", "memory/a.md"])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    env["MEMORYD_CONFIG"] = str(cfg)
    probe = (
        # main(), not the console entry: that may end the process before the probe looks
        "import sys\n"
        "from memoryd.cli import main\n"
        f"main({args!r})\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('apscheduler', 'watchdog', 'tzlocal'))\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert "HEAVY []" in r.stderr, r.stderr[-2000:]
