"""Pinned Node and OpenClaw, installed from the npm registry into a reusable cache folder.

The cache (``$MEMORYD_LIVE_CACHE``, default ``~/.cache/memoryd-live``) holds one folder per
package version (``node24/`` for Node, ``oc-<version>/`` for OpenClaw); a folder is used
again when it holds a complete install (its ``.installed`` marker), so only the first run
downloads anything. npm's own cache is reused as well.
"""

from __future__ import annotations

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


def _npm_install(folder: Path, spec: str, path_prefix: Path | None) -> None:
    """``npm install <spec>`` into ``folder`` (created), with a log kept beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "package.json").exists():
        (folder / "package.json").write_text('{"name": "memoryd-live-cache", "private": true}\n')
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed to install the live harness's Node and OpenClaw")
    env = dict(os.environ)
    if path_prefix is not None:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
    with (folder / "install.log").open("a") as log:
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--save-exact", spec],
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
    if not (marker.exists() and marker.read_text().strip() == NODE_VERSION and node.exists()):
        _npm_install(folder, f"node@{NODE_VERSION}", None)
        if not node.exists():
            raise SystemExit(f"node@{NODE_VERSION} installed no binary at {node}")
        marker.write_text(NODE_VERSION + "\n")
    return node


def ensure_openclaw(version: str = NEWEST, root: Path | None = None) -> Runtime:
    """Node and ``openclaw@version``, each installed once into the cache."""
    node = ensure_node(root)
    folder = (root or cache_root()) / f"oc-{version}"
    entry = folder / "node_modules" / "openclaw" / "openclaw.mjs"
    marker = folder / ".installed"
    if not (marker.exists() and entry.exists()):
        _npm_install(folder, f"openclaw@{version}", node.parent)
        if not entry.exists():
            raise SystemExit(f"openclaw@{version} installed no {entry}")
        marker.write_text(version + "\n")
    return Runtime(node=node, openclaw=entry, version=version)
