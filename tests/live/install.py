"""Pinned Node and OpenClaw, installed from the npm registry into a reusable cache folder.

The cache (``$MEMORYD_LIVE_CACHE``, default ``~/.cache/memoryd-live``) holds one folder per
package version (``node24/`` for Node, ``oc-<version>/`` for OpenClaw); a folder is used
again when it holds a complete install (its ``.installed`` marker), so only the first run
downloads anything. npm's own cache is reused as well. Node and the newest OpenClaw are
pinned to the last dependency: their ``package-lock.json`` is committed (``npm/``) and
installed with ``npm ci``; the older releases are pinned to their own version.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
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


def _wanted_marker(spec: str, lock: Path | None) -> str:
    """What a complete install's ``.installed`` marker says: the spec, and the lock's hash."""
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()[:16] if lock else "unlocked"
    return f"{spec} {digest}"


def _npm_install(folder: Path, spec: str, path_prefix: Path | None,
                 lock: Path | None = None) -> None:
    """Into ``folder`` (created): ``npm ci`` from a committed lock, else ``npm install
    <spec>``; the log is kept beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    if lock is not None:
        shutil.copyfile(lock.parent / "package.json", folder / "package.json")
        shutil.copyfile(lock, folder / "package-lock.json")
        args = ["ci", "--no-audit", "--no-fund"]
    else:
        if not (folder / "package.json").exists():
            (folder / "package.json").write_text(
                '{"name": "memoryd-live-cache", "private": true}\n')
        args = ["install", "--no-audit", "--no-fund", "--save-exact", spec]
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed to install the live harness's Node and OpenClaw")
    env = dict(os.environ)
    if path_prefix is not None:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
    with (folder / "install.log").open("a") as log:
        proc = subprocess.run(
            [npm, *args],
            cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT_S,
        )
    if proc.returncode != 0:
        raise SystemExit(
            f"npm install {spec} failed (exit {proc.returncode}): see {folder}/install.log")


def ensure_node(root: Path | None = None) -> Path:
    """The pinned Node binary, installed from the registry's ``node`` package if missing."""
    folder = (root or cache_root()) / "node24"
    node = folder / "node_modules" / "node" / "bin" / "node"
    marker = folder / ".installed"
    spec, lock = f"node@{NODE_VERSION}", _lock_of("node24")
    want = _wanted_marker(spec, lock)
    if not (marker.exists() and marker.read_text().strip() == want and node.exists()):
        _npm_install(folder, spec, None, lock)
        if not node.exists():
            raise SystemExit(f"{spec} installed no binary at {node}")
        marker.write_text(want + "\n")
    return node


def ensure_openclaw(version: str = NEWEST, root: Path | None = None) -> Runtime:
    """Node and ``openclaw@version``, each installed once into the cache."""
    node = ensure_node(root)
    folder = (root or cache_root()) / f"oc-{version}"
    entry = folder / "node_modules" / "openclaw" / "openclaw.mjs"
    marker = folder / ".installed"
    spec, lock = f"openclaw@{version}", _lock_of(f"openclaw-{version}")
    want = _wanted_marker(spec, lock)
    if not (marker.exists() and marker.read_text().strip() == want and entry.exists()):
        _npm_install(folder, spec, node.parent, lock)
        if not entry.exists():
            raise SystemExit(f"{spec} installed no {entry}")
        marker.write_text(want + "\n")
    return Runtime(node=node, openclaw=entry, version=version)
