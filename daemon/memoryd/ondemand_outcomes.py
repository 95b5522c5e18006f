"""Restore on demand's outcomes, as the user is told them: the last few kept in the state
database (:data:`RECENT_META`), and their words in ``status``, the expire report and the
notification a restore sends.

Apart from :mod:`memoryd.ondemand` (which restores) so that ``status`` and the expire job
read them without loading the restore machinery.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import Store

RECENT_META = "restore.recent"  # JSON list of the latest outcomes, newest last
RECENT_KEEP = 20
READ_TRIGGER = "read"  # an event's ``trigger`` when a path read asked for it (else "search")


def push_recent(recorded: str | None, event: Mapping[str, Any], keep: int = RECENT_KEEP) -> str:
    """The :data:`RECENT_META` value with ``event`` appended (the oldest dropped)."""
    import json

    events = parse_recent(recorded)
    events.append(dict(event))
    return json.dumps(events[-keep:], ensure_ascii=False)


def parse_recent(recorded: str | None) -> list[dict[str, Any]]:
    """The recorded outcomes (a damaged value reads as none)."""
    if not recorded:
        return []
    import json  # (here: ``status`` on an install with no restore yet never loads it)

    try:
        doc = json.loads(recorded)
    except ValueError:
        return []
    return [e for e in doc if isinstance(e, dict)] if isinstance(doc, list) else []


def recent_events(store: Store) -> list[dict[str, Any]]:
    """The latest restore-on-demand outcomes, oldest first (for status and notifications)."""
    return parse_recent(store.get_meta(RECENT_META))


# What each outcome means, in the words of status, notifications and the expire report.
OUTCOME_WORDS = {
    "restored": "restored",
    "conflict": "left alone (a file exists at that path again)",
    "changed": "left alone (the archived copy was edited since it was archived)",
    "failed": "could not be restored",
}


def outcome_words(outcome: str | None) -> str:
    """How ``status`` and the expire notification name an outcome."""
    return OUTCOME_WORDS.get(outcome or "", str(outcome))


def asked_words(event: Mapping[str, Any]) -> str:
    """What asked for a restore, as status and the expire report say it."""
    if event.get("trigger") == READ_TRIGGER:
        return "a read of its path"
    return f"search “{event.get('query')}”"


def notification_text(event: Mapping[str, Any]) -> str:
    """The one message a restore (or a refused one) sends."""
    if event["outcome"] == "restored" and event.get("trigger") == READ_TRIGGER:
        return (
            f"memoryd restored {event['path']} from the archive: the agent read that path "
            "(memory_get), so it came back before the read."
        )
    if event["outcome"] == "restored":
        return (
            f"memoryd restored {event['path']} from the archive: a search for "
            f"“{event['query']}” asked for it (score {event['score']:.2f})."
        )
    why = {
        "conflict": "a file exists at that path again. Both are left as they are.",
        "changed": (
            "it was edited in the archive since memoryd archived it, so it stays there; "
            f"`memoryd restore {event['path']}` brings it back by hand."
        ),
    }.get(event["outcome"], f"{event.get('error', 'it could not be moved')}.")
    return (
        f"memoryd did NOT restore {event['path']}: a search for “{event['query']}” asked for "
        f"the archived copy ({event['archived']}), but {why}"
    )
