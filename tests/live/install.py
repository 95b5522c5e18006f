"""Pinned Node and OpenClaw, installed from the npm registry into a reusable cache folder.

The cache (``$MEMORYD_LIVE_CACHE``, default ``~/.cache/memoryd-live``) holds one folder per
install (``node-<version>-<lock hash>/``, ``openclaw-<version>[-<lock hash>]/``), written
once (installed beside, renamed into place) and then only read, so only the first run
downloads anything and runs side by side never disturb each other. npm's own cache is
reused as well. Node and the newest OpenClaw are pinned to the last dependency: their
``package-lock.json`` is committed (``npm/``) and installed with ``npm ci``; the older
releases are pinned to their own version.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

NODE_VERSION = "24.21.0"  # OpenClaw 2026.9 wants >=24.16 <25; the registry's `node` package
NEWEST = "2026.9.6"
# Versions recorded (docs/openclaw-versions.md says why each one).
VERSIONS = ("2026.9.6", "2026.8.1", "2026.7.35", "2026.5.28")
INSTALL_TIMEOUT_S = 900
LOCKS = Path(__file__).resolve().parent / "npm"  # <name>/package.json + package-lock.json


def cache_root() -> Path:
    """Where installs are kept between runs."""
    env = os.environ.get("MEMORYD_LIVE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "memoryd-live"


@dataclass(frozen=True)
class Runtime:
    """A usable Node binary and OpenClaw entry point."""

    node: Path
    openclaw: Path  # openclaw.mjs
    version: str

    @property
    def bin_dir(self) -> Path:
        return self.node.parent


def _lock_of(name: str) -> Path | None:
    lock = LOCKS / name / "package-lock.json"
    return lock if lock.exists() else None


def _folder_name(stem: str, lock: Path | None) -> str:
    """A cache folder named by what it holds: the version, and the lock's hash when pinned
    to the last dependency (another lock gets another folder; none is ever rewritten)."""
    if lock is None:
        return stem
    return f"{stem}-{hashlib.sha256(lock.read_bytes()).hexdigest()[:12]}"


def _install_once(folder: Path, spec: str, path_prefix: Path | None, lock: Path | None,
                  wanted: Path) -> None:
    """Install into a fresh folder beside ``folder`` and rename it into place when
    ``wanted`` (a path inside it) exists: a folder in the cache is complete or absent, and
    a run using it is never pulled from under its feet by another run installing."""
    if (folder / wanted).exists():
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        if lock is not None:
            shutil.copyfile(lock.parent / "package.json", staging / "package.json")
            shutil.copyfile(lock, staging / "package-lock.json")
            args = ["ci", "--no-audit", "--no-fund"]
        else:
            (staging / "package.json").write_text(
                '{"name": "memoryd-live-cache", "private": true}\n')
            args = ["install", "--no-audit", "--no-fund", "--save-exact", spec]
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm is needed to install the live harness's Node and OpenClaw")
        env = dict(os.environ)
        if path_prefix is not None:
            env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
        with (staging / "install.log").open("a") as log:
            proc = subprocess.run([npm, *args], cwd=staging, env=env, stdout=log,
                                  stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT_S)
        if proc.returncode != 0:
            kept = folder.parent / f"{folder.name}.failed.log"
            shutil.copyfile(staging / "install.log", kept)
            raise SystemExit(f"npm {args[0]} {spec} failed (exit {proc.returncode}): see {kept}")
        if not (staging / wanted).exists():
            raise SystemExit(f"{spec} installed no {wanted}")
        try:
            staging.rename(folder)
        except OSError:
            if not (folder / wanted).exists():  # (else another run finished first: use it)
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def ensure_node(root: Path | None = None) -> Path:
    """The pinned Node binary, installed from the registry's ``node`` package if missing."""
    lock = _lock_of("node24")
    folder = (root or cache_root()) / _folder_name(f"node-{NODE_VERSION}", lock)
    binary = Path("node_modules") / "node" / "bin" / "node"
    _install_once(folder, f"node@{NODE_VERSION}", None, lock, binary)
    return folder / binary


def ensure_openclaw(version: str = NEWEST, root: Path | None = None) -> Runtime:
    """Node and ``openclaw@version``, each installed once into the cache."""
    node = ensure_node(root)
    lock = _lock_of(f"openclaw-{version}")
    folder = (root or cache_root()) / _folder_name(f"openclaw-{version}", lock)
    entry = Path("node_modules") / "openclaw" / "openclaw.mjs"
    _install_once(folder, f"openclaw@{version}", node.parent, lock, entry)
    return Runtime(node=node, openclaw=folder / entry, version=version)
