"""``memoryd plugin install | uninstall``: memoryd's plugin in the user's OpenClaw.

The shipped plugin is copied to ``<memoryd state>/openclaw-plugin/`` (outside any
virtualenv) and registered by OpenClaw's own commands, never by editing ``openclaw.json``
here: OpenClaw validates and rewrites its file itself. ``openclaw.json`` is snapshotted
first, so uninstall returns it to what it was. The steps, and why each is needed:
docs/openclaw-plugin.md.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .context import Context, UsageError
from .formats import json_dumps
from .plugin_state import (
    ENTRY,
    PLUGIN_ID,
    STAMP_NAME,
    dotted_value,
    installed_copy,
    plugin_digest,
    plugin_dir,
)

BEFORE_NAME = "openclaw.json.before-plugin"
# One `openclaw` command: a few seconds, but seen past 180 s on a loaded 2-core machine.
OPENCLAW_TIMEOUT = 600.0
# What memoryd_recall adds to every model request, by memoryd's `plugin.recall_tool`, in the
# real OpenClaw 2026.9.6 (the live check measures it: docs/benchmarks.md).
RECALL_COST = {
    "deferred": "one line of Tool Search's directory, 190 characters a request "
    "(its schema and a prompt line, 378, with Tool Search off)",
    "direct": "its schema and a prompt line in every request, 378 characters",
    "off": "no recall tool, nothing a request",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plugin",
        help="install or remove memoryd's plugin in OpenClaw (hot notes, /refresh, recall)",
        description=(
            "Register memoryd's OpenClaw plugin with OpenClaw's own commands (install), or "
            "remove it and what it set (uninstall). Honours $OPENCLAW_STATE_DIR and --profile."
        ),
    )
    what = p.add_subparsers(dest="action", metavar="ACTION")
    what.required = True
    for action, text in (
        ("install", "link the plugin into OpenClaw and allow its session-start hook"),
        ("uninstall", "remove the plugin and its settings from OpenClaw"),
        ("path", "print the folder of the plugin shipped with this memoryd"),
    ):
        a = what.add_parser(action, help=text)
        if action == "path":
            a.set_defaults(func=cmd_plugin_path, needs_openclaw=False)
            continue
        a.add_argument(
            "--dry-run", action="store_true", help="print the openclaw commands, run nothing"
        )
        a.add_argument(
            "--openclaw", metavar="PATH", default=None, help="the openclaw program (default: PATH)"
        )
        a.add_argument("--profile", metavar="NAME", default=None, help="OpenClaw profile")
        a.add_argument("--json", action="store_true", help="one JSON document on stdout")
        a.set_defaults(func=cmd_plugin)


def copy_plugin(source: Path, dest: Path, memoryd: str) -> None:
    """Put a fresh copy of ``source`` at ``dest`` with its stamp: written beside, then
    renamed into place, so OpenClaw never loads half a plugin."""
    import json

    from .. import __version__

    staging = dest.with_name(dest.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, ignore=shutil.ignore_patterns("__pycache__", STAMP_NAME))
    stamp = {
        "memoryd": memoryd,
        "memoryd_version": __version__,
        "source": str(source),
        "digest": plugin_digest(source),
    }
    (staging / STAMP_NAME).write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
    old = dest.with_name(dest.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        dest.rename(old)
    staging.rename(dest)
    shutil.rmtree(old, ignore_errors=True)


class Step(NamedTuple):
    """One openclaw command: what it changes, and the command that takes it back."""

    argv: list[str]
    change: str
    undo: str


def openclaw_base(program: str, profile: str | None) -> list[str]:
    return [program, "--profile", profile] if profile else [program]


def install_steps(
    base: Sequence[str],
    folder: Path,
    memoryd: str,
    memoryd_config: str | None,
    recall: str = "deferred",
) -> list[Step]:
    """The install, as openclaw commands (pure). ``recall``: memoryd's ``plugin.recall_tool``,
    always written (a change back to the default must reach the plugin too)."""
    oc = list(base)
    said = _quote(oc)  # the undo commands are said for a shell: a path with a space quoted
    steps = [
        Step(
            [*oc, "plugins", "install", str(folder), "--link", "--force", "--accept-capabilities"],
            f"plugins.load.paths += {folder}; {ENTRY}.enabled = true",
            f"{said} plugins uninstall {PLUGIN_ID} --force --keep-files",
        ),
        Step(
            [*oc, "config", "set", f"{ENTRY}.hooks.allowConversationAccess", "true"],
            f"{ENTRY}.hooks.allowConversationAccess = true (lets the plugin add the hot notes)",
            f"{said} config unset {ENTRY}",
        ),
        Step(
            [*oc, "config", "set", f"{ENTRY}.config.command", memoryd],
            f"{ENTRY}.config.command = {memoryd}",
            f"{said} config unset {ENTRY}",
        ),
        Step(
            [*oc, "config", "set", f"{ENTRY}.config.recall", recall],
            f"{ENTRY}.config.recall = {recall} (memoryd_recall: {RECALL_COST[recall]})",
            f"{said} config unset {ENTRY}",
        ),
    ]
    if memoryd_config:
        steps.append(
            Step(
                [*oc, "config", "set", f"{ENTRY}.config.config", memoryd_config],
                f"{ENTRY}.config.config = {memoryd_config}",
                f"{said} config unset {ENTRY}",
            )
        )
    return steps


def _has(doc: Any, dotted: str) -> bool:
    *parents, last = dotted.split(".")
    for part in parents:
        if not isinstance(doc, Mapping) or part not in doc:
            return False
        doc = doc[part]
    return isinstance(doc, Mapping) and last in doc


def leftovers(now: Mapping[str, Any], before: Mapping[str, Any] | None) -> list[str]:
    """Config paths OpenClaw's uninstall leaves that the install created (pure), deepest first.

    The plugin's own entry always goes; an emptied ``plugins.entries`` / ``plugins.load.paths``
    / ``plugins.load`` / ``plugins`` only when it was not there before the install (without a
    snapshot: when it is empty, as a fresh install leaves none of them empty).
    """
    out = []
    if _has(now, ENTRY):
        out.append(ENTRY)
    for path in ("plugins.entries", "plugins.load.paths", "plugins.load", "plugins"):
        value = dotted_value(now, path)
        if not _has(now, path) or (before is not None and _has(before, path)):
            continue
        rest = value
        if isinstance(value, Mapping):
            rest = {k: v for k, v in value.items() if f"{path}.{k}" not in out}
        if rest in ({}, []):
            out.append(path)
    return out


def find_openclaw(explicit: str | None, environ: Mapping[str, str]) -> str:
    if explicit:
        if not Path(explicit).exists():
            raise UsageError(f"--openclaw: {explicit} does not exist")
        return str(Path(explicit).absolute())
    found = shutil.which("openclaw", path=environ.get("PATH"))
    if not found:
        raise UsageError("cannot find `openclaw` on PATH (give it with --openclaw PATH)")
    return found


def _run(argv: list[str], env: Mapping[str, str]) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=OPENCLAW_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, str(exc)
    text = (done.stdout + done.stderr).strip()
    return done.returncode, text


def cmd_plugin_path(args: argparse.Namespace, ctx: Context) -> int:
    ctx.print(str(plugin_dir()))
    return 0


def cmd_plugin(args: argparse.Namespace, ctx: Context) -> int:
    from ..config import read_openclaw_json
    from .service_files import installed_executable

    shipped = plugin_dir()
    if not (shipped / "openclaw.plugin.json").is_file():
        raise UsageError(f"the plugin is missing from this memoryd: {shipped}")
    env = dict(ctx.environ)
    paths = ctx.paths
    if not args.profile:
        # The install memoryd reads is the one to change (memoryd's openclaw.state_dir may
        # name it without the variable being set).
        env["OPENCLAW_STATE_DIR"] = str(paths.state_dir)
    program = "openclaw" if args.dry_run and not args.openclaw else None
    if program is None or shutil.which("openclaw", path=env.get("PATH")):
        program = find_openclaw(args.openclaw, env)
    base = openclaw_base(program, args.profile)
    snapshot = paths.memoryd_dir / "plugin" / BEFORE_NAME
    folder = installed_copy(paths.memoryd_dir)
    oc_file = paths.openclaw_file
    doc: dict[str, Any] = {
        "action": args.action,
        "dry_run": args.dry_run,
        "plugin": str(folder),
        "openclaw_json": str(oc_file) if oc_file else None,
        "steps": [],
    }
    if args.action == "install":
        memoryd = installed_executable(env)
        recall = ctx.cfg.plugin.recall_tool
        steps = install_steps(base, folder, memoryd, ctx.config_file, recall)
        doc["recall_tool"] = {"mode": recall, "cost": RECALL_COST[recall]}
        undo = f"memoryd plugin uninstall{f' --profile {args.profile}' if args.profile else ''}"
        doc["undo"] = undo
        doc["then"] = "restart the gateway (openclaw gateway restart) if it does not reload"
        doc["copy"] = f"{shipped} → {folder} (the folder OpenClaw loads, outside any venv)"
        if not args.dry_run and oc_file is not None and not args.profile:
            snapshot.parent.mkdir(parents=True, exist_ok=True)
            if oc_file.is_file() and not snapshot.exists():
                shutil.copy2(oc_file, snapshot)
        if not args.dry_run:
            folder.parent.mkdir(parents=True, exist_ok=True)
            copy_plugin(shipped, folder, memoryd)
    else:
        steps = [
            Step(
                [*base, "plugins", "uninstall", PLUGIN_ID, "--force", "--keep-files"],
                f"plugin {PLUGIN_ID} removed: its load path, install record and settings "
                f"(then memoryd removes its copy {folder}; the package keeps the plugin)",
                "memoryd plugin install",
            )
        ]
    failed = False
    for step in steps:
        failed = _step(doc, step, env, args.dry_run)
        if failed:
            break
    if args.action == "uninstall" and not failed:
        current = read_openclaw_json(oc_file) if oc_file else {}
        before = read_openclaw_json(snapshot) if snapshot.is_file() else None
        for path in leftovers(current, before) if not args.dry_run else [ENTRY]:
            unset = [*base, "config", "unset", path]
            step = Step(unset, f"{path} removed", "memoryd plugin install")
            failed = _step(doc, step, env, args.dry_run) or failed
        if not args.dry_run and not failed and snapshot.exists():
            snapshot.unlink()
        if not args.dry_run and not failed:
            shutil.rmtree(folder, ignore_errors=True)  # memoryd's copy; the package keeps its own
    if args.action == "install" and not failed:
        doc["bytecode"] = "would compile" if args.dry_run else compile_package()
    doc["ok"] = not failed
    if args.json:
        ctx.print(json_dumps(doc))
    else:
        _print(ctx, doc)
    return 1 if failed else 0


def _step(doc: dict[str, Any], step: Step, env: Mapping[str, str], dry_run: bool) -> bool:
    """Run one step (unless a dry run) and add its row to ``doc``; whether it failed."""
    row: dict[str, Any] = {"command": step.argv, "change": step.change, "undo": step.undo}
    doc["steps"].append(row)
    if dry_run:
        return False
    code, text = _run(step.argv, env)
    row["exit"] = code
    if code != 0:
        row["output"] = text[-2000:]
    return code != 0


def compile_package(folder: Path | None = None) -> str:
    """Compile memoryd's modules (``folder``: the package) to bytecode, in ``__pycache__``
    beside them, whatever ``PYTHONDONTWRITEBYTECODE`` says: what ``pip install`` does for a
    wheel. A read-only install (a system package, compiled when it was installed) is left
    as it is. Returns what happened, for the command's output."""
    import compileall

    package = folder or Path(__file__).resolve().parent.parent
    ok = compileall.compile_dir(str(package), quiet=2, workers=1)
    return f"compiled {package}" if ok else f"not all of {package} could be compiled"


