"""memoryd's exit codes, shared by the command line and the daemon.

A supervisor (systemd's ``Restart=on-failure``, launchd's ``KeepAlive``) and a script read
them alike, so they are written once: 0 done, 1 something failed that a retry may fix,
2 a person must fix something first (bad arguments, bad configuration, a second daemon).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
