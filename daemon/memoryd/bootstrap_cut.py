"""Where OpenClaw 2026.9.6 cuts each bootstrap file it injects into a new session (pure).

Read off the installed package (``dist/bootstrap-*.mjs``: ``trimBootstrapContent``,
``buildBootstrapContextFiles``; ``dist/workspace-*.mjs``: ``loadWorkspaceBootstrapFiles``),
not guessed: a file longer than its budget keeps its first 75 % and its last 25 % of what the
budget leaves after a marker line, and loses the middle; the files share a total budget in a
fixed order, and a file met when less than 64 characters of it are left is not loaded at all.
Lengths are JavaScript's (UTF-16 code units), of the text with its trailing blanks removed.
``AGENTS.md`` is cut another way (head, a digest of its policy lines, tail): only how much of
the total budget it takes matters here, and that is computed as OpenClaw computes it.

What this says holds for a main (direct) session: OpenClaw leaves ``MEMORY.md`` out of
sub-agent, cron and group sessions altogether.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from .section_map import utf16_len

OPENCLAW_VERSION = "2026.9.6"
# WORKSPACE_BOOTSTRAP_FILENAMES, in prompt order (TOOLS.md and HEARTBEAT.md are not injected).
FILE_ORDER = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "BOOTSTRAP.md", "MEMORY.md")
# Missing, these are skipped; any other missing file takes "[MISSING] Expected at: PATH".
# (MEMORY.md and USER.md: loadWorkspaceBootstrapFiles leaves them out. BOOTSTRAP.md: once
# the workspace's setup is completed, filterCompletedWorkspaceBootstrapFile drops it, and
# OpenClaw's workspace setup marks it completed as soon as BOOTSTRAP.md is gone; the live
# recording's requests, BOOTSTRAP.md absent, hold no line for it.)
SKIPPED_WHEN_MISSING = frozenset({"MEMORY.md", "USER.md", "BOOTSTRAP.md"})
DEFAULT_FILE_MAX = 20_000
DEFAULT_TOTAL_MAX = 60_000
USER_MAX = 4_000
MIN_FILE_BUDGET = 64
HEAD_RATIO = 0.75
TAIL_RATIO = 0.25
MIN_TRIMMED_CONTENT = 16
_AGENTS_DIGEST_RATIO = 0.35
_AGENTS_HEAD_RATIO = 0.45
_AGENTS_TAIL_RATIO = 0.15
_AGENTS_LINE_MAX = 240


class FileCut(NamedTuple):
    """What of one bootstrap file a new session gets."""

    name: str
    length: int  # the file's text without trailing blanks, UTF-16 code units
    head: int  # units kept from its start
    tail: int  # units kept from its end (head == length, tail == 0: all of it)
    injected: int  # units it takes of the total budget (marker lines included)
    loaded: bool  # False: skipped (the total budget was spent before it, or unreadable)
    unreadable: bool = False  # over OpenClaw's read bound: a session gets one line instead
    never: bool = False  # contextInjection "never": no session gets any bootstrap file

    @property
    def truncated(self) -> bool:
        return self.head + self.tail < self.length

    @property
    def dropped(self) -> int:
        return self.length - self.head - self.tail


# JavaScript's trimEnd strips its WhiteSpace and LineTerminator characters (str.rstrip's set
# differs: it strips U+001C..U+001F and U+0085, and keeps U+FEFF).
_JS_BLANKS = frozenset(
    "\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
)


def js_trim_end(text: str) -> str:
    """``text.trimEnd()`` as JavaScript does it (OpenClaw trims a bootstrap file so).

    (Walked back from the end: a regex anchored at the end tries every run of blanks of a
    1 MB file, 16 ms.)"""
    end = len(text)
    while end and text[end - 1] in _JS_BLANKS:
        end -= 1
    return text if end == len(text) else text[:end]


def kept_ranges(trimmed: str, cut: FileCut) -> tuple[tuple[int, int], ...]:
    """The parts of ``trimmed`` (a file's text, :func:`js_trim_end`'d) a session gets, as
    (start, end) in UTF-16 units; OpenClaw's slices never split a surrogate pair (the head
    then ends one unit sooner, the tail starts one later)."""
    if not cut.loaded:
        return ()
    if not cut.truncated:
        return ((0, cut.length),)
    end, start = _safe_ends(trimmed.encode("utf-16-le"), cut.length, cut.head, cut.tail)
    out = [(0, end)] if end > 0 else []
    if start < cut.length:
        out.append((start, cut.length))
    return tuple(out)


def _marker(name: str, head: int, tail: int, length: int) -> str:
    return (
        f"\n[...truncated, read {name} for full content...]\n"
        f"…(truncated {name}: kept {head}+{tail} chars of {length})…\n"
    )


def _compact_marker(head: int, tail: int, length: int) -> str:
    return f"[…truncated {head}+{tail}/{length}]"


def trim_cut(name: str, length: int, max_chars: int) -> tuple[int, int, str]:
    """(head, tail, marker) of a file of ``length`` units cut at ``max_chars``, as 2026.9.6's
    ``trimBootstrapContent`` does it (any file but ``AGENTS.md``); the marker is "" when the
    file fits."""
    if length <= max_chars:
        return length, 0, ""
    full = "\n" in _marker(name, 0, 0, length)

    def sep(h: int, t: int, marker_nl: bool) -> int:
        return (int(h > 0) + int(t > 0)) if marker_nl else 0

    fm = _marker(name, 0, 0, length)
    use_full = full and max_chars - len(fm) - sep(1, 1, True) >= MIN_TRIMMED_CONTENT

    def marker(h: int, t: int) -> str:
        return _marker(name, h, t, length) if use_full else _compact_marker(h, t, length)

    head = tail = 0
    m = marker(0, 0)
    for _ in range(3):
        budget = max(0, max_chars - len(m) - sep(head, tail, "\n" in m))
        nh, nt = int(budget * HEAD_RATIO), int(budget * TAIL_RATIO)
        nm = marker(nh, nt)
        if nh == head and nt == tail and len(nm) == len(m):
            break
        head, tail, m = nh, nt, nm
    rendered = head + tail + len(m) + sep(head, tail, "\n" in m)
    while rendered > max_chars and (tail > 0 or head > 0):
        over = rendered - max_chars
        if tail > 0:
            tail = max(0, tail - over)
        else:
            head = max(0, head - over)
        m = marker(head, tail)
        rendered = head + tail + len(m) + sep(head, tail, "\n" in m)
    if head == 0 and tail == 0 and length > 0:
        single = marker(1, 0)
        if 1 + len(single) + sep(1, 0, "\n" in single) <= max_chars:
            head, m = 1, single
    return head, tail, m


def _safe_ends(units: bytes, length: int, head: int, tail: int) -> tuple[int, int]:
    """Where the head slice ends and the tail slice starts once OpenClaw's ``sliceUtf16Safe``
    moved them off the middle of a surrogate pair (``units``: the text as UTF-16-LE)."""

    def unit(i: int) -> int:
        return int.from_bytes(units[2 * i : 2 * i + 2], "little")

    def pair_at(i: int) -> bool:  # a high surrogate at i - 1, its low one at i
        return 0 < i < length and 0xD800 <= unit(i - 1) <= 0xDBFF and 0xDC00 <= unit(i) <= 0xDFFF

    end = min(head, length)
    if pair_at(end):
        end -= 1
    start = max(0, length - tail) if tail > 0 else length
    if tail > 0 and pair_at(start):
        start += 1
    return end, start


# --- AGENTS.md: head, a digest of its policy lines, tail (trimAgentsBootstrapContent)

_DIGEST_CANDIDATE = re.compile(
    r"\b(?:AGENTS\.md|scoped|required|must|never|do not|before subtree|read scoped|owner|"
    r"security|secret|credential|test|validation|command|commit|push|github|pr)\b"
    r"|(?:🔴|禁止|嚴禁|不得|絕不|絕對不|切勿|必須|務必|一律|紅線)",
    re.IGNORECASE | re.ASCII,  # (JavaScript's \b, even under /u, knows ASCII words only)
)
_DIGEST_HIGH = re.compile(
    r"\b(?:AGENTS\.md|scoped|required|must|never|do not|before subtree|read scoped|security|"
    r"secret|credential)\b|(?:🔴|禁止|嚴禁|不得|絕不|絕對不|切勿)",
    re.IGNORECASE | re.ASCII,
)
_LIST_OR_HEADING = re.compile(r"^(?:#{1,6}|\s*[-*+]|\s*\d+[.)])\s+\S")
_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})")


def _utf16_prefix(text: str, n: int) -> str:
    """``truncateUtf16Safe(text, n)``: at most ``n`` UTF-16 units, no half surrogate pair."""
    units = text.encode("utf-16-le")
    if len(units) <= 2 * n:
        return text
    end, _ = _safe_ends(units, len(units) // 2, n, 0)
    return units[: 2 * end].decode("utf-16-le")


def _digest_candidates(text: str) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    last: str | None = None
    for raw in re.split(r"\r?\n", text):
        line = " ".join(raw.split())
        if utf16_len(line) > _AGENTS_LINE_MAX:
            line = _utf16_prefix(line, _AGENTS_LINE_MAX - 1) + "…"
        if not line:
            last = None
            continue
        if _FENCE.match(line):
            last = None
        elif _LIST_OR_HEADING.match(line) or _DIGEST_CANDIDATE.search(line):
            text = line if last is None else f"{last}\n{line}"
            out.append((text, bool(_DIGEST_HIGH.search(line))))
            last = None
        else:
            last = line
    return out


def _digest(candidates: list[tuple[str, bool]], budget: int) -> tuple[str, int]:
    if budget <= 0:
        return "", 0
    chosen: set[int] = set()
    used = 0
    for high_first in (True, False):
        for i, (text, high) in enumerate(candidates):
            if i in chosen or (high_first and not high):
                continue
            extra = (1 if chosen else 0) + utf16_len(text)
            if used + extra <= budget:
                chosen.add(i)
                used += extra
    body = "\n".join(text for i, (text, _) in enumerate(candidates) if i in chosen)
    return body, max(0, len(candidates) - len(chosen))


def agents_injected(text: str, max_chars: int) -> int:
    """How many units a truncated ``AGENTS.md`` takes (its rendered length)."""
    length = utf16_len(text)
    head = int(max_chars * _AGENTS_HEAD_RATIO)
    tail = int(max_chars * _AGENTS_TAIL_RATIO)
    budget = int(max_chars * _AGENTS_DIGEST_RATIO)
    candidates = _digest_candidates(text) if budget > 0 else []
    digest, omitted = _digest(candidates, budget)
    units = text.encode("utf-16-le")

    def rendered() -> int:
        end, start = _safe_ends(units, length, head, tail)
        parts = [
            end,
            utf16_len("[...truncated, read AGENTS.md for full content...]"),
            utf16_len("[Policy digest from AGENTS.md]") if digest else 0,
            utf16_len(digest),
            utf16_len(f"[...{omitted} more policy lines omitted...]") if omitted else 0,
            utf16_len(
                f"…(truncated AGENTS.md: kept {head}+policy {utf16_len(digest)}+{tail} chars "
                f"of {length})…"
            ),
            length - start if tail > 0 else 0,
        ]
        present = [p for p in parts if p > 0]
        return sum(present) + len(present) - 1

    n = rendered()
    while n > max_chars and (tail > 0 or head > 1 or budget > 0):
        over = n - max_chars
        if tail > 0:
            tail = max(0, tail - over)
        elif head > 1:
            head = max(1, head - over)
        else:
            budget = max(0, budget - over)
            digest, omitted = _digest(candidates, budget)
        n = rendered()
    return min(n, max_chars)


def bootstrap_cuts(
    files: Mapping[str, str | None],
    file_max: int = DEFAULT_FILE_MAX,
    total_max: int = DEFAULT_TOTAL_MAX,
    paths: Mapping[str, str] | None = None,
    rooms: dict[str, int] | None = None,
) -> dict[str, FileCut]:
    """Each bootstrap file's cut in a new main session: ``files`` maps a name of
    :data:`FILE_ORDER` to its text, or None when it is missing (``paths``: the absolute
    path OpenClaw would name in its ``[MISSING]`` line, for the budget it takes). ``rooms``
    gets what the total budget has left when each file of ``files`` is met."""
    remaining = max(1, int(total_max))
    out: dict[str, FileCut] = {}
    for name in FILE_ORDER:
        if name not in files:
            continue
        if rooms is not None:
            rooms[name] = remaining
        text = files[name]
        if remaining <= 0:
            if text is not None:
                out[name] = FileCut(name, utf16_len(js_trim_end(text)), 0, 0, 0, False)
            continue
        if text is None:
            if name in SKIPPED_WHEN_MISSING:
                continue
            missing = utf16_len(f"[MISSING] Expected at: {(paths or {}).get(name, name)}")
            remaining = max(0, remaining - min(missing, remaining))
            continue
        trimmed = js_trim_end(text)
        length = utf16_len(trimmed)
        if remaining < MIN_FILE_BUDGET:
            out[name] = FileCut(name, length, 0, 0, 0, False)
            remaining = 0  # (OpenClaw stops at the first such file)
            continue
        budget = min(file_max, USER_MAX) if name == "USER.md" else file_max
        cap = max(1, min(budget, remaining))
        if name == "AGENTS.md" and length > cap:
            used = agents_injected(trimmed, cap)
            head = int(cap * _AGENTS_HEAD_RATIO)
            cut = FileCut(name, length, min(head, length), 0, used, True)
        else:
            head, tail, marker = trim_cut(name, length, cap)
            if marker:
                end, start = _safe_ends(trimmed.encode("utf-16-le"), length, head, tail)
                parts = [p for p in (end, utf16_len(marker), length - start) if p > 0]
                used = min(cap, sum(parts) + (len(parts) - 1 if "\n" in marker else 0))
            else:
                used = length
            cut = FileCut(name, length, head, tail, used, True)
        if used == 0 and length == 0:
            continue
        out[name] = cut
        remaining = max(0, remaining - used)
    return out
