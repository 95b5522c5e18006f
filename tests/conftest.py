"""Shared test set-up: the test helpers folder on sys.path, a clean environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# Tests never see the developer's own OpenClaw install or memoryd config.
for var in (
    "OPENCLAW_STATE_DIR",
    "CLAWDBOT_STATE_DIR",
    "OPENCLAW_HOME",
    "OPENCLAW_CONFIG_PATH",
    "MEMORYD_CONFIG",
    "MEMORYD_NOW",
    "MEMORYD_CLOCK_OFFSET",
    "NOTIFY_SOCKET",
):
    os.environ.pop(var, None)
