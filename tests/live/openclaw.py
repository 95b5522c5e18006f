"""Running the real OpenClaw against the scripted model: an install's folders, its config,
the gateway as a process group of its own, and one agent turn at a time.

Every wait is bounded and every process is ended by its own process group, so a run that
goes wrong leaves no gateway behind. OpenClaw only ever sees 127.0.0.1: its model is the
scripted one, and proxies in its environment point at a closed local port so that nothing
else is reached even if the program tries.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .install import Runtime

TURN_TIMEOUT_S = 240
GATEWAY_START_TIMEOUT_S = 240
CALL_TIMEOUT_S = 120
TOKEN = "memoryd-live-token"
NOTES = {
    "MEMORY.md": "# Memory\n\nThe user prefers green tea and short answers.\n",
    "memory/alpha.md": "# Project alpha\n\nAlpha runs on postgres 16 with a nightly vacuum.\n",
    "memory/beta.md": "# Project beta\n\nBeta caches sessions in redis; postgres has orders.\n",
    "memory/gamma.md": "# Gamma\n\nGamma is the kayak trip planned for June on the lake.\n",
    "memory/delta.md": "# Delta\n\nDelta is the tax filing: receipts are in the blue folder.\n",
    "memory/people/ana.md": "# Ana\n\nAna is the dentist; appointments are on Tuesdays.\n",
    "memory/2026-11-30.md": "# 2026-11-30\n\nCalled the plumber about the kitchen sink leak.\n",
    "memory/recipes.md": "# Recipes\n\nLentil soup: lentils, carrots, cumin, lemon.\n",
}
OPS_NOTES = {
    "MEMORY.md": "# Ops memory\n\nThe ops agent watches the backup jobs.\n",
    "memory/backups.md": "# Backups\n\nBackups run at 02:00 to the NAS; restore drills monthly.\n",
    "memory/oncall.md": "# On call\n\nOn call rotates weekly; the pager is quiet on weekends.\n",
}


def version_key(version: str) -> tuple[int, ...]:
    """``2026.7.35`` as (2026, 7, 35), for comparing releases."""
    return tuple(int(x) for x in version.split("-")[0].split("."))


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_notes(workspace: Path, notes: dict[str, str]) -> None:
    for rel, text in notes.items():
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@dataclass
class Install:
    """One OpenClaw install under ``root``: ``state/`` (OPENCLAW_STATE_DIR), ``ws/``
    (the main agent's workspace), ``ws-ops/`` (a second agent's), ``home/`` (HOME)."""

    root: Path
    runtime: Runtime
    model_port: int
    tool_search: Any = None  # None: leave unset (OpenClaw's default); else tools.toolSearch
    agents: tuple[str, ...] = ("main",)
    gateway_port: int = field(default_factory=free_port)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def config_path(self) -> Path:
        return self.state / "openclaw.json"

    def workspace(self, agent: str = "main") -> Path:
        return self.root / ("ws" if agent == "main" else f"ws-{agent}")

    def create(self) -> None:
        """The folders, the notes and ``openclaw.json``."""
        for d in (self.state, self.root / "home"):
            d.mkdir(parents=True, exist_ok=True)
        write_notes(self.workspace("main"), NOTES)
        for agent in self.agents[1:]:
            write_notes(self.workspace(agent), OPS_NOTES)
        self.write_config()

    def config(self) -> dict[str, Any]:
        provider = {
            "baseUrl": f"http://127.0.0.1:{self.model_port}/v1",
            "apiKey": "local-scripted",
            "api": "openai-completions",
            "models": [{
                "id": "scripted", "name": "Scripted", "reasoning": False, "input": ["text"],
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                "contextWindow": 128000, "maxTokens": 4096,
            }],
        }
        cfg: dict[str, Any] = {
            "models": {"mode": "merge", "providers": {"scripted": provider}},
            "agents": {"defaults": {"model": {"primary": "scripted/scripted"},
                                    "workspace": str(self.workspace("main"))}},
            "gateway": {"mode": "local", "bind": "loopback", "port": self.gateway_port,
                        "auth": {"mode": "token", "token": TOKEN}},
        }
        # Keyword-only memory search, no embeddings (where the version has that), and the
        # agents list, each where this version's config keeps them.
        if version_key(self.runtime.version) >= (2026, 8, 1):
            cfg["memory"] = {"search": {"provider": "none"}}
        elif version_key(self.runtime.version) >= (2026, 7, 1):
            cfg["agents"]["defaults"]["memorySearch"] = {"provider": "none"}
        else:  # no keyword-only mode yet: embeddings from the scripted model's endpoint
            cfg["agents"]["defaults"]["memorySearch"] = {"provider": "scripted",
                                                         "model": "scripted"}
        if len(self.agents) > 1:
            entries = {a: ({"default": True, "workspace": str(self.workspace(a))} if a == "main"
                           else {"workspace": str(self.workspace(a))}) for a in self.agents}
            if version_key(self.runtime.version) >= (2026, 8, 1):
                cfg["agents"]["entries"] = entries
            else:
                cfg["agents"]["list"] = [{"id": a, **e} for a, e in entries.items()]
        if self.tool_search is not None:
            cfg["tools"] = {"toolSearch": self.tool_search}
        _merge(cfg, self.extra)
        return cfg

    def write_config(self) -> None:
        self.config_path.write_text(json.dumps(self.config(), indent=2) + "\n", encoding="utf-8")

    def env(self) -> dict[str, str]:
        dead = "http://127.0.0.1:9"  # a closed port: any request not to the model fails
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "CLAWDBOT_"))}
        env.update({
            "HOME": str(self.root / "home"),
            "OPENCLAW_STATE_DIR": str(self.state),
            "OPENCLAW_CONFIG_PATH": str(self.config_path),
            "OPENCLAW_GATEWAY_TOKEN": TOKEN,
            "OPENCLAW_DISABLE_BONJOUR": "1",
            "OPENCLAW_SKIP_CHANNELS": "1",
            "OPENCLAW_NO_AUTO_UPDATE": "1",
            "OPENCLAW_NO_RESPAWN": "1",
            "PATH": f"{self.runtime.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "http_proxy": dead, "https_proxy": dead,
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
            "NODE_USE_ENV_PROXY": "1",
            "NO_COLOR": "1",
        })
        return env

    def command(self, *args: str) -> list[str]:
        return [str(self.runtime.node), str(self.runtime.openclaw), *args]


def _merge(into: dict[str, Any], extra: dict[str, Any]) -> None:
    """A phase's settings over the install's: tables merged key by key, values replaced."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


