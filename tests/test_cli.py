"""The command layer: every command reachable by the fast path, no heavy imports at start-up."""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys

import pytest

import transcripts as tx
from memoryd.cli import COMMAND_GROUPS, COMMAND_MODULES


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


def _imported_modules(path: os.PathLike[str], module: str, is_package: bool) -> set[str]:
    """Every module a source file imports, absolute (``from ..jobs import expire`` included
    as ``memoryd.jobs.expire``), wherever in the file the import stands."""
    import ast

    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{alias.name}" for alias in node.names)
    return out


@pytest.mark.unit
def test_only_the_commands_import_a_job_and_no_job_imports_another():
    """The jobs are the imperative shell: what two of them share lives in ``memoryd.policy``
    (the expire plan that ``reflect`` reports, for one), so changing one job never changes
    another. Only the command modules run a job by name (the daemon goes through
    ``memoryd.jobs.run_for_period``)."""
    from pathlib import Path

    import memoryd

    root = Path(memoryd.__file__).parent
    jobs = {p.stem for p in (root / "jobs").glob("*.py") if p.stem != "__init__"}
    assert {"expire", "reflect", "promote", "organize"} <= jobs
    offenders = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        is_package = rel.name == "__init__"
        module = ".".join(rel.parts[:-1] if is_package else rel.parts)
        if module.startswith("memoryd.commands."):
            continue
        for name in _imported_modules(path, module, is_package):
            job = name.removeprefix("memoryd.jobs.").split(".")[0]
            if name.startswith("memoryd.jobs.") and job in jobs and module != f"memoryd.jobs.{job}":
                offenders.append(f"{module} imports memoryd.jobs.{job}")
    assert offenders == []
