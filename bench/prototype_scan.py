#!/usr/bin/env python3
"""The seed's approach to hit counting, written carefully: the baseline memoryd must beat.

Every run reads every line of every transcript, ``json.loads`` each one, matches
memory_search / memory_get calls to their results and counts one hit per
(agent, call id, memory file). It accepts the same dialects and applies the same
rules as memoryd (successor copies, renamed files, truncated details, cut text,
MCP names, dreaming and cron traffic excluded), so the two are compared on equal work:
the difference is that this re-parses everything in full, every time.

Standard library only, like the seed's script. Usage:

    prototype_scan.py --state-dir DIR --workspace DIR [--days N] [--now EPOCH] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

CALL_TYPES = {"toolcall", "tooluse", "functioncall", "tool_use", "tool_call"}
RESULT_BLOCK_TYPES = {"toolresult", "tool_result"}
CALL_ID_KEYS = ("id", "toolCallId", "toolUseId", "tool_call_id", "tool_use_id")
RESULT_ID_KEYS = ("toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "id")
PATH_IN_TEXT = re.compile(r'"path"\s*:\s*"((?:[^"\\]|\\.)*)"')
RENAMED = re.compile(r"\.jsonl\.(?:reset|deleted)\.[^/]+$")
NOT_TRANSCRIPT = (".zst", ".gz", ".tmp", ".lock", ".trajectory.jsonl")


def is_transcript(name: str) -> bool:
    """Live, topic and successor files, and the renamed .reset / .deleted archives."""
    if name.endswith(NOT_TRANSCRIPT) or ".checkpoint." in name or ".bak-" in name:
        return False
    if name.startswith("sessions.json"):
        return False
    return name.endswith(".jsonl") or bool(RENAMED.search(name))


def tool_kind(name: object) -> str | None:
    if not isinstance(name, str):
        return None
    low = name.lower()
    if low.endswith("memory_search"):
        return "search"
    if low.endswith("memory_get"):
        return "get"
    return None


def first_key(d: dict, keys: tuple[str, ...]) -> str | None:
    for k in keys:
        v = d.get(k)
        if isinstance(v, str) and v:
            return v
    return None


def line_time(rec: dict) -> float | None:
    """The time of a line: its ISO ``timestamp``, else the message's milliseconds."""
    for holder in (rec, rec.get("message")):
        if not isinstance(holder, dict):
            continue
        t = holder.get("timestamp")
        if isinstance(t, str):
            try:
                return float(t) / 1000.0
            except ValueError:
                pass
            try:
                return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
        if isinstance(t, (int, float)):
            return t / 1000.0 if t > 1e11 else float(t)
    return None


def memory_key(raw: object, workspace: str) -> str | None:
    """Workspace-relative path of a memory file, or None (hostile, outside, not memory)."""
    if not isinstance(raw, str) or not raw or any(ord(c) < 32 for c in raw):
        return None
    p = raw.replace("\\", "/")
    if p.startswith("/"):
        p = posixpath.normpath(p)
        if not p.startswith(workspace + "/"):
            return None
        p = p[len(workspace) + 1 :]
    p = posixpath.normpath(p)
    if p.startswith("../") or p == "..":
        return None
    if p in ("MEMORY.md", "memory.md"):
        return p
    if p.startswith("memory/") and p.endswith(".md"):
        return p
    return None


def result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def result_paths(kind: str, content: object, details: object) -> list[str] | None:
    """Raw paths a memory result names as hits (None when the payload cannot be read)."""
    payload = None
    if isinstance(details, dict) and ("results" in details or "text" in details):
        payload = details
    text = result_text(content)
    if payload is None:
        try:
            payload = json.loads(text)
        except ValueError:
            payload = None
    if payload is None:  # text cut by a live cap: recover the paths that made it
        if kind != "search":
            return None
        return [json.loads(f'"{m}"') for m in PATH_IN_TEXT.findall(text)]
    if not isinstance(payload, dict) or payload.get("disabled"):
        return []
    if kind == "search":
        results = payload.get("results")
        if not isinstance(results, list):
            return []
        return [
            r.get("path")
            for r in results
            if isinstance(r, dict) and r.get("source", "memory") != "sessions"
        ]
    text_value = payload.get("text")
    if isinstance(text_value, str) and text_value:
        return [payload.get("path")]
    return []


