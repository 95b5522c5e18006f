"""What every command gets: the :class:`Context` (the validated config, resolved paths, the
state database) and :class:`UsageError`, the refusal a person must fix.

Below the command modules and apart from the entry module (:mod:`memoryd.cli`), which loads
every command: a command importing the entry module would close a circle.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from ..config import Config, ConfigError, Paths, resolve_paths
from ..store import Store
from .formats import for_terminal, is_terminal

if TYPE_CHECKING:
    import argparse


class CommandLine(NamedTuple):
    """The command line itself, for the two commands that use it: ``completion`` writes a
    script from the whole parser, ``demo`` runs ``scan`` and ``hits`` on what it built."""

    parser: Callable[[], argparse.ArgumentParser]
    main: Callable[[Sequence[str]], int]


class UsageError(Exception):
    """Bad arguments a person must fix (exit 2)."""


class Context:
    """What every command gets: the validated config, resolved paths, the state database."""

    def __init__(
        self,
        cfg: Config,
        config_file: str | None,
        environ: dict[str, str] | None = None,
        out: IO[str] | None = None,
        command_line: CommandLine | None = None,
    ) -> None:
        self.cfg = cfg
        self.config_file = config_file
        self.environ = dict(os.environ) if environ is None else environ
        self.out = sys.stdout if out is None else out
        self._paths: Paths | None = None
        self._store: Store | None = None
        # Set by a command that leaves nothing behind for Python's teardown (see command()).
        self.exit_at_once = False
        # The sources a read command's catch-up scan could not read (see commands.hits.catch_up).
        self.catch_up_failed: list[dict[str, str]] = []
        # Whether a slow loop may show its progress on stderr (a terminal's; never with --json).
        self.show_progress = True
        self._command_line = command_line

    @property
    def paths(self) -> Paths:
        if self._paths is None:
            self._paths = resolve_paths(self.cfg, self.environ)
        return self._paths

    def require_openclaw(self) -> None:
        """Refuse to go on (exit 2) when there is no OpenClaw install to work for, before any
        command runs and before the state database is created: OpenClaw's own set-up must
        not find a ``~/.openclaw`` it did not make."""
        state_dir = self.paths.state_dir
        if not state_dir.is_dir():
            raise ConfigError(
                f"no OpenClaw state directory at {state_dir} (set openclaw.state_dir in the "
                "config or $OPENCLAW_STATE_DIR; `memoryd demo` shows memoryd on a generated "
                "install)"
            )

    def store(self, *, hook: bool = False) -> Store:
        """The state database, opened (and created) on first use. ``hook``: for a plugin
        hook's command, under its deadline (a pending strength fill is left to others)."""
        if self._store is None:
            self.require_openclaw()
            self._store = Store.open(self.paths.db, fill_strength=not hook)
        return self._store

    def read_store(self) -> Store:
        """The database for a look that must change nothing (a dry run, a report): read-only
        (or the one already open); an empty in-memory one when there is none, so a dry run
        on a new install creates no state at all."""
        if self._store is None:
            db = self.paths.db
            self._store = Store.open(db, readonly=True) if db.exists() else Store.memory()
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def print(self, *parts: Any) -> None:
        text = " ".join(map(str, parts))
        print(for_terminal(text) if is_terminal(self.out) else text, file=self.out)

    def command_line(self) -> CommandLine:
        """The command line this command runs in: handed in by the entry module, which no
        command imports (it loads every command, so that would be a circle)."""
        if self._command_line is None:
            raise RuntimeError("a Context made without the command line (memoryd.cli's has it)")
        return self._command_line
