"""Rails on the scheduled expire: the user's consent, and a cap on one run. Pure.

The monthly expire moves a person's notes while nobody watches, so two rails hold it:

* **Consent.** Until the user has said yes once (``expire.auto = true``, or ``memoryd expire
  --schedule``, recorded as :data:`CONSENT_META`; an older memoryd's ``expire --force``
  record stays valid), a scheduled run only reports what it would move.
* **The cap.** One scheduled run moves at most ``expire.max_fraction_per_run`` of the files
  taking part; the rest is reported, and a second run of the month counts what the first
  moved. ``expire --force`` by hand applies its whole printed plan: the person has read it.
* **What a search brought back stays.** A file restored on demand in the last
  :data:`RESTORED_GRACE_DAYS` days is not archived by a scheduled run: the search that
  brought it back could not count as its hit. Nor one the person restored from expire's
  archive (``restore --last``, ``restore PATH``) in those days: that is their no to the move.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

CONSENT_META = "expire.consent"  # meta key: {"by": "expire --schedule", "at": epoch seconds}
# Who may have recorded a yes: the flag of its own, and `expire --force` before it (kept valid).
RECORDED_BY = ("expire --schedule", "expire --force")
# The record of a yes taken back: scheduled runs report only again, until the next yes.
TAKEN_BACK_BY = "expire --no-schedule"
RESTORED_GRACE_DAYS = 60  # the horizon `simulate` judges an archive by

T = TypeVar("T")


class _HasPath(Protocol):
    @property
    def path(self) -> str: ...


P = TypeVar("P", bound=_HasPath)


class Consent(NamedTuple):
    """Whether scheduled expire runs may move files, and who said so. (A named tuple:
    ``status`` reads it, and importing dataclasses costs more than this module.)"""

    given: bool
    by: str | None  # "expire.auto" | "expire --schedule" | "expire --force" (older) | None
    at: float | None = None  # when the yes was recorded (None for the config)

    def describe(self) -> str:
        """One line for ``status`` and notifications."""
        if not self.given and self.by == TAKEN_BACK_BY:
            return (
                f"report only: the yes was taken back with `memoryd {TAKEN_BACK_BY}`"
                + (f" at {_iso(self.at)}" if self.at is not None else "")
                + " (`memoryd expire --schedule` says it again)"
            )
        if not self.given:
            return (
                "report only: scheduled runs move nothing until you say yes once "
                "(`memoryd expire --schedule`, or expire.auto = true)"
            )
        if self.by == "expire.auto":
            return "allowed by expire.auto = true in the config"
        return f"allowed by `memoryd {self.by}`" + (
            f" at {_iso(self.at)}" if self.at is not None else ""
        )


def _iso(ts: float) -> str:
    from ..clock import iso

    return iso(ts) or "?"


def consent_record(now: float, by: str = RECORDED_BY[0]) -> str:
    """The meta value ``expire --schedule`` stores (``expire --no-schedule``: its no)."""
    import json

    return json.dumps({"by": by, "at": now})


def consent_of(auto: bool, recorded: str | None) -> Consent:
    """The consent in force: the config's ``expire.auto`` first, else the recorded yes. A
    damaged record is no yes: asking again is harmless, moving files on a misread is not."""
    if auto:
        return Consent(True, "expire.auto")
    if not recorded:
        return Consent(False, None)
    import json  # (here: ``status`` before any consent was recorded never loads it)

    try:
        doc: Any = json.loads(recorded)
    except ValueError:
        return Consent(False, None)
    if not isinstance(doc, dict) or doc.get("by") not in (*RECORDED_BY, TAKEN_BACK_BY):
        return Consent(False, None)
    at = doc.get("at")
    if doc["by"] == TAKEN_BACK_BY:
        return Consent(False, TAKEN_BACK_BY, float(at) if isinstance(at, int | float) else None)
    return Consent(True, str(doc["by"]), float(at) if isinstance(at, int | float) else None)


def spare_restored(items: Sequence[P], restored: Iterable[str]) -> tuple[list[P], list[P]]:
    """(still to archive, spared): plan items whose ``path`` a search brought back lately."""
    back = set(restored)
    return [i for i in items if i.path not in back], [i for i in items if i.path in back]


def run_limit(participants: int, max_fraction: float) -> int:
    """How many files one scheduled run may move: ⌊fraction × files taking part⌋, rounded
    down so the share is never exceeded (with 0.25, a run over 3 files moves none)."""
    if participants <= 0 or max_fraction <= 0:
        return 0
    return min(participants, math.floor(max_fraction * participants + 1e-9))


def cap(
    items: Sequence[T],
    participants: int,
    max_fraction: float,
    surest_first: Callable[[T], Any],
    already_moved: int = 0,
) -> tuple[list[T], list[T]]:
    """(moved now, held back): the ``run_limit`` items ``surest_first`` puts first, the
    moved in the plan's own order. ``already_moved``: files a run of the same period moved
    before (``participants`` counts them)."""
    limit = max(0, run_limit(participants, max_fraction) - already_moved)
    if len(items) <= limit:
        return list(items), []
    ranked = sorted(range(len(items)), key=lambda i: (surest_first(items[i]), i))
    chosen = set(ranked[:limit])
    take = [it for i, it in enumerate(items) if i in chosen]
    held = [it for i, it in enumerate(items) if i not in chosen]
    return take, held
