"""The OpenClaw JSONL transcript writer: session headers, message lines, memory calls, results.

One :class:`TranscriptFile` per file being built, with its own clock and entry chain;
:class:`OpenClawWriter` appends lines to it in OpenClaw's line format (openclaw-formats.md
§2–4): ``{"type":"message","id":…,"parentId":…,"timestamp":…,"message":{…}}`` envelopes
(or bare messages), everyday traffic between the memory calls (prose, thinking, other
tools, now and then a decoy that mentions memory paths), and every memory call in the
dialect its :class:`.dialects.Spec` chose. Each result written is reported to the
:class:`.truth.Reference` with its line's time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from . import claude_code
from .dialects import DIMS, Pending, Spec
from .draw import WORDS, Draw
from .payloads import BIG_LINE_BYTES, Payloads, pretty
from .truth import DAY, Reference
from .workspace import Workspace

WINDOW_GUARD_S = 600.0  # no line lands this close to `now - 30 days`: window edges stay unambiguous

QUERIES = (
    "boat trip decision",
    "espresso ratio for the new beans",
    "what did we decide about the router",
    "tailscale exit node setup",
    "dentist appointment",
    "acp setup steps",
    "invoice for october",
    "kyoto hotel booking",
    "backup schedule homelab",
    "garden irrigation valve",
    "birthday gift ideas",
    "memoryd design decisions",
    "weekly review notes",
    "咖啡 研磨度",
    "上次 路由器 設定",
    "deploy checklist",
    "meeting notes with the client",
)

OTHER_TOOLS = ("exec", "read", "write", "edit", "web_search", "web_fetch", "process", "browser")
MODELS = ("claude-opus-4-6", "claude-sonnet-4-6", "gpt-5.2")


class TranscriptFile:
    """Lines of one transcript being built, with its own clock and entry chain."""

    def __init__(self, path: Path, agent: str, start_ms: int, *, crlf: bool, role: str):
        self.path = path
        self.agent = agent
        self.ms = start_ms
        self.crlf = crlf
        self.role = role  # "counted" | "cron" (read, not counted) | "decoy" (must not be read)
        self.lines: list[bytes] = []
        self.size = 0
        self.last_id: str | None = None
        self.pending: list[Pending] = []

    def add(self, line: bytes) -> None:
        self.lines.append(line)
        self.size += len(line) + (2 if self.crlf else 1)

    def data(self) -> bytes:
        sep = b"\r\n" if self.crlf else b"\n"
        return sep.join(self.lines) + sep if self.lines else b""


def iso_ms(ms: int) -> str:
    """OpenClaw's line timestamp: ISO 8601 UTC with milliseconds and a Z."""
    return (
        datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"
    )


def file_ts(ms: int) -> str:
    """The timestamp in renamed-file suffixes and successor names (no colons)."""
    return iso_ms(ms).replace(":", "-")


def zstd_frame(data: bytes) -> bytes:
    """A zstd frame as OpenClaw writes one: level 1, content checksum on.

    zstd is imported here, on first use: only an archive or a compressed store event needs it.
    """
    try:  # the standard library's binding from Python 3.14, its official backport below
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - depends on the Python version
        from backports import zstd

    p = zstd.CompressionParameter
    return zstd.compress(data, options={p.compression_level: 1, p.checksum_flag: 1})


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


