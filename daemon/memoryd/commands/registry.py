"""Which module defines each command: the one table of the command line.

A one-shot command imports only its own module (:func:`groups_for`), so it starts fast;
``--help``, a typo or a command missing here import every module. Each module's
``register(sub)`` adds its commands' parsers; ``tests/cli/test_cli.py`` checks that they add
exactly the names this table gives them.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

# Which group defines a command, so a one-shot command imports only its own group.
# A command missing here still works: every group is imported then.
COMMAND_GROUPS: dict[str, str] = {
    "scan": "memoryd.commands.hits",
    "hits": "memoryd.commands.hits",
    "export": "memoryd.commands.hits",
    "demo": "memoryd.commands.hits",
    "expire": "memoryd.commands.expire",
    "reflect": "memoryd.commands.reports",
    "report": "memoryd.commands.reports",
    "promote": "memoryd.commands.reports",
    "search": "memoryd.commands.search",
    "explain": "memoryd.commands.explain",
    "sections": "memoryd.commands.sections",
    "retire": "memoryd.commands.retire",
    "mark": "memoryd.commands.marks",
    "unmark": "memoryd.commands.marks",
    "pin": "memoryd.commands.marks",
    "unpin": "memoryd.commands.marks",
    "restore": "memoryd.commands.restore",
    "on-read": "memoryd.commands.restore",
    "on-search": "memoryd.commands.restore",
    "simulate": "memoryd.commands.simulate",
    "organize": "memoryd.commands.tiers",
    "recall": "memoryd.commands.tiers",
    "inject": "memoryd.commands.tiers",
    "refresh": "memoryd.commands.tiers",
    "run": "memoryd.commands.service",
    "status": "memoryd.commands.service",
    "service": "memoryd.commands.service",
    "plugin": "memoryd.commands.plugin",
    "completion": "memoryd.commands.completion",
}

# The modules, in the order their commands appear in --help.
COMMAND_MODULES = tuple(dict.fromkeys(COMMAND_GROUPS.values()))


def groups_for(argv: Sequence[str]) -> tuple[str, ...]:
    """The command groups needed to parse ``argv`` (all of them for --help or a typo)."""
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--config":
            i += 2
            continue
        if arg.startswith("-"):
            if arg.startswith("--config=") or arg == "--debug":
                i += 1
                continue
            return COMMAND_MODULES
        group = COMMAND_GROUPS.get(arg)
        return (group,) if group else COMMAND_MODULES
    return COMMAND_MODULES


def register(sub: argparse._SubParsersAction, groups: Sequence[str]) -> None:
    """Add the commands of each module of ``groups`` to ``sub``, in that order."""
    for name in groups:
        importlib.import_module(name).register(sub)
