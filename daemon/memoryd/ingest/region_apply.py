"""A prescanned region applied: its needle lines, then the answers that do not name their tool.

The needle lines go to the applier as they are; an answer that names no tool holds no needle
and is found by the id of a call still waiting, with byte searches chosen by how many ids wait
and how alike they are (one search per id, one per shared prefix, or one pattern pass over the
id fields). Whichever search finds a line, it is applied once, and the rows are the same.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from .apply import Applier
from .calls import Calls, written_id
from .ledger_batch import Batch
from .parser import parse
from .prescan import Prescanned
from .stats import ScanStats
from .tailer import lines_containing

# A result's call-id field: every key the parser takes a call id from, with a string or a
# number value, so that the pattern pass finds what a byte search for the id finds.
_ID_FIELD = re.compile(
    rb'"(?:toolCallId|toolUseId|tool_call_id|tool_use_id|call_id|callId|id)"\s*:\s*'
    rb'(?:"([^"\\]{1,200})"|(-?[0-9]{1,30})\b)'
)
# More waiting calls than this: one regex pass over the id fields instead of a search per id
# (a byte search is about 12 times faster than the regex, which stops at every quote).
_DIRECT_ID_SEARCH_MAX = 12
# Ids sharing at least this many first bytes are looked for together, by one byte search.
_SHARED_PREFIX_MIN = 5
# Before one pass over a region for many waiting ids, each is looked for this far from where
# its search starts: an unnamed answer follows its call within a few lines, as a rule.
_NEAR_BYTES = 64 << 10
# At least this many ids still waiting after that (mostly calls never answered): one search per
# shared prefix finds them all (docs/benchmarks.md, "The scanner's constants").
_GROUP_PASS_MIN = 5


def apply_region(
    applier: Applier, fd: int, pre: Prescanned, data: bytes | None, batch: Batch, calls: Calls,
    stats: ScanStats,
) -> None:  # fmt: skip
    """Apply a region's needle lines in file order, then answers that do not name their tool.

    Such an answer is found by the id of a call still waiting: from the region's start for
    calls waiting since before it, after the call's own line for calls made in it; the first
    line that answers a call ends its search. What the helper already searched is taken from
    its answer; anything else is searched here (the bytes read again if the helper read them).
    """
    start, end, _, lines, by_id = pre
    earlier = set(calls.waiting_in(batch.session, batch.parent))
    made_at: dict[str, int] = {}
    applier.lines(lines, batch, calls, stats, made_at)
    waiting = calls.waiting_in(batch.session, batch.parent)
    if not waiting:
        return
    look = {cid: start if cid in earlier else made_at.get(cid, start) for cid in waiting}
    done = {begin for begin, _, _ in lines}
    # (the helper searched the ids as the file writes them; a call of a reused id is
    # waited for under its occurrence: see calls.written_id)
    written: dict[str, list[str]] = {}
    if by_id:
        for cid in look:
            written.setdefault(written_id(cid), []).append(cid)
    for raw_id, searched_from, searched_to, found in by_id:
        for call_id in written.get(raw_id, ()):
            at = look[call_id]
            if searched_from > at or calls.is_answered(call_id):
                continue  # not waiting here, or the helper looked from later than we must
            for begin, _, parsed in found:
                if begin >= at and begin not in done:
                    done.add(begin)
                    applier.parsed(parsed, batch, calls, stats)
                if calls.is_answered(call_id):
                    break
            else:
                look[call_id] = max(searched_to, at)  # what is left, if anything
    look = {cid: at for cid, at in look.items() if at < end and not calls.is_answered(cid)}
    if not look:
        return
    if data is None:
        data = os.pread(fd, end - start, start)
    stop = min(end - start, len(data))
    done = {begin - start for begin in done}
    rel = {cid: at - start for cid, at in look.items()}
    occurrences = None
    groupable = len(rel) >= _GROUP_PASS_MIN and _id_groups(rel) is not None
    if len(rel) > _DIRECT_ID_SEARCH_MAX and not groupable:
        # ids of many kinds: one pattern pass over the id fields
        for begin, line_end, call_id in sorted(_lines_with_ids(data, stop, rel)):
            if begin not in done and not calls.is_answered(call_id):
                done.add(begin)
                applier.parsed(parse(data[begin:line_end]), batch, calls, stats)
        return
    if groupable:
        # Most answers follow their call closely (_answered_near); the rest, mostly calls
        # never answered, are found together by one search a group.
        rel = _answered_near(applier, data, stop, rel, done, batch, calls, stats)
        if len(rel) >= _GROUP_PASS_MIN:
            occurrences = _id_occurrences(data, stop, rel)
    # A long, rare needle is found faster than any pattern: a search per id while there are
    # few; many ids sharing a prefix were found together above, taken line by line here.
    for call_id, at in rel.items():
        spans = (
            lines_containing(data, written_id(call_id).encode(), stop, at)
            if occurrences is None
            else _lines_at(data, occurrences[call_id], stop)
        )
        for begin, line_end in spans:
            if calls.is_answered(call_id):
                break
            if begin not in done:
                done.add(begin)
                applier.parsed(parse(data[begin:line_end]), batch, calls, stats)


def _answered_near(
    applier: Applier, data: bytes, stop: int, rel: dict[str, int], done: set[int],
    batch: Batch, calls: Calls, stats: ScanStats,
) -> dict[str, int]:  # fmt: skip
    """Look for each id of ``rel`` within ``_NEAR_BYTES`` of where it is looked for; returns
    the ids still waiting, to be searched in the rest of the region.

    Each id's lines are applied in file order until it is answered, as by the search that
    follows (the lines applied are in ``done``); a line holding several ids is applied once,
    by whichever id finds it first.
    """
    rest = dict(rel)
    for call_id, at in rel.items():
        if calls.is_answered(call_id):  # by a line found for an id before it
            del rest[call_id]
            continue
        window = min(at + _NEAR_BYTES, stop)
        needle = written_id(call_id).encode()
        for begin, line_end in lines_containing(data, needle, stop, at, window):
            if begin not in done:
                done.add(begin)
                applier.parsed(parse(data[begin:line_end]), batch, calls, stats)
            if calls.is_answered(call_id):
                del rest[call_id]
                break
    return rest


def _id_occurrences(data: bytes, stop: int, look: dict[str, int]) -> dict[str, list[int]] | None:
    """Where each id of ``look`` starts in ``data[:stop]``, from its offset in ``look`` on.

    Call ids of one provider share their first bytes (``toolu_01``): one byte search for what
    a group shares finds every id of the group. None when the ids fall into too many groups
    or share too little.
    """
    groups = _id_groups(look)
    if groups is None:
        return None
    found: dict[str, list[int]] = {call_id: [] for call_id in look}
    find = data.find
    for ids in groups.values():
        prefix = _shared_prefix(list(ids))
        by_length: dict[int, dict[bytes, list[str]]] = {}
        for raw, call_ids in ids.items():
            by_length.setdefault(len(raw), {})[raw] = call_ids
        sizes = list(by_length.items())
        i = find(prefix, min(look[cid] for call_ids in ids.values() for cid in call_ids), stop)
        while i >= 0:
            for n, wanted in sizes:
                named = wanted.get(data[i : i + n])
                if named is not None and i + n <= stop:
                    for call_id in named:
                        if i >= look[call_id]:
                            found[call_id].append(i)
            i = find(prefix, i + 1, stop)
    return found


def _id_groups(look: dict[str, int]) -> dict[bytes, dict[bytes, list[str]]] | None:
    """The ids of ``look`` by their first bytes (each id as the file writes it, with the calls
    waiting under it: several occurrences of a reused id); None when they fall into too many
    groups or share too little for one search a group (see :func:`_id_occurrences`)."""
    groups: dict[bytes, dict[bytes, list[str]]] = {}
    for call_id in look:
        raw = written_id(call_id).encode()
        groups.setdefault(raw[:_SHARED_PREFIX_MIN], {}).setdefault(raw, []).append(call_id)
    if len(groups) > _DIRECT_ID_SEARCH_MAX or min(map(len, groups)) < _SHARED_PREFIX_MIN:
        return None
    return groups


def _shared_prefix(ids: list[bytes]) -> bytes:
    """The first bytes all of ``ids`` share (those of the least and the greatest)."""
    first, last = min(ids), max(ids)
    n = 0
    while n < len(first) and first[n] == last[n]:
        n += 1
    return first[:n]


def _lines_at(data: bytes, starts: list[int], stop: int) -> Iterator[tuple[int, int]]:
    """``(begin, end)`` of the lines holding the given offsets, in order, each line once
    (what :func:`.tailer.lines_containing` yields for the needle found at ``starts``)."""
    end = -1
    for i in starts:
        if i < end:
            continue  # another occurrence in the line just given
        begin = data.rfind(b"\n", 0, i) + 1
        end = data.find(b"\n", i, stop)
        if end < 0:
            end = stop
        yield begin, end


def _lines_with_ids(data: bytes, stop: int, look: dict[str, int]) -> set[tuple[int, int, str]]:
    """``(begin, end, call id)`` of the lines of ``data[:stop]`` whose id field names a call of
    ``look`` (call id → where to look from): one pass, whatever the number of ids."""
    wanted: dict[bytes, list[tuple[int, str]]] = {}
    for cid, at in look.items():  # (several occurrences of a reused id: one written id)
        wanted.setdefault(written_id(cid).encode(), []).append((at, cid))
    found: set[tuple[int, int, str]] = set()
    for m in _ID_FIELD.finditer(data, min(look.values()), stop):
        for at, cid in wanted.get(m.group(1) or m.group(2), ()):
            if m.start() >= at:
                begin = data.rfind(b"\n", 0, m.start()) + 1
                end = data.find(b"\n", m.end(), stop)
                found.add((begin, stop if end < 0 else end, cid))
    return found
