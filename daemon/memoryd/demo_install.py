"""The OpenClaw install ``memoryd demo`` builds: a workspace of notes, months of transcripts.

A newcomer without OpenClaw should still see memoryd on something that looks like an
agent's history: a workspace of notes, eight months of transcripts that look them up in the
everyday shape OpenClaw's JSONL releases write (openclaw-formats.md §2–4), ``sessions.json``
and a JSON5 ``openclaw.json``. None of the tests' generator's dialects and decoys
(``tests/support/corpus``): counting is proved there, only shown here. Texts:
:mod:`memoryd.demo_notes`.

Same seed, same bytes (paths aside): every random choice comes from one ``random.Random``.
"""

from __future__ import annotations

import os
import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from .demo_notes import (
    CHINESE,
    DAY_SECTIONS,
    DID,
    EVENTS,
    FAVOURITES,
    KEEP_WHOLE,
    MEMORY_SECTIONS,
    QUERIES,
    RARELY,
    TOPIC_NOTES,
    WHAT,
    WHEN,
    WHO,
)

DAY = 86_400.0
SEED = 7
# Eight months of 12 sessions, a budget of 400 KB and a memory call for every 5 KB of it: a
# memory-heavy agent, so there is something to count (a call and its answer are most of those
# 5 KB, and take the transcripts to about 0.5 MB). `simulate` needs 30 days of hits before a
# replayed monthly run and 60 after it: this span gives it several runs to replay.
SESSIONS, TARGET_BYTES, SPAN_DAYS, CALL_EVERY_BYTES = 12, 400_000, 240, 5_000
DETAILS_MAX = 8 << 10  # a bigger answer keeps only a marker in `details` (§4)

OTHER_TOOLS = ("exec", "read", "write", "edit", "web_search", "web_fetch", "process")
MODELS = ("claude-opus-4-6", "claude-sonnet-4-6", "gpt-5.2")
WORKSPACE_FILES = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "TOOLS.md", "HEARTBEAT.md")


@dataclass(frozen=True)
class DemoInstall:
    """Where the demo's OpenClaw install is, and its transcripts (the files memoryd reads)."""

    state_dir: Path
    workspace: Path
    transcripts: tuple[Path, ...]
    transcript_bytes: int


@dataclass(eq=False)  # hashed by identity: a search names each note found once
class _Note:
    rel: str
    lines: list[str]
    weight: float  # how often a search finds it
    born: float  # no call can name it before this time
    mtime: float


