"""The service files ``memoryd service install`` writes: the systemd user unit and the
launchd agent, rendered for this machine (pure but for finding the installed executable).

The files in the repository's ``systemd/`` and ``launchd/`` folders are these same
renderings with placeholder paths (a test keeps them equal).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from .context import UsageError

LAUNCHD_LABEL = "io.github.memoryd"
UNIT_NAME = "memoryd.service"
INSTALL_MARK = "memoryd service install"  # files carrying it may be overwritten / removed


# How the command that installs the service found OpenClaw: the service must find it the
# same way, or it exits 2 (no install) and, by RestartPreventExitStatus, is never restarted.
CARRIED_ENVIRONMENT = ("OPENCLAW_STATE_DIR", "CLAWDBOT_STATE_DIR", "OPENCLAW_HOME",
                       "OPENCLAW_CONFIG_PATH")  # fmt: skip


def carried_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The OpenClaw discovery variables set now, as absolute paths (a service's cwd is /)."""
    from ..config import expand_home

    out = {}
    for name in CARRIED_ENVIRONMENT:
        value = environ.get(name)
        if value:
            out[name] = os.path.abspath(expand_home(value, environ))
    return out


def render_systemd_unit(
    exe: str, config: str | None, environment: Mapping[str, str] | None = None
) -> str:
    """The user unit. ``exe`` must be absolute (or start with a specifier such as ``%h``)."""
    # (a path's own `%` and spaces are escaped: `/My Clones/100%/.venv/bin/memoryd` split at
    # the space and expanded the `%h`; a leading `%h` is kept as the specifier; systemd
    # substitutes `$` in the arguments only, not in the program's path)
    program = _quote_systemd(exe, home_specifier=exe.startswith("%h/"))
    if any(c in "'\"\\" or not c.isprintable() for c in exe):
        # (systemd refuses these in a program's path, quoted or not: "Executable name
        # contains special characters"; as an argument of env they are a quoted word)
        program = f"/usr/bin/env {_exec_word(exe)}"
    command = (
        f"{program} --config {_exec_word(config)} run" if config else f"{program} run"
    )
    carried = "".join(
        f"Environment={_quote_systemd(f'{name}={value}')}\n"
        for name, value in (environment or {}).items()
    )
    return f"""\
# memoryd: follows OpenClaw transcripts, counts memory hits, runs the memory jobs.
# Written by `{INSTALL_MARK}`; enable with: systemctl --user enable --now memoryd
[Unit]
Description=memoryd - memory lifecycle daemon for OpenClaw agents
Documentation=man:systemd.service(5)

[Service]
Type=notify
NotifyAccess=main
ExecStart={command}
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
RestartSec=5
# Exit code 2 is a configuration problem or a second daemon: restarting will not help.
RestartPreventExitStatus=2
# The catch-up scan extends this itself (EXTEND_TIMEOUT_USEC) while it makes progress.
TimeoutStartSec=120
# SIGTERM drains the ingest worker and lets a running job finish (at most 60 s).
TimeoutStopSec=90
WatchdogSec=60
Environment=PYTHONUNBUFFERED=1
# Python objects from glibc's malloc, whose free pages the daemon hands back after each job
# (malloc_trim): its memory levels off as the history grows (docs/benchmarks.md).
Environment=PYTHONMALLOC=malloc
{carried}NoNewPrivileges=yes
UMask=0077
LockPersonality=yes
RestrictRealtime=yes

[Install]
WantedBy=default.target
"""


def _quote_systemd(value: str, *, home_specifier: bool = False) -> str:
    """One word of a unit setting: ``%`` escaped (specifiers; with ``home_specifier`` a
    leading ``%h`` stays one), quoted when it has spaces or quotes."""
    rest = value[2:] if home_specifier else value
    value = ("%h" if home_specifier else "") + rest.replace("%", "%%")
    if any(c.isspace() or c in "\"'\\" for c in value):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def _exec_word(value: str) -> str:
    """An argument of ``ExecStart=``: as :func:`_quote_systemd`, and ``$`` doubled (systemd
    substitutes ``$NAME`` and ``${NAME}`` in a command's arguments, not in ``Environment=``)."""
    return _quote_systemd(value.replace("$", "$$"))


# launchd starts an agent with PATH=/usr/bin:/bin:/usr/sbin:/sbin: no Homebrew, no
# ~/.local/bin, so a `tiers.summarizer_command` that works by hand would fail under it.
LAUNCHD_SYSTEM_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
LAUNCHD_DEFAULT_PATH = f"/opt/homebrew/bin:/usr/local/bin:{LAUNCHD_SYSTEM_PATH}"


def launchd_path(exe: str, search_path: str | None) -> str:
    """The agent's PATH: the folder of ``exe``, then the installing shell's PATH (its
    absolute entries; :data:`LAUNCHD_DEFAULT_PATH` when there is none), then launchd's
    own system folders (a shell started with a bare PATH must not leave the agent without
    ``/usr/bin``), each once."""
    entries = [
        os.path.dirname(exe),
        *(search_path or LAUNCHD_DEFAULT_PATH).split(os.pathsep),
        *LAUNCHD_SYSTEM_PATH.split(os.pathsep),
    ]
    return os.pathsep.join(dict.fromkeys(e for e in entries if os.path.isabs(e)))


def render_launchd_plist(
    exe: str,
    config: str | None,
    log_dir: str,
    environment: Mapping[str, str] | None = None,
    search_path: str | None = None,
) -> bytes:
    """The LaunchAgent (XML plist). launchd expands no ``~``: every path is absolute.
    ``search_path``: the PATH to give the agent (see :func:`launchd_path`)."""
    import plistlib  # (here: ``status`` shares this module and needs neither it nor shutil)

    args = [exe, *(["--config", config] if config else []), "run"]
    doc = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": args,
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ProcessType": "Background",
        "ThrottleInterval": 10,
        "ExitTimeOut": 90,
        "StandardOutPath": f"{log_dir}/memoryd.out.log",
        "StandardErrorPath": f"{log_dir}/memoryd.log",
        "EnvironmentVariables": {
            "PYTHONUNBUFFERED": "1",
            "MEMORYD_INSTALLED_BY": INSTALL_MARK,
            "PATH": launchd_path(exe, search_path),
            **(environment or {}),
        },
    }
    return plistlib.dumps(doc, fmt=plistlib.FMT_XML, sort_keys=False)


def installed_executable(environ: dict[str, str]) -> str:
    """Absolute path of the ``memoryd`` that runs this command (for ExecStart)."""
    import shutil

    beside = Path(sys.executable).parent / "memoryd"
    found = shutil.which("memoryd", path=environ.get("PATH"))
    if beside.is_file() and os.access(beside, os.X_OK):
        # The name on PATH when it is a link to this very file: Homebrew's bin/memoryd
        # outlives an upgrade, the versioned Cellar folder beside the interpreter does not.
        if found and os.path.realpath(found) == os.path.realpath(beside):
            return str(Path(found).absolute())
        return str(beside.absolute())
    if found:
        return str(Path(found).absolute())
    argv0 = Path(sys.argv[0])
    if argv0.name == "memoryd" and argv0.exists():
        return str(argv0.absolute())
    raise UsageError("cannot find the installed `memoryd` executable (is it on PATH?)")
