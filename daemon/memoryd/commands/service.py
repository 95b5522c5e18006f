"""Daemon commands: ``run``, ``status``, ``service install`` / ``service uninstall``.

``run`` hands over to :mod:`memoryd.service.main` (imported only then: one-shot commands
never pay for APScheduler or watchdog). ``status`` is :mod:`.status`'s (registered here, so
``--help`` lists the three together). ``service`` writes the systemd user unit or the launchd
agent for this machine, as :mod:`.service_files` renders them, and removes it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from .context import Context, UsageError
from .service_files import (
    INSTALL_MARK,
    LAUNCHD_LABEL,
    UNIT_NAME,
    carried_environment,
    installed_executable,
    render_launchd_plist,
    render_systemd_unit,
)
from .status import cmd_status


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run the daemon: follow transcripts live and run the scheduled jobs",
        description="Run in the foreground (systemd / launchd supervise it). SIGHUP reloads "
        "the configuration, SIGTERM or SIGINT stops it cleanly.",
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("status", help="is a daemon running; sources, hits, jobs at a glance")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("service", help="install or remove the systemd / launchd service")
    what = p.add_subparsers(dest="action", metavar="ACTION")
    what.required = True
    for action, text in (
        ("install", "write the service file for this machine and say how to enable it"),
        ("uninstall", "remove the service file written by install"),
    ):
        a = what.add_parser(action, help=text)
        kind = a.add_mutually_exclusive_group()
        kind.add_argument("--systemd", action="store_true", help="a systemd user unit (Linux)")
        kind.add_argument("--launchd", action="store_true", help="a launchd agent (macOS)")
        a.add_argument(
            "--dry-run", action="store_true", help="print the file and its path, write nothing"
        )
        if action == "install":
            a.add_argument(
                "--force",
                action="store_true",
                help="replace an existing file that memoryd did not write",
            )
            a.set_defaults(func=cmd_service_install)
        else:  # removing the service works whether or not OpenClaw is still there
            a.set_defaults(func=cmd_service_uninstall, needs_openclaw=False)


# =========================================================================== run


def cmd_run(args: argparse.Namespace, ctx: Context) -> int:
    from ..service.main import run_daemon

    return run_daemon(ctx.cfg, ctx.config_file, ctx.environ)


def _home(environ: dict[str, str]) -> Path:
    return Path(environ.get("HOME") or Path.home())


def _target(args: argparse.Namespace, ctx: Context) -> tuple[str, Path]:
    """("systemd" | "launchd", the file to write)."""
    env = ctx.environ
    if args.systemd:
        kind = "systemd"
    elif args.launchd:
        kind = "launchd"
    else:
        kind = "launchd" if sys.platform == "darwin" else "systemd"
    home = _home(env)
    if kind == "systemd":
        base = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
        return kind, base / "systemd" / "user" / UNIT_NAME
    return kind, home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"


def _enable_commands(kind: str, path: Path, env: dict[str, str]) -> list[str]:
    if kind == "systemd":
        user = env.get("USER") or env.get("LOGNAME") or "$USER"
        return [
            "systemctl --user daemon-reload",
            "systemctl --user enable --now memoryd",
            f"loginctl enable-linger {user}   # keep it running without a login session",
            "journalctl --user -u memoryd -o cat -f | jq   # follow its logs",
        ]
    return [
        f"launchctl bootout gui/$(id -u)/{LAUNCHD_LABEL} 2>/dev/null   # only when one is "
        "loaded already: launchd keeps the file it loaded until then",
        f"launchctl bootstrap gui/$(id -u) {shlex.quote(str(path))}",  # (a home with a space)
        f"launchctl kickstart -k gui/$(id -u)/{LAUNCHD_LABEL}   # restart it",
    ]


def _stop_commands(kind: str) -> list[str]:
    """What stops a running service once its file is gone (neither needs the file)."""
    if kind == "systemd":
        return ["systemctl --user stop memoryd", "systemctl --user daemon-reload"]
    return [f"launchctl bootout gui/$(id -u)/{LAUNCHD_LABEL}"]


def cmd_service_install(args: argparse.Namespace, ctx: Context) -> int:
    kind, path = _target(args, ctx)
    exe = installed_executable(ctx.environ)
    config = ctx.config_file
    environment = carried_environment(ctx.environ)
    from ..pathmatch import ENV_TRAITS

    if ctx.environ.get(ENV_TRAITS):  # an override for an odd mount holds for the service too
        environment[ENV_TRAITS] = ctx.environ[ENV_TRAITS]
    if kind == "systemd":
        for what, value in (("memoryd's path", exe), ("the config's path", config or "")):
            if "\n" in value or "\r" in value:  # (a unit file's line would end there)
                raise UsageError(f"{what} {value!r} holds a line break, which no unit file "
                                 "can hold: install from a folder without one")  # fmt: skip
        content = render_systemd_unit(exe, config, environment).encode()
    else:
        log_dir = str(_home(ctx.environ) / "Library" / "Logs" / "memoryd")
        content = render_launchd_plist(exe, config, log_dir, environment, ctx.environ.get("PATH"))
    if args.dry_run:
        ctx.print(f"# would write {path}")
        ctx.out.write(content.decode())
        ctx.print("# then run:")
        for line in _enable_commands(kind, path, ctx.environ):
            ctx.print(f"#   {line}")
        return 0
    if path.exists() and not args.force:
        existing = path.read_bytes()
        if existing != content and INSTALL_MARK.encode() not in existing:
            raise UsageError(
                f"{path} exists and was not written by memoryd; move it away or use --force"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "launchd":
        (_home(ctx.environ) / "Library" / "Logs" / "memoryd").mkdir(parents=True, exist_ok=True)
    from ..fsutil import write_atomic

    write_atomic(path, content)
    ctx.print(f"wrote {path}")
    ctx.print("enable and start it with:")
    for line in _enable_commands(kind, path, ctx.environ):
        ctx.print(f"  {line}")
    return 0


def cmd_service_uninstall(args: argparse.Namespace, ctx: Context) -> int:
    kind, path = _target(args, ctx)
    if not path.exists():
        ctx.print(f"nothing to remove: {path} does not exist")
        return 0
    if INSTALL_MARK.encode() not in path.read_bytes():
        raise UsageError(f"{path} was not written by memoryd; remove it yourself")
    # What `systemctl --user disable` would remove: the enablement link to our file.
    wants = path.parent / "default.target.wants" / UNIT_NAME
    links = [wants] if kind == "systemd" and wants.is_symlink() else []
    verb = "would remove" if args.dry_run else "removed"
    if not args.dry_run:
        for link in links:
            link.unlink()
        path.unlink()
    for link in links:  # said as the user knows it: the service is disabled too
        ctx.print(f"{verb} {link} (disabled, as `systemctl --user disable memoryd` does)")
    ctx.print(f"{verb} {path}")
    ctx.print("then stop the running service with:")
    for line in _stop_commands(kind):
        ctx.print(f"  {line}")
    return 0
