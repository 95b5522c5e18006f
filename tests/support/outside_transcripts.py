"""An OpenClaw state folder written from OpenClaw's own source, with its own count of true hits.

This synthesizer is deliberately independent of memoryd's test generator
(``tests/support/``) and of its parser: it was written from OpenClaw's code alone
(see docs/notes/outside.md for the files read), so a misreading shared by memoryd's parser
and memoryd's generator shows up here as a disagreement.

What OpenClaw writes, as this module reproduces it:

* ``agents/<id>/sessions/<uuid>.jsonl``: one compact ``JSON.stringify`` line per entry. The
  first line is the header ``{"type":"session","version":3,"id","timestamp","cwd"}``; every
  other entry has an 8-hex ``id``, a ``parentId`` (``null`` first) and an ISO ``timestamp``
  with milliseconds. Entries form a tree: a re-asked question hangs a second child on the same
  parent (a branch), and every child stays in the file.
* ``message`` entries carry pi-ai messages: ``user`` (string or text/image blocks),
  ``assistant`` (``text`` / ``thinking`` / ``toolCall{id,name,arguments}`` blocks, ``stopReason``
  ``toolUse`` / ``stop`` / ``aborted``), ``toolResult`` (``toolCallId``, ``toolName``,
  ``content`` blocks, ``details``, ``isError``), each with a Unix-ms ``timestamp``.
* a memory tool returns ``jsonResult(payload)``: ``content=[{type:text, text:
  JSON.stringify(payload, null, 2)}]`` and ``details=payload``. ``memory_search``'s payload is
  ``{results:[{path,startLine,endLine,score,snippet,source,citation?,corpus}], provider, model,
  fallback, citations, mode, debug}``; a corpus supplement (wiki) result is ``{corpus, path,
  title, kind, score, snippet, ...}``; an unavailable search is ``{results:[], disabled:true,
  unavailable:true, error, warning, action}``. ``memory_get`` returns ``{text, path, from?,
  lines?, truncated?, nextFrom?}``, ``text:""`` for a missing file, ``{path, text:"",
  disabled:true, error}`` when it failed.
* persistence caps (``session-tool-result-guard.payload.ts``): ``details`` over 8,192 UTF-8
  bytes is replaced by ``{persistedDetailsTruncated:true, originalDetailsBytes,
  originalDetailKeys, ...}``; ``content`` text over 16,000 chars is cut to head + a middle
  omission marker + tail (JSON ends in ``}``, an "important tail") + a suffix
  (``tool-result-truncation.ts``). Builds before the caps wrote results whole.
* other entry types in the same file: ``compaction``, ``branch_summary``, ``custom``,
  ``custom_message``, ``model_change``, ``thinking_level_change``, ``label``, ``session_info``.

The truth: one hit per (tool call, memory file) -- a ``memory_search`` result listing the file
with ``source``/``corpus`` ``memory`` (several chunks of one file in one result are one hit),
or a ``memory_get`` that returned non-empty text -- counted from what the transcript still
shows (a path cut out of a truncated result is gone). Not hits: aborted calls with no result,
error results, unavailable searches, session-transcript results, wiki results, paths outside
``MEMORY.md`` / ``memory.md`` / ``memory/**/*.md``, other tools mentioning memory paths, and
cron sessions (synthetic traffic, per docs/ingest.md).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# OpenClaw's persistence limits (session-tool-result-guard.payload.ts, tool-result-truncation.ts).
DETAILS_CAP_BYTES = 8_192
CONTENT_CAP_CHARS = 16_000
MIN_KEEP_CHARS = 2_000
MIDDLE_MARKER = "\n\n⚠️ [... middle content omitted — showing head and tail ...]\n\n"
CUT_SUFFIX = (
    "\n\n⚠️ [Content truncated — original was too large for the model's context window. "
    "The content above is a partial view. If you need more, request specific sections or use "
    "offset/limit parameters to read smaller chunks.]"
)

MEMORY_FILES = [
    "MEMORY.md",
    "USER.md",  # searched as memory by 2026.9 (issue 29)
    "memory/2026-10-01.md",
    "memory/2026-10-02.md",
    "memory/2026-10-15.md",
    "memory/people/ana.md",
    "memory/projets/café-été.md",
    "memory/日本語メモ.md",
    "memory/deep/a/b/c.md",
]
# Present in the workspace, never hit by anything in the transcripts.
UNUSED_FILES = ["memory/2026-09-01.md", "memory/attic/old plan.md"]
# Inside the workspace but not memory files (memorySearch.extraPaths, notes).
NON_MEMORY_PATHS = [
    "notes/ideas.md",
    "memory-archive/2026-08/memory/x.md",
    "memory/readme.txt",
]
# Paths that leave the workspace.
ESCAPING_PATHS = ["../shared/team.md", "/etc/passwd", "memory/../../outside.md"]


WORDS = ["kafka", "retry", "budget", "ana", "birthday", "deploy", "freeze", "café", "été"]
WORDS += ["東京", "postgres", "vacuum", "notes", "decided"]


def js_line(entry: dict[str, Any]) -> str:
    """``JSON.stringify(entry)``: compact, non-ASCII written raw (U+2028 included)."""
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


def js_pretty(payload: Any) -> str:
    """``JSON.stringify(payload, null, 2)``, the text of a ``jsonResult`` content block."""
    return json.dumps(payload, ensure_ascii=False, indent=2)


def iso(t: datetime) -> str:
    """``Date.toISOString()``: milliseconds and ``Z``."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def cut_content_text(text: str, max_chars: int = CONTENT_CAP_CHARS) -> str:
    """OpenClaw's head+tail cut of an oversized tool result text (JSON has an important tail)."""
    if len(text) <= max_chars:
        return text
    budget = max(MIN_KEEP_CHARS, max_chars - len(CUT_SUFFIX))
    tail_budget = min(budget * 3 // 10, 4_000)
    head_budget = budget - tail_budget - len(MIDDLE_MARKER)
    head_cut = head_budget
    nl = text.rfind("\n", 0, head_budget + 1)
    if nl > head_budget * 0.8:
        head_cut = nl
    tail_start = len(text) - tail_budget
    nl = text.find("\n", tail_start)
    if nl != -1 and nl < tail_start + tail_budget * 0.2:
        tail_start = nl + 1
    return text[:head_cut] + MIDDLE_MARKER + text[tail_start:] + CUT_SUFFIX


def cap_details(details: Any) -> Any:
    """Replace ``details`` over 8 KiB with OpenClaw's persisted-truncation summary."""
    size = len(json.dumps(details, ensure_ascii=False, separators=(",", ":")).encode())
    if size <= DETAILS_CAP_BYTES:
        return details
    out: dict[str, Any] = {
        "persistedDetailsTruncated": True,
        "originalDetailsBytes": size,
        "originalDetailKeys": list(details)[:40],
    }
    for key in ("disabled", "unavailable"):
        if isinstance(details.get(key), bool):
            out[key] = details[key]
    return out


def visible_result_paths(text: str) -> list[tuple[str, str | None]]:
    """(path, corpus-if-seen-before-it) of every result object still whole enough to show a path.

    Written against the pretty JSON layout only (results are objects at indent 4 whose keys sit
    at indent 6), to decide what a truncated transcript still shows.
    """
    found: list[tuple[str, str | None]] = []
    corpus: str | None = None
    for line in text.split("\n"):
        if line.startswith("    {"):
            corpus = None
        elif line.startswith('      "corpus": '):
            corpus = json.loads(line.split(": ", 1)[1].rstrip(","))
        elif line.startswith('      "path": '):
            with contextlib.suppress(json.JSONDecodeError):
                found.append((json.loads(line.split(": ", 1)[1].rstrip(",")), corpus))
    return found


@dataclass
class Truth:
    """Hits per memory file, and the latest hit time per file (ISO seconds, UTC)."""

    hits: Counter = field(default_factory=Counter)
    last: dict[str, str] = field(default_factory=dict)
    calls: int = 0

    def add(self, files: set[str], when: datetime) -> None:
        stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        for f in files:
            self.hits[f] += 1
            if stamp > self.last.get(f, ""):
                self.last[f] = stamp
        if files:
            self.calls += 1


class Session:
    """One transcript being written: entry ids, the leaf, the clock."""

    def __init__(self, rng: random.Random, sid: str, start: datetime, cwd: str) -> None:
        self.rng = rng
        self.sid = sid
        self.t = start
        self.lines: list[str] = [
            js_line(
                {"type": "session", "version": 3, "id": sid, "timestamp": iso(start), "cwd": cwd}
            )
        ]
        self.leaf: str | None = None
        self.used: set[str] = set()

    def _id(self) -> str:
        while True:
            eid = f"{self.rng.getrandbits(32):08x}"
            if eid not in self.used:
                self.used.add(eid)
                return eid

    def tick(self, lo: float = 0.3, hi: float = 20.0) -> datetime:
        self.t += timedelta(seconds=self.rng.uniform(lo, hi))
        return self.t

    def entry(self, kind: str, parent: str | None = ..., **fields: Any) -> str:  # type: ignore[assignment]
        eid = self._id()
        when = self.tick()
        pid = self.leaf if parent is ... else parent
        self.lines.append(
            js_line({"type": kind, "id": eid, "parentId": pid, "timestamp": iso(when), **fields})
        )
        self.leaf = eid
        return eid

    def message(self, msg: dict[str, Any], parent: str | None = ...) -> str:  # type: ignore[assignment]
        eid = self._id()
        when = self.tick()
        # message.timestamp is taken when the message is made, the entry's a few ms later
        made = when.replace(microsecond=min(when.microsecond, 900_000) // 1000 * 1000)
        pid = self.leaf if parent is ... else parent
        self.lines.append(
            js_line(
                {
                    "type": "message",
                    "id": eid,
                    "parentId": pid,
                    "timestamp": iso(made + timedelta(milliseconds=37)),
                    "message": {**msg, "timestamp": ms(made)},
                }
            )
        )
        self.leaf = eid
        self.last_time = made
        return eid


USAGE = {
    "input": 1834,
    "output": 212,
    "cacheRead": 10240,
    "cacheWrite": 0,
    "totalTokens": 12286,
    "cost": {
        "input": 0.0055,
        "output": 0.0032,
        "cacheRead": 0.0031,
        "cacheWrite": 0,
        "total": 0.0118,
    },
}


def assistant(blocks: list[dict[str, Any]], stop: str = "toolUse", **extra: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": blocks,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": USAGE,
        "stopReason": stop,
        **extra,
    }


def tool_result(
    call_id: str,
    name: str,
    payload: Any,
    *,
    is_error: bool = False,
    raw_text: str | None = None,
    capped: bool = True,
) -> dict[str, Any]:
    """A toolResult message as OpenClaw persists it (caps applied unless ``capped`` is False)."""
    text = raw_text if raw_text is not None else js_pretty(payload)
    details = payload
    if capped:
        text = cut_content_text(text)
        details = cap_details(payload) if isinstance(payload, dict) else payload
    msg: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
    }
    if details is not None:
        msg["details"] = details
    msg["isError"] = is_error
    return msg


class Synth:
    """Writes the state folder and keeps the truth."""

    def __init__(self, root: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        self.root = root
        self.state = root / ".openclaw"
        self.workspace = root / "ws main"  # a space, as real home folders have
        self.truth = Truth()
        self.sessions: dict[str, dict[str, Any]] = {}
        self.n_call = 0
        self.clock = datetime(2026, 11, 2, 8, 0, 0, tzinfo=UTC)

    # ---- ids in the shapes providers give them ----
    def call_id(self) -> str:
        self.n_call += 1
        r = self.rng
        style = r.randrange(3)
        if style == 0:
            return "toolu_01" + "".join(
                r.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz123456789")
                for _ in range(22)
            )
        if style == 1:
            return "call_" + "".join(
                r.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(24)
            )
        return (
            f"memory_search{self.n_call}" if r.random() < 0.5 else f"functions_exec_{self.n_call}"
        )

    def snippet(self, n: int) -> str:
        words = WORDS
        return " ".join(self.rng.choice(words) for _ in range(n))

    # ---- result payloads ----
    def search_payload(
        self, chunks: list[tuple[str, str]], *, citations: bool, snippet_words: int
    ) -> dict[str, Any]:
        """``memory_search`` payload; chunks are (path, corpus) with corpus memory/sessions/wiki."""
        results = []
        for path, corpus in chunks:
            score = round(self.rng.uniform(0.35, 0.92), 6)
            if corpus == "wiki":
                results.append(
                    {
                        "corpus": "wiki",
                        "path": path,
                        "title": path.rsplit("/", 1)[-1][:-3],
                        "kind": "entity",
                        "score": score,
                        "snippet": self.snippet(snippet_words),
                        "id": f"wiki:{path}",
                        "updatedAt": "2026-10-30T09:00:00.000Z",
                    }
                )
                continue
            start = self.rng.randint(1, 80)
            end = start + self.rng.randint(0, 12)
            snip = self.snippet(snippet_words)
            r: dict[str, Any] = {
                "path": path,
                "startLine": start,
                "endLine": end,
                "score": score,
                "snippet": snip,
                "source": corpus,
            }
            if citations:
                cite = f"{path}#L{start}" if start == end else f"{path}#L{start}-L{end}"
                r["snippet"] = f"{snip}\n\nSource: {cite}"
                r["citation"] = cite
            r["corpus"] = corpus
            results.append(r)
        return {
            "results": results,
            "provider": "openai",
            "model": "text-embedding-3-small",
            "citations": "auto",
            "debug": {
                "backend": "builtin",
                "effectiveMode": "n/a",
                "searchMs": self.rng.randint(8, 400),
                "hits": len(results),
                "toolMs": 420,
                "outsideSearchMs": 12,
            },
        }

    # ---- building blocks of a conversation ----
    def user(self, s: Session, text: str, image: bool = False) -> str:
        if image:
            data = base64.b64encode(self.rng.randbytes(3000)).decode()
            return s.message(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": text},
                        {"type": "image", "data": data, "mimeType": "image/png"},
                    ],
                }
            )
        return s.message({"role": "user", "content": text})

    def thinking(self) -> dict[str, Any]:
        return {
            "type": "thinking",
            "thinking": "The user asks about memory/2026-10-01.md; I should call memory_search.",
            "thinkingSignature": base64.b64encode(self.rng.randbytes(48)).decode(),
        }

    def search(
        self,
        s: Session,
        chunks: list[tuple[str, str]],
        *,
        counted: bool,
        parent: str | None = ...,  # type: ignore[assignment]
        citations: bool = True,
        snippet_words: int = 12,
        capped: bool = True,
        query: str = "kafka retry",
        extra_args: dict[str, Any] | None = None,
    ) -> str:
        """An assistant turn calling memory_search and its result; records the truth."""
        cid = self.call_id()
        s.message(
            assistant(
                [
                    self.thinking(),
                    {
                        "type": "toolCall",
                        "id": cid,
                        "name": "memory_search",
                        "arguments": {"query": query, "maxResults": 8, **(extra_args or {})},
                    },
                ]
            ),
            parent=parent,
        )
        payload = self.search_payload(chunks, citations=citations, snippet_words=snippet_words)
        msg = tool_result(cid, "memory_search", payload, capped=capped)
        rid = s.message(msg)
        if counted:
            self.truth.add(self.files_shown(msg), s.last_time)
        return rid

    def files_shown(self, msg: dict[str, Any]) -> set[str]:
        """Memory files a persisted memory_search result still lists."""
        details = msg.get("details") or {}
        if isinstance(details.get("results"), list):
            shown = [
                (r.get("path"), r.get("corpus") or r.get("source")) for r in details["results"]
            ]
        else:
            shown = visible_result_paths(msg["content"][0]["text"])
        return {p for p, c in shown if c in (None, "memory") and p in MEMORY_FILES}

    def get(
        self,
        s: Session,
        path: str,
        text: str,
        *,
        counted: bool,
        payload: dict[str, Any] | None = None,
    ) -> None:
        cid = self.call_id()
        s.message(
            assistant(
                [
                    {
                        "type": "toolCall",
                        "id": cid,
                        "name": "memory_get",
                        "arguments": {"path": path, "from": 1, "lines": 40},
                    }
                ]
            )
        )
        body = (
            payload if payload is not None else {"text": text, "path": path, "from": 1, "lines": 40}
        )
        s.message(tool_result(cid, "memory_get", body))
        if counted and text and path in MEMORY_FILES:
            self.truth.add({path}, s.last_time)

    def other_tool(
        self,
        s: Session,
        name: str,
        args: dict[str, Any],
        out: str,
        *,
        is_error: bool = False,
        details: Any = None,
    ) -> None:
        cid = self.call_id()
        s.message(assistant([{"type": "toolCall", "id": cid, "name": name, "arguments": args}]))
        s.message(tool_result(cid, name, details, is_error=is_error, raw_text=out))

    def answer(self, s: Session, text: str) -> str:
        return s.message(assistant([{"type": "text", "text": text}], stop="stop"))

    # ---- sessions ----
    def new_session(self, key: str, *, counted: bool = True) -> Session:
        sid = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        self.clock += timedelta(hours=self.rng.uniform(2, 20))
        s = Session(self.rng, sid, self.clock, str(self.workspace))
        s.counted = counted  # type: ignore[attr-defined]
        self.sessions[key] = {"sessionId": sid, "updatedAt": 0, "chatType": "direct"}
        s.key = key  # type: ignore[attr-defined]
        s.entry("model_change", provider="anthropic", modelId="claude-sonnet-4-5")
        s.entry("thinking_level_change", thinkingLevel="low")
        return s

    def chat(self, s: Session) -> None:
        """A mixed conversation: every case the brief names."""
        c = s.counted  # type: ignore[attr-defined]
        mf = MEMORY_FILES
        r = self.rng
        self.user(
            s,
            "what did we decide about kafka retries? see memory/2026-10-01.md",
            image=r.random() < 0.3,
        )
        # plain search; the same file in three chunks of one result is one hit
        self.search(
            s,
            [(mf[1], "memory"), (mf[1], "memory"), (mf[1], "memory"), (mf[0], "memory")],
            counted=c,
        )
        self.get(s, mf[1], "## Kafka\n- retry budget 5\n", counted=c)
        self.answer(s, "We settled on a retry budget of 5 (memory/2026-10-01.md#L3).")

        # a branch: the user edits the question, two children of one parent, each ran
        ask = self.user(s, "and ana's birthday?")
        self.search(
            s, [(mf[4], "memory"), (mf[3], "memory")], counted=c, parent=ask, query="ana birthday"
        )
        self.answer(s, "March 3.")
        s.entry(
            "branch_summary",
            parent=ask,
            fromId=s.leaf,
            summary="Looked up memory/people/ana.md via memory_search",
        )
        self.search(s, [(mf[4], "memory")], counted=c, query="ana")
        s.entry("label", targetId=ask, label="birthday")

        # parallel calls in one assistant message, results in the other order
        a, b = self.call_id(), self.call_id()
        s.message(
            assistant(
                [
                    self.thinking(),
                    {
                        "type": "toolCall",
                        "id": a,
                        "name": "memory_search",
                        "arguments": {"query": "été"},
                    },
                    {
                        "type": "toolCall",
                        "id": b,
                        "name": "memory_get",
                        "arguments": {"path": mf[6]},
                    },
                ]
            )
        )
        s.message(tool_result(b, "memory_get", {"text": "東京 notes", "path": mf[6]}))
        if c:
            self.truth.add({mf[6]}, s.last_time)
        res = tool_result(
            a,
            "memory_search",
            self.search_payload(
                [(mf[5], "memory"), (mf[7], "memory")], citations=False, snippet_words=6
            ),
        )
        s.message(res)
        if c:
            self.truth.add(self.files_shown(res), s.last_time)

        # noise that is never a hit
        self.search(
            s, [("sessions/0b1c.jsonl", "sessions"), (mf[2], "sessions")], counted=c
        )  # transcripts
        self.search(
            s,
            [(mf[2], "wiki"), ("entities/kafka.md", "wiki"), (mf[3], "memory")],
            counted=c,
            extra_args={"corpus": "all"},
        )  # wiki result named like a memory file; mf[3] counts
        self.search(s, [(p, "memory") for p in NON_MEMORY_PATHS + ESCAPING_PATHS], counted=c)
        cid = self.call_id()
        s.message(
            assistant(
                [
                    {
                        "type": "toolCall",
                        "id": cid,
                        "name": "memory_search",
                        "arguments": {"query": "x"},
                    }
                ]
            )
        )
        s.message(
            tool_result(
                cid,
                "memory_search",
                {
                    "results": [],
                    "disabled": True,
                    "unavailable": True,
                    "error": "embedding provider 429 insufficient_quota",
                    "warning": "Memory search is unavailable: embedding provider quota exhausted.",
                    "action": "Top up or switch embedding provider, then retry memory_search.",
                },
            )
        )
        cid = self.call_id()  # a thrown error
        s.message(
            assistant(
                [
                    {
                        "type": "toolCall",
                        "id": cid,
                        "name": "memory_search",
                        "arguments": {"query": "y"},
                    }
                ]
            )
        )
        s.message(
            tool_result(
                cid,
                "memory_search",
                {},
                is_error=True,
                raw_text="memory_search failed: see memory/2026-10-02.md and MEMORY.md",
            )
        )
        cid = self.call_id()  # aborted: the call is written, no result ever follows
        s.message(
            assistant(
                [
                    {
                        "type": "toolCall",
                        "id": cid,
                        "name": "memory_search",
                        "arguments": {"query": "z"},
                    }
                ],
                stop="aborted",
                errorMessage="Request was aborted",
            )
        )
        self.get(s, mf[2], "", counted=c)  # empty text
        self.get(s, "memory/missing.md", "", counted=c)
        self.get(
            s,
            "memory/../../etc/passwd",
            "",
            counted=c,
            payload={
                "path": "memory/../../etc/passwd",
                "text": "",
                "disabled": True,
                "error": "path required",
            },
        )
        self.get(
            s, "notes/ideas.md", "some notes", counted=c
        )  # an extraPaths file: not a memory file
        self.get(
            s,
            "entities/kafka.md",
            "wiki page",
            counted=c,
            payload={
                "corpus": "wiki",
                "path": mf[3],
                "title": "kafka",
                "kind": "entity",
                "fromLine": 1,
                "lineCount": 3,
                "text": "wiki page",
            },
        )
        self.other_tool(
            s,
            "read",
            {"path": str(self.workspace / mf[3])},
            "# 2026-10-15\n- memory_search tuning\n",
        )
        self.other_tool(
            s,
            "exec",
            {"command": "grep -rn kafka memory/"},
            f"{mf[1]}:3:- retry budget 5\n{mf[0]}:12:kafka\n",
            details={"status": "completed", "exitCode": 0, "cwd": str(self.workspace)},
        )
        self.other_tool(
            s,
            "exec",
            {"command": "cat memory/nope.md"},
            "cat: memory/nope.md: No such file",
            is_error=True,
            details={"status": "failed", "exitCode": 1},
        )
        self.other_tool(
            s,
            "web_search",
            {"query": "memory_search path memory/2026-10-01.md"},
            js_pretty(
                {
                    "results": [
                        {
                            "path": mf[1],
                            "url": "https://x.example/memory/2026-10-01.md",
                            "source": "memory",
                        }
                    ]
                }
            ),
        )
        s.entry(
            "custom",
            customType="openclaw.cache-ttl",
            data={"timestamp": ms(s.t), "note": "memory_search"},
        )
        s.entry(
            "custom_message",
            customType="memory-flush",
            display=False,
            content="Pre-compaction memory flush. Store durable memories in memory/2026-11-02.md.",
        )
        s.entry(
            "compaction",
            summary="Earlier: memory_search found memory/2026-10-01.md; memory_get read MEMORY.md.",
            firstKeptEntryId=s.leaf,
            tokensBefore=183_422,
            details={"readFiles": [str(self.workspace / mf[1])], "modifiedFiles": []},
        )
        s.entry("session_info", name="kafka + birthdays")

        # big results: details replaced by the 8 KiB cap, text intact
        self.search(s, [(mf[i % 4], "memory") for i in range(8)], counted=c, snippet_words=160)
        # details replaced and text cut in the middle: the middle results are gone
        self.search(
            s, [(mf[i % len(mf)], "memory") for i in range(24)], counted=c, snippet_words=140
        )
        # a build before the caps: one very long line, every path present
        self.search(
            s,
            [(mf[i % len(mf)], "memory") for i in range(40)],
            counted=c,
            snippet_words=2500,
            capped=False,
        )
        # a cut result whose middle holds the only chunks of two files: those two are gone
        order = (
            [(mf[0], "memory")] * 11
            + [(mf[5], "memory"), (mf[6], "memory")]
            + [(mf[1], "memory")] * 11
        )
        self.search(s, [*order, (mf[7], "memory")], counted=c, snippet_words=150)
        # details capped, text intact: a wiki page named like a memory file (corpus before path)
        self.search(
            s,
            [(mf[2], "wiki")] + [(mf[4], "memory")] * 7,
            counted=c,
            snippet_words=160,
            extra_args={"corpus": "all"},
        )
        # memory_get of a long file: 12,000-char text, so details (over 8 KiB) lose the path;
        # the path survives in the text (intact) or in its tail (cut, memoryGetMaxChars raised)
        long_text = "\n".join(f"- line {i} {self.snippet(8)}" for i in range(400))
        self.get(
            s,
            "./" + mf[3],
            long_text[:12_000],
            counted=False,
            payload={
                "status": "ok",
                "text": long_text[:12_000],
                "path": mf[3],
                "from": 1,
                "lines": 180,
                "truncated": True,
                "nextFrom": 181,
            },
        )
        if c:
            self.truth.add({mf[3]}, s.last_time)
        self.get(
            s,
            str(self.workspace / mf[0]),
            long_text[:30_000],
            counted=False,
            payload={"text": long_text[:30_000], "path": mf[0], "from": 1, "lines": 400},
        )
        if c:
            self.truth.add({mf[0]}, s.last_time)
        # a snippet with U+2028 / U+2029 written raw, as JSON.stringify leaves them
        s_id = self.call_id()
        s.message(
            assistant(
                [
                    {
                        "type": "toolCall",
                        "id": s_id,
                        "name": "memory_search",
                        "arguments": {"query": "sep"},
                    }
                ]
            )
        )
        payload = self.search_payload([(mf[7], "memory")], citations=True, snippet_words=3)
        payload["results"][0]["snippet"] += "\u2028line\u2029para\r\n"
        msg = tool_result(s_id, "memory_search", payload)
        s.message(msg)
        if c:
            self.truth.add(self.files_shown(msg), s.last_time)
        self.answer(s, "Done.")

    def kimi_turns(self, s: Session, *, raw_ids: bool) -> None:
        """Turns with a provider that numbers tool calls per response (``functions.NAME:0``).

        Every turn's first call has the same id; OpenClaw's guard maps a raw id to one
        persisted id (``functions_memory_search_0``), builds before it wrote the raw id. Each
        turn is still its own call with its own result, so each counts.
        """
        c = s.counted  # type: ignore[attr-defined]
        mf = MEMORY_FILES
        for turn in range(4):
            self.user(s, f"question {turn}")
            sid = "functions.memory_search:0" if raw_ids else "functions_memory_search_0"
            gid = "functions.memory_get:1" if raw_ids else "functions_memory_get_1"
            files = [mf[(turn + k) % len(mf)] for k in range(2)]
            s.message(
                assistant(
                    [
                        {"type": "text", "text": "Let me check my notes."},
                        {
                            "type": "toolCall",
                            "id": sid,
                            "name": "memory_search",
                            "arguments": {"query": f"q{turn}"},
                        },
                        {
                            "type": "toolCall",
                            "id": gid,
                            "name": "memory_get",
                            "arguments": {"path": files[0]},
                        },
                    ],
                    provider="moonshot",
                    model="kimi-k2-0905-preview",
                )
            )
            res = tool_result(
                sid,
                "memory_search",
                self.search_payload(
                    [(f, "memory") for f in files], citations=True, snippet_words=5
                ),
            )
            s.message(res)
            if c:
                self.truth.add(self.files_shown(res), s.last_time)
            s.message(tool_result(gid, "memory_get", {"text": "- a note", "path": files[0]}))
            if c:
                self.truth.add({files[0]}, s.last_time)
            self.answer(s, f"answer {turn}")

    # ---- the folder ----
    def write(self, layout: str = "jsonl") -> None:
        """Write the workspace and the transcripts: ``jsonl`` files with ``sessions.json``, or
        ``store``, the per-agent SQLite store of newer builds (no JSONL, no sessions.json)."""
        ws = self.workspace
        for rel in MEMORY_FILES + UNUSED_FILES + ["notes/ideas.md", "memory/readme.txt"]:
            p = ws / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"# {rel}\n\n- a note\n", encoding="utf-8")
        (self.state).mkdir(parents=True)
        (self.state / "openclaw.json").write_text(
            json.dumps(
                {
                    "agents": {
                        "defaults": {
                            "workspace": str(ws),
                            "model": {"primary": "anthropic/claude-sonnet-4-5"},
                        },
                        "list": [{"id": "main", "default": True}],
                    },
                    "memory": {"citations": "auto"},
                },
                indent=2,
            ),
            encoding="utf-8",
        )
        sdir = self.state / "agents" / "main" / "sessions"
        sdir.mkdir(parents=True)
        (self.state / "agents" / "main" / "agent").mkdir(parents=True)
        written: list[tuple[Session, Path]] = []
        stored: list[Session] = []
        plan = [
            ("agent:main:main", True),
            ("agent:main:telegram:direct:4242", True),
            ("agent:main:cron:nightly-digest", False),
            ("agent:main:discord:group:99", True),
            ("agent:main:whatsapp:direct:+33612345678", True),
            ("agent:main:signal:direct:+4915112345678", True),
        ]
        for key, counted in plan:
            s = self.new_session(key, counted=counted)
            if "whatsapp" in key or "signal" in key:
                self.kimi_turns(s, raw_ids="signal" in key)
                self.kimi_turns(s, raw_ids="signal" in key)  # a second run: the guard starts afresh
            else:
                for _ in range(self.rng.randint(1, 3)):
                    self.chat(s)
            self.sessions[key]["updatedAt"] = ms(s.t)
            if layout == "store":
                stored.append(s)
                continue
            path = sdir / f"{s.sid}.jsonl"
            path.write_text("\n".join(s.lines) + "\n", encoding="utf-8")
            self.sessions[key]["sessionFile"] = str(path)
            written.append((s, path))
        if layout == "store":
            write_store(self.state / "agents" / "main" / "agent" / "openclaw-agent.sqlite", stored)
            return
        (sdir / "sessions.json").write_text(json.dumps(self.sessions, indent=2), encoding="utf-8")
        for s, path in written:  # oldest first, as they were written
            stamp = s.t.timestamp()
            os.utime(path, (stamp, stamp))