class OpenClawWriter:
    """Appends OpenClaw JSONL lines to transcript files; reports every result it writes."""

    def __init__(
        self, draw: Draw, workspace: Workspace, payloads: Payloads, ref: Reference, now: float
    ):
        self.draw = draw
        self.rng = draw.rng
        self.ws = workspace
        self.payloads = payloads
        self.ref = ref
        self.stats = ref.stats
        self.now_ms = int(now * 1000)
        edge = int((now - 30 * DAY) * 1000)
        self.guard = (edge - int(WINDOW_GUARD_S * 1000), edge + int(WINDOW_GUARD_S * 1000))
        self._multi_block_done = False

    def tick(self, f: TranscriptFile, lo_s: float, hi_s: float) -> int:
        """Advance a file's clock; never into the window-edge guard, never past now - 60 s."""
        ms = f.ms + int(self.rng.uniform(lo_s, hi_s) * 1000) + 1
        if self.guard[0] <= ms < self.guard[1]:
            ms = self.guard[1] + self.rng.randint(1000, 60_000)
        ms = min(ms, self.now_ms - 60_000)
        if ms % 1000 < 20:  # keep room so a message timestamp a few ms earlier is the same second
            ms += 20
        f.ms = max(ms, f.ms + 1)
        return f.ms

    # -- lines ---------------------------------------------------------------------

    def wrap(self, f: TranscriptFile, msg: dict[str, Any], ms: int) -> bytes:
        eid = self.draw.entry_id()
        line = {
            "type": "message",
            "id": eid,
            "parentId": f.last_id,
            "timestamp": iso_ms(ms),
            "message": msg,
        }
        f.last_id = eid
        return dumps(line)

    def header(self, f: TranscriptFile, sid: str, parent: str | None = None) -> None:
        version = self.rng.choice((3, 3, 3, 4, 2, None))
        head: dict[str, Any] = {"type": "session"}
        if version is not None:
            head["version"] = version
        head.update(id=sid, timestamp=iso_ms(f.ms), cwd=str(self.ws.path))
        if parent:
            head["parentSession"] = parent
        f.add(dumps(head))
        # Budgets ignore the root's path, so a seed gives the same corpus wherever it is written.
        f.size -= len(str(self.ws.path)) + len(parent or "")
        if self.rng.random() < 0.7:
            eid = self.draw.entry_id()
            f.add(
                dumps(
                    {
                        "type": "model_change",
                        "id": eid,
                        "parentId": None,
                        "timestamp": iso_ms(self.tick(f, 0.01, 0.2)),
                        "provider": "anthropic",
                        "modelId": self.rng.choice(MODELS),
                    }
                )
            )
            f.last_id = eid

    def _assistant_meta(self, ms: int, stop: str) -> dict[str, Any]:
        rng = self.rng
        inp, out = rng.randint(200, 9000), rng.randint(20, 2000)
        return {
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": rng.choice(MODELS),
            "usage": {
                "input": inp,
                "output": out,
                "cacheRead": rng.randint(0, 90000),
                "cacheWrite": 0,
                "totalTokens": inp + out,
                "cost": {
                    "input": inp * 3e-6,
                    "output": out * 1.5e-5,
                    "total": inp * 3e-6 + out * 1.5e-5,
                },
            },
            "stopReason": stop,
            "timestamp": ms - rng.randint(0, 15),
        }

    def ordinary(self, f: TranscriptFile, *, allow_big: bool, room: int = 1 << 30) -> None:
        """One turn of everyday traffic: text, thinking, other tools, and now and then a decoy."""
        rng = self.rng
        r = 1.0 if allow_big else rng.random()  # a big line is always a tool output
        if r < 0.15:
            ms = self.tick(f, 20, 600)
            text = self.draw.text(20, 600)
            if rng.random() < 0.01:
                text += " Can you memory_search what we said about the router? memory/2026-01-05.md"
                self.stats["decoy_text"] += 1
            f.add(
                self.wrap(
                    f,
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": text}],
                        "timestamp": ms - 3,
                    },
                    ms,
                )
            )
            return
        if r < 0.35:
            ms = self.tick(f, 2, 40)
            content: list[dict[str, Any]] = []
            if rng.random() < 0.4:
                content.append(
                    {
                        "type": "thinking",
                        "thinking": self.draw.text(100, 1500),
                        "thinkingSignature": "sig",
                    }
                )
            content.append({"type": "text", "text": self.draw.text(40, 1500)})
            f.add(
                self.wrap(
                    f,
                    {"role": "assistant", "content": content, **self._assistant_meta(ms, "stop")},
                    ms,
                )
            )
            return
        if r < 0.37:
            self._custom(f)
            return
        # another tool, with a result
        tool = rng.choice(OTHER_TOOLS)
        decoy = rng.random() < 0.03
        if allow_big:
            size = BIG_LINE_BYTES + rng.randint(0, 40_000)
        else:  # a session ends near its budget, not a 300 KB output past it
            size = min(self.draw.output_size(), max(150, room - 1500))
        args, output = self._other_tool(tool, size, decoy)
        call_id = self.draw.tool_id("toolCall")
        ms = self.tick(f, 1, 20)
        msg = {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": call_id, "name": tool, "arguments": args}],
            **self._assistant_meta(ms, "toolUse"),
        }
        f.add(self.wrap(f, msg, ms))
        ms = self.tick(f, 0.2, 30)
        res = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": tool,
            "content": [{"type": "text", "text": output}],
            "details": {"exitCode": 0, "durationMs": rng.randint(3, 9000)}
            if tool == "exec"
            else {},
            "isError": False,
            "timestamp": ms - rng.randint(0, 9),
        }
        f.add(self.wrap(f, res, ms))
        if allow_big:
            self.stats["big_line_other_tool"] += 1

    def _custom(self, f: TranscriptFile) -> None:
        ms = self.tick(f, 0.1, 5)
        eid = self.draw.entry_id()
        kind = self.rng.choice(("thinking_level_change", "custom"))
        line: dict[str, Any] = {
            "type": kind,
            "id": eid,
            "parentId": f.last_id,
            "timestamp": iso_ms(ms),
        }
        if kind == "custom":
            line.update(customType="openclaw.cache-ttl", data={"timestamp": ms, "ttl": 300})
        else:
            line["thinkingLevel"] = self.rng.choice(("low", "medium", "high"))
        f.last_id = eid
        f.add(dumps(line))

    def _other_tool(self, tool: str, size: int, decoy: bool) -> tuple[dict[str, Any], str]:
        """Arguments and output of a non-memory tool; decoys mention memory paths and tool names."""
        rng = self.rng
        mf = rng.choice(self.ws.files)
        if tool == "exec":
            args: dict[str, Any] = {
                "command": rng.choice(
                    ("ls -la", "git status", "pytest -q", "df -h", "journalctl -n 200")
                )
            }
        elif tool in ("read", "write", "edit"):
            args = {"path": rng.choice(("src/app.py", "README.md", "notes/todo.md", mf.rel))}
        elif tool in ("web_search", "web_fetch"):
            args = (
                {"query": self.draw.text(10, 60)}
                if tool == "web_search"
                else {"url": "https://example.org/a"}
            )
        else:
            args = {"action": "poll", "sessionId": self.draw.uuid()[:8]}
        output = self.draw.output(size)
        if not decoy:
            return args, output
        self.stats["decoy_other_tool"] += 1
        kind = rng.randrange(4)
        if kind == 0:  # grep over the transcripts: whole memory_search lines inside an exec output
            args = {"command": "grep -h memory_search ~/.openclaw/agents/main/sessions/*.jsonl"}
            fake = self._result_line_decoy(mf.rel)
            output = "\n".join([fake] * 3) + "\n" + output
        elif kind == 1:  # the CLI printing a search payload
            args = {"command": f"openclaw memory search {mf.words.split()[0]} --json"}
            payload = {
                "results": [self.payloads.search_result(mf, "plain", "numbers", "camel")],
                "provider": "openai",
            }
            output = pretty(payload) + "\n" + output
        elif kind == 2:  # reading a memory file with the ordinary read tool
            args = {"path": mf.rel}
            output = mf.content
        else:  # a web page that talks about the memory tools
            output = (
                'OpenClaw docs: call memory_search with {"query": "..."}; then memory_get '
                f'{{"path": "{mf.rel}"}} returns the text.\n' + output
            )
        return args, output

    def _result_line_decoy(self, rel: str) -> str:
        line = {
            "type": "message",
            "message": {
                "role": "toolResult",
                "toolCallId": self.draw.tool_id("toolCall"),
                "toolName": "memory_search",
                "content": [
                    {
                        "type": "text",
                        "text": pretty(
                            {"results": [{"path": rel, "score": 0.8, "source": "memory"}]}
                        ),
                    }
                ],
                "details": {"results": [{"path": rel, "score": 0.8, "source": "memory"}]},
                "isError": False,
            },
        }
        return dumps(line).decode()

    # -- memory calls --------------------------------------------------------------

    def memory_call(self, f: TranscriptFile, specs: list[Spec], *, defer: bool = False) -> None:
        """One assistant message carrying the calls, then their results (or defer them)."""
        rng = self.rng
        ms = self.tick(f, 1, 25)
        blocks: list[dict[str, Any]] = []
        if rng.random() < 0.4:
            blocks.append(
                {
                    "type": "text",
                    "text": rng.choice(
                        ("Let me check my notes.", "Searching memory.", "One moment.")
                    ),
                }
            )
        pendings: list[Pending] = []
        if len(specs) > 1 and f.role == "counted" and not self._multi_block_done:
            specs[0].result = "tool_result_block"  # at least once: several results in one message
            self._multi_block_done = True
        if specs[0].result.endswith("_block"):  # Claude style: one turn's results come together
            for sp in specs:
                sp.result = specs[0].result
        for sp in specs:
            base = "memory_search" if sp.tool == "search" else "memory_get"
            name = base if sp.name == "plain" else sp.name + base
            call_id = self.draw.tool_id(sp.block)
            decoy_targets = f.role != "counted" or sp.synthetic == "dreaming"
            if sp.tool == "search":
                if sp.synthetic == "dreaming":
                    day = datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")
                    query = f"__dreaming_daily__:{day}:{rng.choice(WORDS)}"
                else:
                    query = rng.choice(QUERIES)
                args: dict[str, Any] = {
                    "query": query,
                    "maxResults": self.payloads.num(rng.choice((5, 6, 8)), sp.numbers),
                }
                if rng.random() < 0.3:
                    args["minScore"] = self.payloads.num(0.3, sp.numbers)
                payload, hit = self.payloads.search_payload(sp, decoy_targets, ms)
            else:
                args, payload, hit = self.payloads.get_payload(sp, decoy_targets, ms)
            block = {"type": sp.block, sp.call_id: call_id, "name": name, sp.args: args}
            blocks.append(block)
            text, details, hit = self.payloads.render_result(sp, payload, hit)
            sp.call_wrap = specs[0].call_wrap  # one message, one wrapping
            self.stats[f"{f.role}.call.{sp.tool}"] += 1
            if f.role == "counted":
                for dim in DIMS:
                    self.stats[f"{dim}={getattr(sp, dim)}"] += 1
            if sp.outcome != "unanswered":
                pendings.append(Pending(sp, call_id, name, text, details, hit))
        msg = {"role": "assistant", "content": blocks, **self._assistant_meta(ms, "toolUse")}
        if specs[0].call_wrap == "bare":
            msg["timestamp"] = ms
            f.add(dumps(msg))
        else:
            f.add(self.wrap(f, msg, ms))
        if len(specs) > 1:
            self.stats["multi_call_message"] += 1
        if defer:
            f.pending.extend(pendings)
            return
        self.emit_results(f, pendings)

    def emit_results(self, f: TranscriptFile, pendings: list[Pending]) -> None:
        rng = self.rng
        if len(pendings) > 1 and rng.random() < 0.4:
            pendings = list(reversed(pendings))
        blocky = [p for p in pendings if p.spec.result in claude_code.BLOCK_RESULTS]
        if len(blocky) > 1 and rng.random() < 0.8:
            # Several tool_result blocks in one user message: all hits share its time.
            ms = self.tick(f, 0.3, 6)
            blocks = [claude_code.result_block(rng, p) for p in blocky]
            stamp = ms - rng.randint(0, 9) if blocky[0].spec.msg_ts == "present" else None
            f.add(self.wrap(f, claude_code.results_message(blocks, stamp), ms))
            for p in blocky:
                self._record(f, p, ms)
            self.stats["multi_result_message"] += 1
            pendings = [p for p in pendings if p not in blocky]
        for p in pendings:
            ms = self.tick(f, 0.3, 6)
            sp = p.spec
            if sp.result in claude_code.BLOCK_RESULTS:
                blocks = [claude_code.result_block(rng, p)]
                stamp = ms - rng.randint(0, 9) if sp.msg_ts == "present" else None
                f.add(self.wrap(f, claude_code.results_message(blocks, stamp), ms))
            else:
                idk = sp.result_id
                res: dict[str, Any] = {"role": "toolResult", idk: p.call_id}
                res["tool_name" if sp.keys == "snake" else "toolName"] = p.name
                res["content"] = [{"type": "text", "text": p.payload_text}]
                if p.details is not None:
                    res["details"] = p.details
                res["is_error" if sp.keys == "snake" else "isError"] = sp.outcome == "error"
                if sp.result == "bare":
                    res["timestamp"] = ms
                    f.add(dumps(res))
                else:
                    if sp.msg_ts == "present":
                        res["timestamp"] = ms - rng.randint(0, 9)
                    f.add(self.wrap(f, res, ms))
            self._record(f, p, ms)

    def _record(self, f: TranscriptFile, p: Pending, ms: int) -> None:
        """The reference: the files this result names count once each, at this line's time."""
        self.ref.record(f.role, p.spec.synthetic == "dreaming", p.hit_paths, ms)