class Scan:
    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self.calls: dict[tuple[str, str], tuple[str, str]] = {}  # (agent, id) -> (kind, query)
        self.results: list[tuple[str, str, str | None, list | None, float | None, bool]] = []
        self.lines = self.malformed = self.files = self.bytes = 0

    def feed_file(self, agent: str, path: Path, synthetic_session: bool) -> None:
        self.files += 1
        self.bytes += path.stat().st_size
        with open(path, "rb") as fh:
            for raw in fh:
                self.lines += 1
                try:
                    rec = json.loads(raw)
                except ValueError:
                    self.malformed += 1
                    continue
                if isinstance(rec, dict):
                    self.feed_record(agent, rec, synthetic_session)

    def feed_record(self, agent: str, rec: dict, synthetic: bool) -> None:
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else rec
        content = msg.get("content")
        if msg.get("role") in ("toolResult", "tool_result", "tool"):
            name = msg.get("toolName") or msg.get("tool_name")
            call_id = first_key(msg, RESULT_ID_KEYS)
            if call_id:
                error = bool(msg.get("isError") or msg.get("is_error"))
                self.add_result(
                    agent, call_id, name, content, msg.get("details"), rec, error, synthetic
                )
            return
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = str(block.get("type", "")).lower()
            if btype in CALL_TYPES:
                kind = tool_kind(block.get("name"))
                call_id = first_key(block, CALL_ID_KEYS)
                if kind and call_id:
                    args = block.get("arguments", block.get("input"))
                    query = args.get("query", "") if isinstance(args, dict) else ""
                    self.calls.setdefault((agent, call_id), (kind, str(query)))
            elif btype in RESULT_BLOCK_TYPES:
                call_id = first_key(block, RESULT_ID_KEYS)
                if call_id:
                    name = block.get("toolName") or block.get("name")
                    error = bool(block.get("isError") or block.get("is_error"))
                    content_b = block.get("content")
                    self.add_result(agent, call_id, name, content_b, None, rec, error, synthetic)

    def add_result(self, agent, call_id, name, content, details, rec, error, synthetic) -> None:
        if error:
            return
        kind = tool_kind(name)
        text = result_text(content)
        if kind is None and name is not None:
            return  # another tool's result
        if kind is None and '"path"' not in text:
            return
        paths = {
            k: result_paths(k, content, details) for k in ((kind,) if kind else ("search", "get"))
        }
        self.results.append((agent, call_id, kind, paths, line_time(rec), synthetic))

    def hits(self) -> dict[str, list[float]]:
        """Join results to calls; one hit per (agent, call id, memory file), first time kept."""
        seen: dict[tuple[str, str, str], float] = {}
        for agent, call_id, kind, paths, ts, synthetic in self.results:
            call = self.calls.get((agent, call_id))
            if kind is None:
                if call is None:
                    continue
                kind = call[0]
            if synthetic or (call is not None and call[1].startswith("__dreaming")):
                continue
            for raw in paths.get(kind) or ():
                key = memory_key(raw, self.workspace)
                if key is None or ts is None:
                    continue
                k = (agent, call_id, key)
                if k not in seen or ts < seen[k]:
                    seen[k] = ts
        out: dict[str, list[float]] = {}
        for (_a, _c, key), ts in seen.items():
            out.setdefault(key, []).append(ts)
        return out


def cron_sessions(sessions_dir: Path) -> set[str]:
    """Session ids (and file names) of cron and heartbeat sessions, from sessions.json."""
    try:
        index = json.loads((sessions_dir / "sessions.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    out: set[str] = set()
    for key, entry in index.items() if isinstance(index, dict) else ():
        tail = key.split(":", 2)[-1] if key.startswith("agent:") else key
        if (tail.startswith(("cron:", "heartbeat")) or key.startswith("cron:")) and isinstance(
            entry, dict
        ):
            if entry.get("sessionId"):
                out.add(str(entry["sessionId"]))
            if entry.get("sessionFile"):
                out.add(Path(str(entry["sessionFile"])).name.split(".jsonl")[0])
    return out


def memory_files(workspace: Path) -> list[str]:
    out = [n for n in ("MEMORY.md", "memory.md") if (workspace / n).is_file()]
    for dirpath, dirnames, filenames in os.walk(workspace / "memory"):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            full = Path(dirpath) / name
            if name.endswith(".md") and not full.is_symlink():
                out.append(full.relative_to(workspace).as_posix())
    return sorted(out)


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: UP017


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--state-dir", required=True, type=Path)
    ap.add_argument("--workspace", required=True, type=Path)
    ap.add_argument("--days", type=float, default=None, help="window (default: all time)")
    ap.add_argument("--now", type=float, default=None, help="epoch seconds (default: now)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    workspace = posixpath.normpath(str(args.workspace.resolve()))
    scan = Scan(workspace)
    agents_dir = args.state_dir / "agents"
    for agent_dir in sorted(p for p in agents_dir.iterdir() if p.is_dir()):
        sessions = agent_dir / "sessions"
        if not sessions.is_dir():
            continue
        synthetic = cron_sessions(sessions)
        for entry in sorted(os.scandir(sessions), key=lambda e: e.name):
            if entry.is_file(follow_symlinks=False) and is_transcript(entry.name):
                sid = entry.name.split(".jsonl")[0].split("-topic-")[0]
                scan.feed_file(agent_dir.name, Path(entry.path), sid in synthetic)
    hits = scan.hits()
    now = args.now if args.now is not None else time.time()
    since = None if args.days is None else now - args.days * 86400
    files, never = [], []
    for rel in memory_files(args.workspace):
        times = hits.get(rel, [])
        if not times:
            never.append(rel)
            continue
        n = sum(1 for t in times if since is None or t >= since)
        files.append({"path": rel, "hits": n, "last_hit": iso(max(times))})
    files.sort(key=lambda f: (-f["hits"], f["path"]))
    doc = {"window_days": args.days, "files": files, "never_hit": never}
    elapsed = time.perf_counter() - started
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        for f in files[:20]:
            print(f"{f['hits']:>5}  {f['path']}")
        print(
            f"{scan.files} files, {scan.bytes / 1e6:.1f} MB, {scan.lines} lines "
            f"({scan.malformed} malformed), {sum(len(t) for t in hits.values())} hits, "
            f"{len(never)} never hit, {elapsed:.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