# The store's tables as current builds create them (events of 1 KiB and more compressed:
# event_json NULL, one zstd frame in event_zstd and its decoded length in event_utf8_bytes).
STORE_SCHEMA = """
CREATE TABLE session_windows (
  session_id TEXT NOT NULL PRIMARY KEY,
  session_key TEXT NOT NULL,
  previous_session_id TEXT,
  reason TEXT,
  session_scope TEXT NOT NULL DEFAULT 'conversation',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;
CREATE TABLE transcript_events (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_json TEXT,
  created_at INTEGER NOT NULL,
  event_zstd BLOB,
  event_utf8_bytes INTEGER,
  navigation_json TEXT,
  PRIMARY KEY (session_id, seq)
) STRICT;
"""
COMPRESS_FROM_BYTES = 1024


def write_store(db: Path, sessions: list[Session]) -> None:
    """The sessions as rows of OpenClaw's per-agent SQLite store."""
    import sqlite3

    import zstandard

    cctx = zstandard.ZstdCompressor(level=3)
    conn = sqlite3.connect(db)
    try:
        conn.executescript(STORE_SCHEMA)
        for s in sessions:
            first = json.loads(s.lines[0])["timestamp"]
            start = ms(datetime.fromisoformat(first.replace("Z", "+00:00")))
            conn.execute(
                "INSERT INTO session_windows (session_id, session_key, reason, created_at,"
                " updated_at) VALUES (?, ?, 'initial', ?, ?)",
                (s.sid, s.key, start, ms(s.t)),  # type: ignore[attr-defined]
            )
            for seq, line in enumerate(s.lines):
                raw = line.encode()
                if len(raw) >= COMPRESS_FROM_BYTES:
                    row = (s.sid, seq, None, start + seq, cctx.compress(raw), len(raw))
                else:
                    row = (s.sid, seq, line, start + seq, None, None)
                conn.execute(
                    "INSERT INTO transcript_events (session_id, seq, event_json, created_at,"
                    " event_zstd, event_utf8_bytes) VALUES (?, ?, ?, ?, ?, ?)",
                    row,
                )
        conn.commit()
    finally:
        conn.close()


def build(root: Path, seed: int, layout: str = "jsonl") -> Synth:
    """Write a state folder under ``root`` and return the synthesizer (``.truth``, ``.state``)."""
    synth = Synth(root, seed)
    synth.write(layout)
    return synth
