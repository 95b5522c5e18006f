"""A small install with two promotion candidates (a procedure and a preference) and a
``MEMORY.md``, for the promotion tests, which play the sub-session by writing files."""

from __future__ import annotations

import os
from pathlib import Path

from support import transcripts as tx
from support.inprocess import memoryd as run_memoryd

NOW = 1_796_000_000.0  # 2026-11-30
MEMORY = "# Long-term memory\n\n## People\n- Ana runs the boat club.\n\n## Food\n- No coriander.\n"
DEPLOY = "# Deploy\n\n1. build\n2. push\n3. restart the service\n"


def promote_install(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """(workspace, environment for memoryd): ``memory/deploy.md`` (a procedure) and
    ``memory/tea.md`` (a preference) marked, so both are candidates; ``skills/deploy/``."""
    _, ws, cfg = tx.make_install(tmp_path, [])
    (ws / "memory").mkdir()
    (ws / "memory" / "deploy.md").write_text(DEPLOY, encoding="utf-8")
    (ws / "memory" / "tea.md").write_text("# Tea\n\nAna prefers green tea, no sugar.\n")
    (ws / "MEMORY.md").write_text(MEMORY, encoding="utf-8")
    (ws / "skills" / "deploy").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))
    for rel in ("memory/deploy.md", "memory/tea.md"):
        assert run_memoryd(["mark", rel], env=env).returncode == 0
    return ws, env