def iso_ms(ms: int) -> str:
    """OpenClaw's line timestamp: ISO 8601 UTC with milliseconds and a Z."""
    return datetime.fromtimestamp(ms // 1000, UTC).strftime("%FT%T") + f".{ms % 1000:03d}Z"


def _day(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d")


def _pretty(obj: Any) -> str:
    """A tool's JSON answer as the memory tools print it: indented by two."""
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode()


class _Draw:
    """Prose, tool output and ids, all from one ``random.Random(seed)``."""

    def __init__(self, seed: int):
        self.rng = rng = random.Random(seed)
        self.sentences = [
            f"{rng.choice(WHO)} {rng.choice(DID)} {rng.choice(WHAT)} {rng.choice(WHEN)}."
            for _ in range(400)
        ] + list(CHINESE) * 10
        chunks, size = [], 0
        while size < 1 << 19:  # half a MiB of logs, code and listings that outputs are cut from
            kind, w = rng.randrange(3), rng.choice(WHAT).split()[-1]
            if kind == 0:
                line = f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 28)}T{rng.randint(10, 23)}:"
                line += f"{rng.randint(10, 59)}:07Z INFO {w}[{rng.randint(100, 9999)}]: "
                line += f"{self.text(20, 90)} in {rng.randint(1, 900)}ms\n"
            elif kind == 1:
                line = f"def {w}_{rng.randint(1, 99)}(value, limit={rng.randint(1, 64)}):\n"
                line += "    return [x for x in value if x < limit]\n\n"
            else:
                line = f"-rw-r--r--  1 alice  staff  {rng.randint(10, 999999):>7}  {w}_"
                line += f"{rng.randint(1, 999)}.{rng.choice(('py', 'ts', 'md', 'json'))}\n"
            chunks.append(line)
            size += len(line)
        self.bulk = "".join(chunks)

    def text(self, lo: int, hi: int) -> str:
        """Prose of ``lo``..``hi`` characters (whole sentences, so a little more)."""
        target, parts, n = self.rng.randint(lo, hi), [], 0
        while n < target:
            parts.append(self.rng.choice(self.sentences))
            n += len(parts[-1]) + 1
        return " ".join(parts)

    def output(self, n: int) -> str:
        if n <= len(self.bulk) // 2:
            start = self.rng.randrange(len(self.bulk) - n)
            return self.bulk[start : start + n]
        return (self.bulk * (n // len(self.bulk) + 2))[self.rng.randrange(1000) :][:n]

    def output_size(self) -> int:
        """Mostly small outputs; a few large reads and logs carry most of the bytes."""
        r, randint = self.rng.random(), self.rng.randint
        if r < 0.70:
            return randint(100, 1_500)
        if r < 0.92:
            return randint(1_500, 8_000)
        return randint(8_000, 40_000) if r < 0.98 else randint(40_000, 150_000)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def call_id(self) -> str:
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return "toolu_01" + "".join(self.rng.choices(alphabet, k=22))


def _notes(draw: _Draw, now: float, span_days: int) -> list[_Note]:
    """The workspace's memory notes, each with its popularity, birth and mtime."""
    rng, start = draw.rng, now - span_days * DAY
    before = start - 60 * DAY  # topic notes predate the history

    def prose(headings: list[str]) -> list[str]:
        out = []
        for heading in headings:
            out += ["", f"## {heading}"]
            out += [f"- {draw.text(30, 160)}" for _ in range(rng.randint(2, 6))]
        return out

    memory = ["# Long-term memory", *prose(list(MEMORY_SECTIONS))]
    notes = [_Note("MEMORY.md", memory, 30, before, now - 2 * DAY)]
    days = sorted(rng.sample(range(span_days), k=min(span_days, 58)))
    for d in days:
        t = start + d * DAY
        body = prose(rng.sample(DAY_SECTIONS, k=rng.randint(2, 4)))
        notes.append(_Note(f"memory/{_day(t)}.md", [f"# {_day(t)}", *body], 0, t, t + 0.9 * DAY))
    for rel, text in TOPIC_NOTES.items():
        body = [] if rel in KEEP_WHOLE else prose(rng.sample(DAY_SECTIONS, k=rng.randint(1, 3)))
        if "imports" in rel:
            body = prose([f"Conversation {i + 1}" for i in range(30)])
        mtime = start + rng.uniform(0, 30 if rel in RARELY else span_days - 10) * DAY
        notes.append(_Note(rel, text.rstrip("\n").split("\n") + body, 0, before, mtime))
    for d in rng.sample(days, k=4):
        t, event = start + d * DAY, rng.choice(EVENTS)
        lines = [f"# {_day(t)} {event.replace('-', ' ')}", *prose(["Notes", "Next"])]
        notes.append(_Note(f"memory/{_day(t)}-{event}.md", lines, 0, t, t + DAY))
    for d in days[-2:]:
        t = start + d * DAY
        lines = [f"# Deep dreaming {_day(t)}", *prose(["Themes"])]
        notes.append(_Note(f"memory/dreaming/deep/{_day(t)}.md", lines, 0, t + 0.95 * DAY, t + DAY))
    # Popularity: MEMORY.md first, three favourites, a long tail, about 40 % never looked up
    # (the RARELY notes among them).
    rest = [n for n in notes[1:] if n.rel not in FAVOURITES + RARELY]
    rng.shuffle(rest)
    never = int(len(notes) * 0.42)
    for i, note in enumerate(rest):
        note.weight = 0.0 if i < never else rng.choice((0.5, 1.0, 1.0, 2.0, 4.0))
    for note in notes:
        note.weight = 10.0 if note.rel in FAVOURITES else note.weight
    return notes


class _Transcript:
    """One session file being written: its lines, clock and entry chain."""

    def __init__(self, draw: _Draw, path: Path, start_ms: int, now_ms: int, cwd: str):
        self.draw, self.rng, self.path, self.now_ms = draw, draw.rng, path, now_ms
        self.ms, self.size = start_ms, 0
        self.last_id: str | None = None
        self.lines: list[bytes] = []
        self.sid = path.name.removesuffix(".jsonl")
        self.add(dict(type="session", version=3, id=self.sid, timestamp=iso_ms(start_ms), cwd=cwd))
        self.size -= len(cwd)  # budgets leave the root's path out: same seed, same session
        self.record("model_change", provider="anthropic", modelId=self.rng.choice(MODELS))

    def add(self, obj: dict[str, Any]) -> None:
        self.lines.append(orjson.dumps(obj))
        self.size += len(self.lines[-1]) + 1

    def tick(self, lo_s: float, hi_s: float) -> int:
        """The clock moves on, never into the last minute before now."""
        ms = min(self.ms + int(self.rng.uniform(lo_s, hi_s) * 1000), self.now_ms - 60_000)
        self.ms = max(self.ms + 1, ms)
        return self.ms

    def record(self, kind: str, **fields: Any) -> None:
        """An entry of the session's chain: its 8-hex id, its parent's, its line time."""
        eid = f"{self.rng.getrandbits(32):08x}"
        self.add(dict(type=kind, id=eid, parentId=self.last_id, timestamp=iso_ms(self.ms)) | fields)
        self.last_id = eid

    def assistant(self, content: list[dict[str, Any]], stop: str) -> None:
        rng, ms = self.rng, self.tick(1, 30)
        inp, out = rng.randint(200, 9000), rng.randint(20, 2000)
        cost = {"input": round(inp * 3e-6, 6), "output": round(out * 1.5e-5, 6)}
        usage = dict(input=inp, output=out, cacheRead=rng.randint(0, 90000), cacheWrite=0,
                     totalTokens=inp + out, cost=cost)  # fmt: skip
        msg: dict[str, Any] = dict(role="assistant", content=content, api="anthropic-messages")
        msg |= dict(provider="anthropic", model=rng.choice(MODELS), usage=usage, stopReason=stop)
        self.record("message", message=msg | {"timestamp": ms - rng.randint(0, 15)})

    def tool(self, name: str, args: dict[str, Any], text: str, details: Any) -> None:
        """A call and its result, each an entry; the result's details as OpenClaw keeps them."""
        call_id = self.draw.call_id()
        call = {"type": "toolCall", "id": call_id, "name": name, "arguments": args}
        self.assistant([call], "toolUse")
        if len(text) > DETAILS_MAX and details:  # (§4: over 8 KiB only a marker stays)
            details = {"persistedDetailsTruncated": True, "originalDetailKeys": list(details)}
        ms = self.tick(0.2, 6)
        res: dict[str, Any] = dict(role="toolResult", toolCallId=call_id, toolName=name)
        res |= dict(content=[{"type": "text", "text": text}], details=details, isError=False)
        self.record("message", message=res | {"timestamp": ms - self.rng.randint(0, 9)})

    def ordinary(self, room: int) -> None:
        """One turn of everyday traffic: a user's words, an answer, another tool's output."""
        rng, draw, r = self.rng, self.draw, self.rng.random()
        if r < 0.15:
            words = [{"type": "text", "text": draw.text(20, 600)}]
            ms = self.tick(20, 600)
            self.record("message", message={"role": "user", "content": words, "timestamp": ms - 3})
        elif r < 0.35:
            content = [{"type": "text", "text": draw.text(40, 1500)}]
            if rng.random() < 0.4:
                thought = {"type": "thinking", "thinking": draw.text(100, 1500)}
                content.insert(0, thought | {"thinkingSignature": "s"})
            self.assistant(content, "stop")
        elif r < 0.37:
            data = {"timestamp": self.tick(0.1, 5), "ttl": 300}
            self.record("custom", customType="openclaw.cache-ttl", data=data)
        else:
            name = rng.choice(OTHER_TOOLS)
            args = {"command": "git status"} if name == "exec" else {"path": "notes/todo.md"}
            output = draw.output(min(draw.output_size(), max(150, room - 1500)))
            self.tool(name, args, output, {"exitCode": 0} if name == "exec" else {})

    def memory_call(self, notes: list[_Note]) -> None:
        """A ``memory_search`` (70 %) or a ``memory_get``, answered from the notes alive now."""
        rng = self.rng
        alive = [n for n in notes if n.weight > 0 and n.born * 1000 <= self.ms]
        k = rng.choices((1, 2, 3, 4, 5, 6), (8, 12, 18, 22, 20, 20))[0]
        picks = rng.choices(alive, weights=[n.weight for n in alive], k=k)
        payload: dict[str, Any]
        if rng.random() < 0.7:
            results = []
            for note in dict.fromkeys(picks):  # a chunk of each note found: its lines as they are
                first = rng.randint(1, len(note.lines))
                first += not note.lines[first - 1]  # (a blank line is never a note's last)
                last = min(len(note.lines), first + rng.randint(0, 4))
                snippet = "\n".join(note.lines[first - 1 : last])
                score = round(rng.uniform(0.35, 0.92), 4)
                found = dict(path=note.rel, startLine=first, endLine=last, score=score)
                cite = f"{note.rel}#L{first}-L{last}"
                results.append(found | dict(snippet=snippet, source="memory", citation=cite))
            payload = dict(results=results, provider="openai", citations="auto")
            query = {"query": rng.choice(QUERIES), "maxResults": 6}
            self.tool("memory_search", query, _pretty(payload), payload)
            return
        note = picks[0]
        args: dict[str, Any] = {"path": note.rel}
        payload = {"path": note.rel, "text": "\n".join(note.lines) + "\n"}
        if rng.random() < 0.6:  # some lines of it, else the whole note
            first = rng.randint(1, len(note.lines))
            count = min(rng.choice((20, 40)), len(note.lines) - first + 1)
            args |= {"from": first, "lines": count}
            text = "\n".join(note.lines[first - 1 : first - 1 + count]) + "\n"
            payload = {"text": text, "path": note.rel, "from": first, "lines": count}
        self.tool("memory_get", args, _pretty(payload), payload)

    def write(self, final: Path) -> int:
        data = b"\n".join(self.lines) + b"\n"
        final.write_bytes(data)
        os.utime(final, (self.ms / 1000, self.ms / 1000))
        return len(data)


def build(root: Path, *, now: float, size_mb: int | None = None, seed: int = SEED) -> DemoInstall:
    """Write the demo's OpenClaw state folder (``root/state``) and workspace (``root/workspace``).

    ``size_mb`` (``memoryd demo --size N``): a heavy user's year instead, about N MB of
    transcripts in 6 sessions per 10 MB (the shape of a 1 GB, 600-transcript install), as
    memory-heavy as the small one.
    """
    sessions, target, span = SESSIONS, TARGET_BYTES, SPAN_DAYS
    if size_mb is not None:
        sessions, target, span = max(12, size_mb * 6 // 10), size_mb << 20, 365
    state, ws = root / "state", root / "workspace"
    draw = _Draw(seed)
    rng = draw.rng
    notes = _notes(draw, now, span)
    for note in notes:
        path = ws / note.rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(note.lines) + "\n", encoding="utf-8")
        os.utime(path, (note.mtime, note.mtime))
    for name in WORKSPACE_FILES:
        (ws / name).write_text(f"# {name[:-3].title()}\n\n{draw.text(80, 300)}\n", encoding="utf-8")

    weights = [rng.lognormvariate(0, 1.0) for _ in range(sessions)]
    budgets = [max(1500, int(target * w / sum(weights))) for w in weights]
    calls = [0] * sessions
    for i in rng.choices(range(sessions), budgets, k=max(sessions, target // CALL_EVERY_BYTES)):
        calls[i] += 1
    # Sessions over the whole span, and a quarter of them in the last four weeks: the agent is
    # in use, and the 30 days `hits` shows by default have something in them.
    recent = sessions // 4
    starts = [rng.uniform(now - span * DAY, now - 1.2 * DAY) for _ in range(sessions - recent)]
    starts = sorted(starts + [now - rng.uniform(1.2, 28) * DAY for _ in range(recent)])
    sdir = state / "agents" / "main" / "sessions"
    sdir.mkdir(parents=True, exist_ok=True)
    index: dict[str, dict[str, Any]] = {}
    written, size = [], 0
    reset = sorted(range(sessions), key=budgets.__getitem__)[: max(1, sessions // 12)]  # short ones
    for i in range(sessions):
        path = sdir / f"{draw.uuid()}.jsonl"
        f = _Transcript(draw, path, int(starts[i] * 1000), int(now * 1000), str(ws))
        for k in range(calls[i]):  # the memory calls spread evenly through the session
            while f.size < budgets[i] * (k + 1) / (calls[i] + 1):
                f.ordinary(budgets[i] - f.size)
            f.memory_call(notes)
        while f.size < budgets[i]:
            f.ordinary(budgets[i] - f.size)
        final = f.path
        if i in reset:  # `/new` renamed it; its key went on in a new session
            stamp = iso_ms(f.ms + 60_000).replace(":", "-")
            final = f.path.with_name(f"{f.path.name}.reset.{stamp}")
        else:
            direct = f"agent:main:telegram:direct:{rng.randint(10**8, 10**9)}"
            key = direct if index else "agent:main:main"
            index[key] = {"sessionId": f.sid, "updatedAt": f.ms, "sessionFile": str(f.path)}
        size += f.write(final)
        written.append(final)
    (sdir / "sessions.json").write_bytes(orjson.dumps(index, option=orjson.OPT_INDENT_2))
    _write_config(state, ws, seed)
    return DemoInstall(state, ws, tuple(written), size)


def _write_config(state: Path, ws: Path, seed: int) -> None:
    """``openclaw.json`` in JSON5, as OpenClaw writes it: a comment, unquoted keys."""
    name = orjson.dumps(str(ws)).decode()
    (state / "openclaw.json").write_text(
        f"// OpenClaw configuration (written by `memoryd demo`, seed {seed}).\n{{\n"
        f"  agents: {{\n    defaults: {{\n      workspace: {name},\n"
        '      model: { primary: "anthropic/claude-opus-4-6" },\n'
        '      memorySearch: { provider: "openai", sources: ["memory", "sessions"] },\n'
        f'    }},\n    list: [\n      {{ id: "main", default: true, workspace: {name} }},\n'
        "    ],\n  },\n"
        '  channels: { telegram: { enabled: true, botToken: "000000:demo", }, },\n}\n',
        encoding="utf-8",
    )