class CommandFailed(RuntimeError):
    pass


def run_bounded(cmd: list[str], env: dict[str, str], timeout: float, log: Path,
                cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command in its own process group, killed whole if it outlives ``timeout``;
    its stderr is appended to ``log``."""
    with log.open("a", encoding="utf-8") as err:
        err.write(f"\n$ {' '.join(cmd[1:])}\n")
        err.flush()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err, text=True,
                                start_new_session=True, cwd=cwd)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            raise CommandFailed(f"timed out after {timeout:.0f} s: {' '.join(cmd[2:5])}") from None
        finally:
            kill_group(proc)  # whatever it left running in its group
    return subprocess.CompletedProcess(cmd, proc.returncode, out, "")


def kill_group(proc: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """SIGTERM the process's group, then SIGKILL what is left after ``grace`` seconds."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


class Gateway:
    """``openclaw gateway run`` for one install, in a process group of its own."""

    def __init__(self, inst: Install, log: Path) -> None:
        self.inst = inst
        self.log = log
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Gateway:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        out = self.log.open("a", encoding="utf-8")
        out.write("\n$ gateway run\n")
        out.flush()
        self.proc = subprocess.Popen(
            self.inst.command("gateway", "run", "--port", str(self.inst.gateway_port)),
            env=self.inst.env(), stdout=out, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        out.close()
        deadline = time.monotonic() + GATEWAY_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise CommandFailed(
                    f"gateway exited {self.proc.returncode} at start: see {self.log}")
            if self._ready():
                return
            time.sleep(0.5)
        self.stop()
        raise CommandFailed(f"gateway not ready after {GATEWAY_START_TIMEOUT_S} s: see {self.log}")

    def _ready(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.inst.gateway_port), timeout=1):
                pass
        except OSError:
            return False
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return "[gateway] ready" in text.rsplit("$ gateway run", 1)[-1]

    def stop(self) -> None:
        if self.proc is not None:
            kill_group(self.proc, grace=30.0)
            self.proc = None


def agent_turn(inst: Install, key: str, message: str, log: Path, agent: str = "main",
               local: bool = False) -> dict[str, Any]:
    """One turn (``openclaw agent ... --json``); its JSON reply. ``local`` runs it embedded
    (no gateway may be running then)."""
    args = ["agent", "--agent", agent, "--session-key", key, "--message", message, "--json"]
    if local:
        args.append("--local")
    proc = run_bounded(inst.command(*args), inst.env(), TURN_TIMEOUT_S, log)
    if proc.returncode != 0:
        raise CommandFailed(
            f"agent turn exited {proc.returncode} ({key}): see {log}\n{proc.stdout[-800:]}")
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return {"raw": proc.stdout[-2000:]}


def gateway_call(inst: Install, method: str, params: dict[str, Any], log: Path) -> dict[str, Any]:
    """``openclaw gateway call <method> --params <json> --json``; its JSON reply."""
    proc = run_bounded(
        inst.command("gateway", "call", method, "--params", json.dumps(params), "--json",
                     "--timeout", str(CALL_TIMEOUT_S * 1000)),
        inst.env(), CALL_TIMEOUT_S + 30, log)
    if proc.returncode != 0:
        raise CommandFailed(
            f"gateway call {method} exited {proc.returncode}: see {log}\n{proc.stdout[-800:]}")
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return {"raw": proc.stdout[-2000:]}
