"""The slow, obvious forms of three rules the runtime computes a faster way.

Each is the rule written out over every item, kept here (test-only code, not in the wheel)
so the tests can hold the runtime's form to it and ``bench/`` can replay with it:

* :func:`restore_index`: every restore-on-demand match of each call, best first
  (``memoryd simulate`` asks :func:`memoryd.commands.simulate.restore_best` for the best
  alone);
* :func:`install_need_events`: an install's need events made all at once
  (:func:`memoryd.policy.harm.need_index` makes each when harm reads it);
* :func:`archive_recall_picks`: one recall over archived notes, counted afresh
  (:class:`memoryd.tierstore.search.ArchiveRecall` keeps each word's counts between recalls).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memoryd.policy.harm import OTHER, READ, SEARCH, NeedEvent
from memoryd.policy.replay import Call, ReplayHit
from memoryd.policy.restore_match import Matcher
from memoryd.tierstore.search import ArchiveRecall


def restore_index(
    calls: Sequence[Any], texts: dict[str, str]
) -> list[list[tuple[str, float, bool]]]:
    """Per call: the files its query matches at or above the restore threshold, best
    first, and whether the query uses one of the file's distinctive words."""
    matcher = Matcher(texts)
    cache: dict[str, list[tuple[str, float, bool]]] = {}
    out = []
    for call in calls:
        if call.query not in cache:
            cache[call.query] = matcher.candidates(call.query)
        out.append(cache[call.query])
    return out


def install_need_events(hits: Iterable[ReplayHit], calls: Sequence[Call]) -> list[NeedEvent]:
    """The need events of a real install, where only hits are known: every strong hit (a
    ``memory_get``; a search hit retrieved first or read later, ``ReplayHit.strong``),
    the search by the call recorded at its time; in order of time, then path."""
    at: dict[float, int] = {}
    for i, c in enumerate(calls):
        at.setdefault(c.ts, i)
    out = []
    for path, ts, kind, rank, read_at in hits:
        if kind == "search" and rank is not None and rank != 1 and (
            read_at is None or not read_at <= math.inf
        ):
            continue
        if kind == "get":
            out.append(NeedEvent(path, ts, READ))
        else:
            call = at.get(ts)
            out.append(NeedEvent(path, ts, SEARCH, call) if call is not None
                       else NeedEvent(path, ts, OTHER))  # fmt: skip
    out.sort(key=lambda e: (e.ts, e.path))
    return out


def archive_recall_picks(query: str, texts: Mapping[str, str], limit: int = 3) -> list[str]:
    """The archived notes (path → text) a recall with ``query``'s words would bring back,
    counted afresh for this one recall."""
    return ArchiveRecall()(query, texts, limit)
