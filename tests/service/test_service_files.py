"""The systemd unit and the launchd plist: valid for their tools, installed and removed cleanly."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.commands.service_files import (
    LAUNCHD_LABEL,
    render_launchd_plist,
    render_systemd_unit,
)
from support.systemd import systemd_verify

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "systemd" / "memoryd.service"
PLIST = REPO / "launchd" / f"{LAUNCHD_LABEL}.plist"


def unit_settings(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            out[key] = value
    return out


def cli(home: Path, *args: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_"))}
    env["HOME"] = str(home)
    cmd = [sys.executable, "-m", "memoryd"]
    if config is not None:
        cmd += ["--config", str(config)]
    return subprocess.run(
        [*cmd, *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_the_repository_files_are_the_renderings_the_installer_writes() -> None:
    assert UNIT.read_text() == render_systemd_unit("%h/.local/bin/memoryd", None)
    assert PLIST.read_bytes() == render_launchd_plist(
        "/usr/local/bin/memoryd", None, "/Users/you/Library/Logs/memoryd"
    )


def test_the_unit_is_a_notify_service_that_reloads_restarts_and_stops_in_time() -> None:
    s = unit_settings(UNIT.read_text())
    assert s["Type"] == "notify"
    assert s["ExecStart"] == "%h/.local/bin/memoryd run"
    assert s["ExecReload"] == "/bin/kill -HUP $MAINPID"
    assert s["Restart"] == "on-failure"
    assert s["RestartPreventExitStatus"] == "2"
    assert int(s["WatchdogSec"]) >= 10
    # The daemon waits at most 60 s for a running job, so systemd must wait longer.
    assert int(s["TimeoutStopSec"]) > 60
    assert s["NoNewPrivileges"] == "yes" and s["UMask"] == "0077"
    assert s["WantedBy"] == "default.target"


needs_systemd = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)


@needs_systemd
def test_systemd_analyze_verify_accepts_the_repository_unit(tmp_path: Path) -> None:
    exe = tmp_path / ".local" / "bin" / "memoryd"  # what %h/.local/bin/memoryd points to
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    unit = tmp_path / "memoryd.service"
    shutil.copy(UNIT, unit)
    done = systemd_verify(unit, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr


@needs_systemd
def test_service_install_writes_a_unit_that_verifies_then_uninstall_removes_it(
    tmp_path: Path,
) -> None:
    (tmp_path / ".openclaw").mkdir()  # an OpenClaw install for the service to follow
    config = tmp_path / "my config.toml"
    config.write_text("[log]\nlevel = 'info'\n")
    done = cli(tmp_path, "service", "install", "--systemd", config=config)
    assert done.returncode == 0, done.stderr
    unit = tmp_path / ".config" / "systemd" / "user" / "memoryd.service"
    assert f"wrote {unit}" in done.stdout
    for command in ("systemctl --user enable --now memoryd", "loginctl enable-linger"):
        assert command in done.stdout
    s = unit_settings(unit.read_text())
    exe = Path(sys.executable).parent / "memoryd"
    assert s["ExecStart"] == f'{exe} --config "{config}" run'
    verified = systemd_verify(unit, tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert verified.stderr.strip() == "", verified.stderr

    # Enabled (as systemctl would do it), then removed: the enablement link goes too.
    wants = unit.parent / "default.target.wants"
    wants.mkdir()
    (wants / "memoryd.service").symlink_to(unit)
    gone = cli(tmp_path, "service", "uninstall", "--systemd")
    assert gone.returncode == 0, gone.stderr
    assert not unit.exists() and not (wants / "memoryd.service").is_symlink()
    assert "systemctl --user stop memoryd" in gone.stdout
    assert "disabled, as `systemctl --user disable memoryd` does" in gone.stdout


def test_the_plist_is_a_keepalive_background_agent_plistlib_and_plutil_accept() -> None:
    doc = plistlib.loads(PLIST.read_bytes())
    assert doc["Label"] == LAUNCHD_LABEL
    assert doc["RunAtLoad"] is True
    assert doc["KeepAlive"] == {"SuccessfulExit": False}
    assert doc["ProcessType"] == "Background"
    assert all(Path(a).is_absolute() for a in doc["ProgramArguments"][:1])
    assert doc["ProgramArguments"][-1] == "run"
    assert Path(doc["StandardErrorPath"]).is_absolute()
    # launchd's own PATH has no Homebrew: a summarizer_command must be found all the same.
    path = doc["EnvironmentVariables"]["PATH"].split(":")
    assert {"/opt/homebrew/bin", "/usr/local/bin", "/usr/bin"} <= set(path)
    assert all(Path(p).is_absolute() for p in path)
    if shutil.which("plutil"):
        lint = subprocess.run(["plutil", "-lint", str(PLIST)], capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr


def test_launchd_install_dry_run_install_refusal_and_uninstall(tmp_path: Path) -> None:
    (tmp_path / ".openclaw").mkdir()  # an OpenClaw install for the service to follow
    agents = tmp_path / "Library" / "LaunchAgents"
    target = agents / f"{LAUNCHD_LABEL}.plist"

    dry = cli(tmp_path, "service", "install", "--launchd", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"# would write {target}" in dry.stdout
    assert not target.exists()
    assert "<key>Label</key>" in dry.stdout

    done = cli(tmp_path, "service", "install", "--launchd")
    assert done.returncode == 0, done.stderr
    doc = plistlib.loads(target.read_bytes())
    assert doc["ProgramArguments"] == [str(Path(sys.executable).parent / "memoryd"), "run"]
    # The installing shell's PATH (absolute entries), after the folder of memoryd itself.
    carried = doc["EnvironmentVariables"]["PATH"].split(":")
    assert carried[0] == str(Path(sys.executable).parent)
    system = {"/usr/bin", "/bin", "/usr/sbin", "/sbin"}
    assert set(carried[1:]) <= set(os.environ["PATH"].split(":")) | system
    assert all(Path(p).is_absolute() for p in carried) and len(set(carried)) == len(carried)
    assert f"launchctl bootout gui/$(id -u)/{LAUNCHD_LABEL}" in done.stdout  # an upgrade
    assert doc["StandardErrorPath"] == str(tmp_path / "Library/Logs/memoryd/memoryd.log")
    assert (tmp_path / "Library" / "Logs" / "memoryd").is_dir()
    assert f"launchctl bootstrap gui/$(id -u) {target}" in done.stdout
    again = cli(tmp_path, "service", "install", "--launchd")
    assert again.returncode == 0, "re-installing over our own file is an upgrade"

    dry_gone = cli(tmp_path, "service", "uninstall", "--launchd", "--dry-run")
    assert f"would remove {target}" in dry_gone.stdout and target.exists()
    gone = cli(tmp_path, "service", "uninstall", "--launchd")
    assert gone.returncode == 0 and not target.exists()
    assert f"launchctl bootout gui/$(id -u)/{LAUNCHD_LABEL}" in gone.stdout

    # A file someone else wrote is never overwritten or removed without --force.
    target.write_text("<plist>mine</plist>")
    refused = cli(tmp_path, "service", "install", "--launchd")
    assert refused.returncode == 2
    assert "was not written by memoryd" in refused.stderr or "not written by" in refused.stderr
    assert target.read_text() == "<plist>mine</plist>"
    assert cli(tmp_path, "service", "uninstall", "--launchd").returncode == 2
    assert target.exists()
    forced = cli(tmp_path, "service", "install", "--launchd", "--force")
    assert forced.returncode == 0 and plistlib.loads(target.read_bytes())["RunAtLoad"] is True


def test_launchd_agent_runs_the_stable_name_on_path_and_carries_the_fs_override(
    tmp_path: Path,
) -> None:
    """Homebrew links bin/memoryd into a versioned Cellar folder that an upgrade removes:
    the agent must run the link on PATH, not the file beside this interpreter."""
    (tmp_path / ".openclaw").mkdir()
    brew_bin = tmp_path / "homebrew" / "bin"
    brew_bin.mkdir(parents=True)
    (brew_bin / "memoryd").symlink_to(Path(sys.executable).parent / "memoryd")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_"))}
    env.update(
        HOME=str(tmp_path),
        PATH=f"{brew_bin}:relative/bin:/usr/bin:/bin",
        MEMORYD_FS_TRAITS="macos",
    )
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "service", "install", "--launchd"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc = plistlib.loads(
        (tmp_path / "Library/LaunchAgents" / f"{LAUNCHD_LABEL}.plist").read_bytes()
    )
    assert doc["ProgramArguments"] == [str(brew_bin / "memoryd"), "run"]
    assert doc["EnvironmentVariables"]["PATH"] == f"{brew_bin}:/usr/bin:/bin:/usr/sbin:/sbin"
    assert doc["EnvironmentVariables"]["MEMORYD_FS_TRAITS"] == "macos"


def test_an_install_from_a_bare_shell_still_gives_the_agent_the_system_folders() -> None:
    """`env PATH=/opt/homebrew/bin memoryd service install` (or a PATH of relative entries
    only) left the agent without /usr/bin: a summarizer_command calling curl or python3
    failed under launchd only."""
    from memoryd.commands.service_files import launchd_path

    for shell_path in ("/opt/homebrew/bin", "bin:.", "/opt/homebrew/bin:/usr/bin"):
        got = launchd_path("/opt/homebrew/bin/memoryd", shell_path).split(":")
        assert got[0] == "/opt/homebrew/bin"
        assert {"/usr/bin", "/bin", "/usr/sbin", "/sbin"} <= set(got)
        assert len(got) == len(set(got)) and all(p.startswith("/") for p in got)


@needs_systemd
@pytest.mark.parametrize(
    "folder", ["My Clones/memoryd 100%", "cost$HOME ${X}", "Bob's clones", 'a "b" \\c', "t\tab"]
)
def test_a_unit_for_a_clone_path_with_spaces_percent_or_dollar_verifies(
    tmp_path: Path, folder: str
) -> None:
    """A clone under a folder with a space, a ``%``, a ``$`` or a quote: ``ExecStart`` held
    the program path as it is, so systemd split it at the space (``Command /…/My is not
    executable``), expanded ``%h`` inside ``100%home``; a quote, a backslash or a tab it
    refuses in a program's path at all. The path is now one escaped word (an argument of
    ``/usr/bin/env`` where systemd refuses it as the program), and ``systemd-analyze verify``
    finds the program it names; an argument's ``$`` is doubled, as systemd would otherwise
    substitute it."""
    from memoryd.commands.service_files import render_systemd_unit

    exe = tmp_path / folder / ".venv" / "bin" / "memoryd"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    config = tmp_path / folder / "memoryd $x.toml"
    unit = tmp_path / "memoryd.service"
    unit.write_text(render_systemd_unit(str(exe), str(config)))
    exec_start = unit_settings(unit.read_text())["ExecStart"]
    assert '--config "' in exec_start and "memoryd $$x.toml" in exec_start, exec_start
    verified = systemd_verify(unit, tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert verified.stderr.strip() == "", verified.stderr


def test_the_launchctl_line_to_paste_keeps_a_home_with_a_space_one_word(tmp_path: Path) -> None:
    """``/Users/Jane Doe``: the plist was right, but the printed ``launchctl bootstrap``
    line split the path at the space when pasted into a shell. It is shell-quoted now."""
    import shlex

    home = tmp_path / "Jane Doe"
    (home / ".openclaw").mkdir(parents=True)
    done = cli(home, "service", "install", "--launchd")
    assert done.returncode == 0, done.stderr
    target = home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"
    [line] = [ln for ln in done.stdout.splitlines() if "launchctl bootstrap" in ln]
    assert shlex.split(line.split("#")[0])[-1] == str(target)
