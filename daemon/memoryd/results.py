"""The shape every typed job result shares: a summary line, whether it changed anything,
and ``as_dict()``, the JSON document the commands print (``data``, for a reader that takes
any job's result, such as the daemon's log line). Callers read the typed fields, never keys.
"""

from __future__ import annotations

from typing import Any


class JobOutcome:
    """Base of the typed job results (subclasses are dataclasses with the fields)."""

    summary: str
    changed: bool

    def as_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def data(self) -> dict[str, Any]:
        return self.as_dict()


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 hit``, ``2 hits``, ``0 files``: a count and its noun, as a person writes them."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
