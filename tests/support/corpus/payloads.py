"""What memory tools answer: ``memory_search`` results and ``memory_get`` texts, and their cuts.

A payload is format-independent; the transcript writers wrap it in their own lines.
With each payload comes the list of memory files it names (workspace-relative, in
order, deduplicated), which is what the reference records when the result is written.
Hostile paths (``../../etc/passwd``), results from the ``sessions`` source and
non-memory files are named in payloads but never in that list.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import orjson

from .dialects import Spec
from .draw import Draw
from .workspace import MemFile, Workspace

BIG_LINE_BYTES = 640_000  # "single lines of 660 KB seen"


def pretty(obj: Any) -> str:
    """A tool's JSON answer as the memory tools print it: indented by two."""
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode()


def dedup(paths: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(paths))


class Payloads:
    """Search and get answers over one workspace, drawn from the corpus's random source."""

    def __init__(self, draw: Draw, workspace: Workspace, stats: Counter[str]):
        self.draw = draw
        self.rng = draw.rng
        self.ws = workspace
        self.stats = stats

    def style(self, rel: str, style: str) -> str:
        if style == "dot":
            return "./" + rel
        if style == "backslash":
            return rel.replace("/", "\\")
        if style == "dot_backslash":
            return ".\\" + rel.replace("/", "\\")
        return rel

    def num(self, value: float | int, numbers: str) -> Any:
        return str(value) if numbers == "strings" else value

    def search_result(
        self, mf: MemFile, style: str, numbers: str, keys: str, raw: str | None = None
    ) -> dict[str, Any]:
        rng = self.rng
        start = rng.randint(1, 60)
        lines = mf.content.count("\n") + 1
        start = min(start, lines)
        end = min(lines, start + rng.randint(2, 14))
        snippet_at = rng.randrange(max(1, len(mf.content) - 700))
        snippet = mf.content[snippet_at : snippet_at + rng.randint(160, 700)]
        sk, ek = ("start_line", "end_line") if keys == "snake" else ("startLine", "endLine")
        path = raw if raw is not None else self.style(mf.rel, style)
        res = {
            "path": path,
            sk: self.num(start, numbers),
            ek: self.num(end, numbers),
            "score": self.num(round(rng.uniform(0.35, 0.92), 4), numbers),
            "snippet": snippet,
            "source": "memory",
        }
        if rng.random() < 0.3:
            res["citation"] = f"{path}#L{start}-L{end}"
        return res

    def search_payload(
        self, sp: Spec, decoy_targets: bool, at_ms: int
    ) -> tuple[dict[str, Any], list[str]]:
        """Results of one search, and the memory files they name (dedup, in order)."""
        rng = self.rng
        results: list[dict[str, Any]] = []
        hit: list[str] = []
        for _ in range(rng.choices((1, 2, 3, 4, 5, 6), weights=(8, 12, 18, 22, 20, 20))[0]):
            mf = (
                rng.choice(self.ws.never_hit or self.ws.files)
                if decoy_targets and rng.random() < 0.6
                else self.ws.pick(at_ms)
            )
            results.append(self.search_result(mf, sp.path_style, sp.numbers, sp.keys))
            hit.append(mf.rel)
            if rng.random() < 0.08:  # another chunk of the same file
                results.append(self.search_result(mf, sp.path_style, sp.numbers, sp.keys))
                hit.append(mf.rel)
                self.stats["duplicate_chunk"] += 1
        if rng.random() < 0.1:
            sess = {
                "path": f"sessions/{self.draw.uuid()}.jsonl",
                "startLine": rng.randint(1, 400),
                "endLine": rng.randint(401, 800),
                "score": round(rng.uniform(0.3, 0.8), 4),
                "snippet": self.draw.text(60, 300),
                "source": "sessions",
            }
            results.insert(rng.randrange(len(results) + 1), sess)
            hit.insert(results.index(sess), "")
            self.stats["sessions_source_result"] += 1
        if rng.random() < 0.04:
            bad = rng.choice(
                ("../../etc/passwd", "/etc/passwd", "memory/../../x.md", "../notes/extra.md")
            )
            mf = rng.choice(self.ws.files)
            results.insert(
                rng.randrange(len(results) + 1),
                self.search_result(mf, "plain", sp.numbers, sp.keys, raw=bad),
            )
            hit.insert(next(i for i, r in enumerate(results) if r["path"] == bad), "")
            self.stats["hostile_path"] += 1
        payload: dict[str, Any] = {
            "results": results,
            "provider": "openai",
            "model": "text-embedding-3-small",
        }
        if rng.random() < 0.2:
            payload["citations"] = "auto"
        return payload, hit

    def get_payload(
        self, sp: Spec, decoy_targets: bool, at_ms: int
    ) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        rng = self.rng
        hostile = not sp.big and rng.random() < 0.05
        if hostile:
            raw = rng.choice(
                (
                    "../../etc/passwd",
                    "/etc/passwd",
                    "memory/../../x.md",
                    "AGENTS.md",
                    "memory/notes.txt",
                )
            )
            rel = ""
            text = (
                "root:x:0:0:root:/root:/bin/bash\n" if "passwd" in raw else self.draw.text(50, 300)
            )
            self.stats["hostile_path"] += 1
        else:
            mf = (
                rng.choice(self.ws.never_hit or self.ws.files)
                if decoy_targets and rng.random() < 0.6
                else self.ws.pick(at_ms)
            )
            if sp.big:
                mf = next(m for m in self.ws.files if "imports" in m.rel)
            raw, rel = self.style(mf.rel, sp.path_style), mf.rel
            if sp.big:
                text = (mf.content + "\n") * (BIG_LINE_BYTES // max(1, len(mf.content)) + 1)
                self.stats["big_line_memory_get"] += 1
            else:
                at = rng.randrange(max(1, len(mf.content) - 1200))
                text = mf.content[at : at + rng.randint(80, 1200)]
        args: dict[str, Any] = {"path": raw}
        if rng.random() < 0.4:
            args["from"] = self.num(rng.randint(1, 40), sp.numbers)
            args["lines"] = self.num(rng.choice((20, 40, 80)), sp.numbers)
        if sp.outcome == "empty":
            text = ""
        if rng.random() < 0.4:
            payload: dict[str, Any] = {"path": raw, "text": text}
        else:
            payload = {
                "text": text,
                "path": raw,
                "from": self.num(1, sp.numbers),
                "lines": self.num(text.count("\n") + 1, sp.numbers),
            }
            if rng.random() < 0.2:
                payload.update(truncated=True, nextFrom=self.num(81, sp.numbers))
        return args, payload, [rel]

    def render_result(
        self, sp: Spec, payload: dict[str, Any], hit: list[str]
    ) -> tuple[str, dict[str, Any] | None, list[str]]:
        """Result text and details for an outcome and payload form, and the files it names."""
        if sp.outcome == "disabled":
            body: dict[str, Any] = {
                "results": [],
                "disabled": True,
                "error": "memory search is disabled: no embedding provider",
            }
            if sp.tool == "get":
                body = {
                    "path": payload["path"],
                    "text": "",
                    "disabled": True,
                    "error": "memory is disabled",
                }
            return pretty(body), body, []
        if sp.outcome == "error":
            return "Error: embedding provider timed out after 30000ms", None, []
        if sp.outcome == "empty":
            return pretty(payload), payload, []
        text = pretty(payload)
        named = [h for h in hit if h]
        if sp.payload == "cut" and sp.tool == "search":
            # Cut inside the snippet of result j: paths 0..j stay recoverable from the text.
            marks, at = [], text.find('"snippet": "')
            while at >= 0:
                marks.append(at)
                at = text.find('"snippet": "', at + 1)
            j = self.rng.randrange(len(marks))
            at = marks[j] + 12 + self.rng.randint(0, 80)
            text = (
                text[:at]
                + f"\n\n[Content truncated: {len(text)} characters exceeded the 16000 limit]"
            )
            named = [h for h in hit[: j + 1] if h]
            details: dict[str, Any] | None = {
                "persistedDetailsTruncated": True,
                "originalDetailKeys": list(payload),
            }
            self.stats["cut_text"] += 1
            return text, details, dedup(named)
        if sp.payload == "details_truncated":
            details = {
                "persistedDetailsTruncated": True,
                "originalDetailKeys": list(payload),
                "originalBytes": len(text),
            }
        elif sp.payload == "content_only":
            details = None
        else:
            details = payload
        return text, details, dedup(named)