def _quote(argv: Sequence[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)


def _print(ctx: Context, doc: dict[str, Any]) -> None:
    verb = "would run" if doc["dry_run"] else "ran"
    for row in doc["steps"]:
        status = ""
        if "exit" in row:
            status = "  [ok]" if row["exit"] == 0 else f"  [failed, exit {row['exit']}]"
        ctx.print(f"{verb}: {_quote(row['command'])}{status}")
        ctx.print(f"  changes: {row['change']}")
        if row.get("output"):
            ctx.print("  " + row["output"].replace("\n", "\n  "))
    where = doc["openclaw_json"] or "openclaw.json"
    if not doc.get("ok", True):
        ctx.print(f"memoryd plugin {doc['action']}: stopped at the failed step ({where})")
        return
    if doc["action"] == "install":
        ctx.print(f"{'would copy' if doc['dry_run'] else 'copied'}: {doc['copy']}")
        done = "would change" if doc["dry_run"] else "changed"
        ctx.print(f"{done}: {where}")
        ctx.print(f"bytecode: {doc['bytecode']}")
        recall = doc["recall_tool"]
        other = '"off"' if recall["mode"] != "off" else '"deferred"'
        ctx.print(
            f"recall tool: {recall['mode']}: {recall['cost']} "
            f"(plugin.recall_tool = {other} in memoryd's config, then install again)"
        )
        ctx.print(f"next: {doc['then']}")
        ctx.print(f"undo: {doc['undo']}")
    else:
        done = "would remove" if doc["dry_run"] else "removed"
        ctx.print(f"{done}: memoryd's plugin and its settings from {where}")


__all__ = ["install_steps", "leftovers", "plugin_dir", "register"]
