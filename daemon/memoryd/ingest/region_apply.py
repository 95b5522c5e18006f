"""A prescanned region applied: its needle lines, then the answers that do not name their tool.

The scanner (:mod:`.scan`) hands each region of a transcript file here, in file order, with
what :mod:`.prescan` found in it (here or in the helper). The needle lines go to the applier
as they are; an answer that names no tool (Claude Code's ``tool_result``) holds no needle
and is found by the id of a call still waiting, with byte searches over the region chosen by
how many ids wait and how alike they are (one search per id, one per shared prefix, or one
pattern pass over the id fields). Whichever search finds a line, it is applied once, and
the rows written are the same.
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
# More waiting calls than this: one regex pass over the id fields instead of a search per id.
# A byte search for one id runs at about 6 GB/s here, the regex at about 0.5 GB/s (it stops
# at every quote), so one pass pays only beyond a dozen ids.
_DIRECT_ID_SEARCH_MAX = 12
# Ids sharing at least this many first bytes are looked for together, by one byte search.
_SHARED_PREFIX_MIN = 5
# Before one pass over a region for many waiting ids, each is looked for this far from where
# its search starts (its call's line, or the region's start): an answer that does not name its
# tool (Claude Code) follows its call within a few lines, and the pass is then not needed.
_NEAR_BYTES = 64 << 10
# At least this many ids still waiting after that (mostly calls never answered, each of which
# a search of its own follows to the region's end): one search per shared prefix finds them
# all. It stops at every id of the kind, and costs about what four searches for one id do
# (docs/benchmarks.md, "The scanner's constants").
_GROUP_PASS_MIN = 5


def apply_region(
    applier: Applier,
    fd: int,
    pre: Prescanned,
    data: bytes | None,
    batch: Batch,
    calls: Calls,
    stats: ScanStats,
) -> None:
    """Apply a region's needle lines in file order, then answers that do not name their tool.

    An answer that does not name its tool (Claude Code ``tool_result``) holds no
    needle: it is found by the id of a call still waiting — from the region's start
    for calls waiting since before it, after the call's own line for calls made in
    it. The first line that answers a call ends the search for it. What the helper
    already searched (calls made earlier in the same file) is taken from its answer;
    anything else is searched here, in the region's bytes (read again if the helper
    prescanned them).
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
        # Most answers follow their call closely: the ids answered near where they are
        # looked for need no pass over the rest of the region (see _answered_near); the
        # rest, mostly calls never answered, are found together by one search a group.
        rel = _answered_near(applier, data, stop, rel, done, batch, calls, stats)
        if len(rel) >= _GROUP_PASS_MIN:
            occurrences = _id_occurrences(data, stop, rel)
    # A long, rare needle is found faster than any pattern: a search per id wins while
    # there are few of them (the usual case: one call in flight); many ids sharing a
    # prefix were found together above, and are taken line by line in the same order.
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
    applier: Applier,
    data: bytes,
    stop: int,
    rel: dict[str, int],
    done: set[int],
    batch: Batch,
    calls: Calls,
    stats: ScanStats,
) -> dict[str, int]:
    """Look for each id of ``rel`` within ``_NEAR_BYTES`` of where it is looked for (a
    search each, over those bytes only); returns the ids still waiting after it, to be
    searched in the rest of the region as before.

    Each id's lines are applied in file order until it is answered, as by the search
    that follows: the lines of its window are the first of them, and an id still
    waiting is searched again from where it was looked for (the lines applied are in
    ``done``). Only the order among different ids' lines changes, as the order of the
    waiting set always did: a line holding several ids is applied once, by whichever
    id finds it first. A call never answered costs a window, then the one pass it
    cost before.
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

    Call ids of one provider share their first bytes (``toolu_01``, ``call_``): one
    byte search for what a group shares finds every id of the group, at the speed of
    a search for one id. None when the ids fall into too many groups or share too
    little (the caller then reads the id fields with one pattern pass).
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
    """``(begin, end, call id)`` of the lines of ``data[:stop]`` whose id field names a call.

    ``look`` maps each call id to the offset from which to look for it. One
    regular-expression pass reads every id field, so the cost follows the size of
    the region rather than (waiting calls × bytes).
    """
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
