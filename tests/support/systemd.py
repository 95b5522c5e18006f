"""systemd's own check of a user unit memoryd writes, run as a throw-away user's home
(``test_service_files`` on the unit alone, ``test_first_hour`` on the one a first run wrote)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path


def systemd_verify(unit: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """``systemd-analyze --user verify`` as ``home``'s user. Its runtime folder has a short
    name: systemd also loads the system's user units, whose sockets (gpg-agent's) must fit
    in the 108 bytes of a socket address."""
    with tempfile.TemporaryDirectory(prefix="xdg") as runtime:
        env = {**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": runtime}
        return subprocess.run(
            ["systemd-analyze", "--user", "verify", str(unit)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
