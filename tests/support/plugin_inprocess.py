"""memoryd's side of the OpenClaw plugin in the pytest process: a throw-away install (a fixture)
and the command line run on it, its output read from ``capsys``.

``test_plugin`` (what the plugin reads) and ``test_plugin_install`` (installing it) share them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoryd import cli


@pytest.fixture
def install(tmp_path: Path) -> dict[str, Path]:
    """An OpenClaw install (state, workspace with bootstrap files), a tier store, a config."""
    state = tmp_path / "state"
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    state.mkdir()
    (state / "openclaw.json").write_text(
        json.dumps({"agents": {"defaults": {"workspace": str(ws)}}}), encoding="utf-8"
    )
    (ws / "MEMORY.md").write_text(
        "# Memory\n\nThe user prefers green tea and short answers, always.\n", encoding="utf-8"
    )
    (ws / "AGENTS.md").write_text("# Agents\n\nBe brief.\n", encoding="utf-8")
    (ws / "memory" / "kayak.md").write_text("# Kayak\n\nThe kayak trip is in June.\n")
    hot = state / "memory_fs" / "hot"
    hot.mkdir(parents=True)
    cfg = tmp_path / "memoryd.toml"
    cfg.write_text(
        f'[openclaw]\nstate_dir = "{state}"\n[state]\ndir = "{tmp_path / "mstate"}"\n',
        encoding="utf-8",
    )
    return {"state": state, "ws": ws, "hot": hot, "cfg": cfg, "root": tmp_path}


def run(capsys: pytest.CaptureFixture[str], cfg: Path, *args: str) -> tuple[int, str]:
    code = cli.main(["--config", str(cfg), *args])
    return code, capsys.readouterr().out


def run_json(capsys: pytest.CaptureFixture[str], cfg: Path, *args: str) -> dict:
    code, out = run(capsys, cfg, *args)
    assert code == 0, out
    return json.loads(out)
