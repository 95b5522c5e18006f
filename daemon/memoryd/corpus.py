"""A seeded generator of realistic OpenClaw state directories, with the hits they must yield.

memoryd's counts are only as good as the tests that check them, and a test is only as
good as its input. This module writes what an OpenClaw install looks like after three
months of use (transcripts in every dialect listed in openclaw-formats.md §2–4, decoys
everywhere a careless reader would count, a workspace of notes) and returns the
independent reference: the hits the generator *decided* to write, computed from its
own decisions and never by reading the files back.

The counting contract the reference follows: one hit per (agent, call id, memory
file); the hit time is the time of the line that carries the result (the line's ISO
``timestamp`` or the message's millisecond ``timestamp``, which the generator keeps
within the same second); memory files are ``MEMORY.md``, ``memory.md`` and
``memory/**/*.md`` inside the workspace; dreaming queries (``__dreaming_…``) and cron
sessions (``cron:<jobId>`` in ``sessions.json``) do not count.

Used by ``memoryd demo`` (the small preset), the ground-truth tests and ``bench/``.
Same arguments, same bytes: everything random comes from one ``random.Random(seed)``.
"""

from __future__ import annotations

import contextlib
import os
import random
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

DAY = 86_400.0
SPAN_DAYS = 90  # the corpus covers this many days before `now`
WINDOW_GUARD_S = 600.0  # no line lands this close to `now - 30 days`: window edges stay unambiguous
BIG_LINE_BYTES = 640_000  # "single lines of 660 KB seen"
CALL_EVERY_BYTES = 40_000  # about 2,500 memory calls in 100 MB of transcripts
DEMO = {"seed": 7, "sessions": 12, "target_bytes": 400_000}


# ---------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Transcript:
    """One transcript file memoryd must read, and the name it had while it was written.

    ``written_as`` differs from ``path`` for files OpenClaw renamed after writing them
    (``.jsonl.reset.<ts>``, ``.jsonl.deleted.<ts>``): a replay writes the live name line
    by line, then renames, as OpenClaw does.
    """

    agent: str
    path: Path
    written_as: Path
    lines: int
    size: int


@dataclass(frozen=True)
class CorpusTruth:
    """What a correct counter must report for a generated corpus.

    ``hits`` maps each hit memory file (workspace-relative POSIX path) to its sorted hit
    times in epoch seconds; files never hit are absent from it but present in
    ``memory_files``. ``transcripts`` lists the files to read in the order they were
    written (a parent before its successor); ``ignored`` the decoy files that must not
    be read. ``stats`` counts every variant and decoy written, so a test can check the
    corpus really contains what it claims.
    """

    state_dir: Path
    workspace: Path
    now: float
    memory_files: frozenset[str]
    hits: dict[str, tuple[float, ...]]
    transcripts: tuple[Transcript, ...]
    ignored: tuple[Path, ...]
    stats: dict[str, int] = field(default_factory=dict)

    def counts(self, window_days: float | None = None) -> dict[str, int]:
        """Hits per memory file (every file, zeros included), all time or in the last N days."""
        since = None if window_days is None else self.now - window_days * DAY
        return {
            path: sum(1 for t in self.hits.get(path, ()) if since is None or t >= since)
            for path in sorted(self.memory_files)
        }

    def last_hit(self, path: str) -> float | None:
        times = self.hits.get(path)
        return times[-1] if times else None

    @property
    def total_hits(self) -> int:
        return sum(len(t) for t in self.hits.values())

    @property
    def transcript_bytes(self) -> int:
        return sum(t.size for t in self.transcripts)


# ---------------------------------------------------------------------------- vocabulary

_WORDS = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "it",
    "that",
    "for",
    "on",
    "with",
    "as",
    "was",
    "at",
    "by",
    "this",
    "be",
    "from",
    "or",
    "have",
    "an",
    "are",
    "not",
    "but",
    "they",
    "which",
    "you",
    "one",
    "all",
    "were",
    "we",
    "when",
    "there",
    "can",
    "more",
    "if",
    "out",
    "so",
    "what",
    "up",
    "about",
    "into",
    "than",
    "them",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "then",
    "do",
    "first",
    "any",
    "my",
    "now",
    "such",
    "like",
    "our",
    "over",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "also",
    "did",
    "many",
    "before",
    "must",
    "through",
    "back",
    "years",
    "where",
    "much",
    "your",
    "way",
    "well",
    "down",
    "should",
    "because",
    "each",
    "just",
    "those",
    "people",
    "how",
    "too",
    "little",
    "state",
    "good",
    "very",
    "make",
    "world",
    "still",
    "own",
    "see",
    "men",
    "work",
    "long",
    "get",
    "here",
    "between",
    "both",
    "life",
    "being",
    "under",
    "never",
    "day",
    "same",
    "another",
    "know",
    "while",
    "last",
    "might",
    "us",
    "great",
    "old",
    "year",
    "off",
    "come",
    "since",
    "against",
    "go",
    "came",
    "right",
    "used",
    "take",
    "three",
    "router",
    "espresso",
    "grinder",
    "boat",
    "trip",
    "deploy",
    "server",
    "config",
    "backup",
    "garden",
    "sensor",
    "battery",
    "invoice",
    "meeting",
    "draft",
    "review",
    "branch",
    "commit",
    "release",
    "docker",
    "kernel",
    "latency",
    "cache",
    "token",
    "budget",
    "schedule",
    "flight",
    "hotel",
    "museum",
    "recipe",
    "dentist",
    "keyboard",
    "monitor",
    "laptop",
    "tailscale",
    "syncthing",
    "nginx",
    "postgres",
    "sqlite",
    "cron",
    "weekly",
    "daily",
    "notes",
    "summary",
    "decision",
    "follow-up",
    "todo",
    "blocked",
    "done",
    "shipped",
    "tested",
]

_CHINESE = (
    "今天把路由器的設定備份了一次，順便更新了韌體。",
    "週末要去看展覽，記得先訂票。",
    "咖啡豆換成了衣索比亞的淺焙，研磨度調細兩格。",
    "和客戶開會確認了下一季的交付時程。",
    "記憶清理的腳本需要加上保護門檻。",
    "這個問題上次遇過，解法寫在筆記裡。",
)

_TOPICS = (
    ("espresso-notes", "Espresso notes", "espresso recipe grinder ratio"),
    ("acp-setup", "ACP setup", "acp agent client protocol setup"),
    ("home-network", "Home network", "router tailscale dns firewall"),
    ("reading-list", "Reading list", "books to read next"),
    ("people", "People", "birthday contact preferences"),
    ("travel-japan", "Travel: Japan", "kyoto hotel rail pass"),
    ("health", "Health", "dentist appointment vitamin"),
    ("finances", "Finances", "invoice tax budget"),
    ("garden", "Garden", "irrigation tomatoes sensor"),
    ("car", "Car", "service tyres insurance"),
)

_NESTED = (
    ("memory/projects/memoryd.md", "memoryd project", "memory daemon hit tracker"),
    ("memory/projects/garden-irrigation.md", "Garden irrigation", "valve schedule sensor"),
    ("memory/projects/homelab/backups.md", "Homelab backups", "restic nightly backup"),
    ("memory/imports/chatgpt/2025-11-export.md", "ChatGPT export", "old conversations export"),
)

_QUERIES = (
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

_OTHER_TOOLS = ("exec", "read", "write", "edit", "web_search", "web_fetch", "process", "browser")
_MODELS = ("claude-opus-4-6", "claude-sonnet-4-6", "gpt-5.2")

# Variant dimensions of one memory call: (options, weights). Option 0 is the common form.
_DIMS: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {
    "tool": (("search", "get"), (70, 30)),
    "block": (
        ("toolCall", "toolUse", "functionCall", "tool_use", "tool_call", "ToolCall", "TOOL_USE"),
        (80, 4, 3, 6, 3, 2, 2),
    ),
    "name": (("plain", "mcp__openclaw__", "mcp_openclaw_"), (90, 6, 4)),
    "args": (("arguments", "input"), (85, 15)),
    "call_id": (("id", "toolCallId", "toolUseId", "tool_call_id", "tool_use_id"), (84, 4, 4, 4, 4)),
    "call_wrap": (("wrapped", "bare"), (92, 8)),
    "result": (("message", "bare", "tool_result_block", "toolResult_block"), (80, 7, 9, 4)),
    "result_id": (("toolCallId", "tool_call_id", "toolUseId"), (90, 5, 5)),
    "payload": (("full", "details_truncated", "content_only", "cut"), (45, 33, 14, 8)),
    "outcome": (("normal", "disabled", "empty", "unanswered", "error"), (89, 3, 3, 3, 2)),
    "numbers": (("numbers", "strings"), (88, 12)),
    "keys": (("camel", "snake"), (92, 8)),
    "path_style": (("plain", "dot", "backslash", "dot_backslash"), (86, 6, 6, 2)),
    "msg_ts": (("present", "absent"), (85, 15)),
    "synthetic": (("user", "dreaming"), (96, 4)),
}
_FORCE_COVERAGE_FROM = 60  # with at least this many calls, every option of every dimension occurs


@dataclass
class _Spec:
    """The dialect of one memory call, chosen before any byte is written."""

    tool: str
    block: str
    name: str
    args: str
    call_id: str
    call_wrap: str
    result: str
    result_id: str
    payload: str
    outcome: str
    numbers: str
    keys: str
    path_style: str
    msg_ts: str
    synthetic: str
    big: bool = False  # a memory_get whose line is 600 KB+


@dataclass
class _MemFile:
    rel: str
    title: str
    words: str
    weight: float
    content: str
    mtime: float
    born: float  # before this time the note did not exist: no hit can name it


@dataclass
class _Pending:
    """An answered call whose result line is still to be written (maybe in a successor)."""

    spec: _Spec
    call_id: str
    name: str
    payload_text: str
    details: dict[str, Any] | None
    hit_paths: list[str]


class _File:
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
        self.pending: list[_Pending] = []

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


def _file_ts(ms: int) -> str:
    """The timestamp in renamed-file suffixes and successor names (no colons)."""
    return iso_ms(ms).replace(":", "-")


def _dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def _pretty(obj: Any) -> str:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode()


# ---------------------------------------------------------------------------- generator


class _Generator:
    def __init__(
        self,
        root: Path,
        seed: int,
        sessions: int,
        target_bytes: int,
        now: float,
        agents: tuple,
        call_every_bytes: int = 0,
    ):
        if sessions < 1 or target_bytes < 1:
            raise ValueError("sessions and target_bytes must be positive")
        if not agents:
            raise ValueError("at least one agent")
        self.root = root
        self.rng = random.Random(seed)
        self.seed = seed
        self.n_sessions = sessions
        self.target = target_bytes
        self.call_every = call_every_bytes or CALL_EVERY_BYTES
        self.now = now
        self.now_ms = int(now * 1000)
        self.agents = tuple(agents)
        self.state_dir = root / "state"
        self.workspace = root / "workspace"
        edge = int((now - 30 * DAY) * 1000)
        self.guard = (edge - int(WINDOW_GUARD_S * 1000), edge + int(WINDOW_GUARD_S * 1000))
        self.hits: dict[str, list[float]] = {}
        self.stats: Counter[str] = Counter()
        self.memfiles: list[_MemFile] = []
        self.never_hit: list[_MemFile] = []
        self.transcripts: list[Transcript] = []
        self.ignored: list[Path] = []
        self.index: dict[str, dict[str, dict[str, Any]]] = {a: {} for a in self.agents}
        self._end_ms: dict[Path, int] = {}
        self._multi_block_done = False
        self._sentences = self._make_sentences()
        self._bulk = self._make_bulk()

    # -- random helpers ------------------------------------------------------------

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _entry_id(self) -> str:
        return f"{self.rng.getrandbits(32):08x}"

    def _tool_id(self, block: str) -> str:
        if block.lower() == "functioncall":
            return f"call_{self.rng.getrandbits(96):024x}"
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return "toolu_01" + "".join(self.rng.choices(alphabet, k=22))

    def _make_sentences(self) -> list[str]:
        rng = self.rng
        out = []
        for _ in range(1500):
            words = rng.choices(_WORDS, k=rng.randint(6, 22))
            out.append(" ".join(words).capitalize() + rng.choice(".?!."))
        out.extend(_CHINESE * 20)
        return out

    def _text(self, lo: int, hi: int) -> str:
        target = self.rng.randint(lo, hi)
        parts: list[str] = []
        n = 0
        while n < target:
            s = self.rng.choice(self._sentences)
            parts.append(s)
            n += len(s) + 1
        return " ".join(parts)

    def _make_bulk(self) -> str:
        """About 1 MiB of tool output (logs, code, listings) that outputs are sliced from."""
        rng = self.rng
        chunks: list[str] = []
        size = 0
        while size < 1 << 20:
            kind = rng.randrange(4)
            if kind == 0:
                line = (
                    f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 28)}T{rng.randint(10, 23)}:"
                    f"{rng.randint(10, 59)}:{rng.randint(10, 59)}Z "
                    f"{rng.choice(('INFO', 'DEBUG', 'WARN', 'ERROR'))} "
                    f"{rng.choice(('worker', 'http', 'db', 'sync', 'gateway'))}"
                    f"[{rng.randint(100, 99999)}]: {' '.join(rng.choices(_WORDS, k=9))} "
                    f"in {rng.randint(1, 900)}ms\n"
                )
            elif kind == 1:
                name = rng.choice(_WORDS)
                line = (
                    f"def {name}_{rng.randint(1, 99)}(value, *, limit={rng.randint(1, 64)}):\n"
                    f'    """{" ".join(rng.choices(_WORDS, k=7))}."""\n'
                    f"    return [x for x in value if x < limit]  # {rng.choice(_WORDS)}\n\n"
                )
            elif kind == 2:
                line = (
                    f"-rw-r--r--  1 alice  staff  {rng.randint(10, 999999):>7} "
                    f"Feb {rng.randint(1, 28):>2} {rng.randint(0, 23):02d}:"
                    f"{rng.randint(0, 59):02d} {rng.choice(_WORDS)}_{rng.randint(1, 999)}."
                    f"{rng.choice(('py', 'ts', 'md', 'json'))}\n"
                )
            else:
                line = (
                    f"<p>{' '.join(rng.choices(_WORDS, k=rng.randint(10, 40)))}</p>\n"
                    if rng.random() < 0.5
                    else f'{{"id": {rng.randint(1, 9999)}, "name": "{rng.choice(_WORDS)}", '
                    f'"ok": {rng.choice(("true", "false"))}}}\n'
                )
            chunks.append(line)
            size += len(line)
        return "".join(chunks)

    def _output(self, n: int) -> str:
        bulk = self._bulk
        if n <= len(bulk) // 2:
            start = self.rng.randrange(len(bulk) - n)
            return bulk[start : start + n]
        return (bulk * (n // len(bulk) + 2))[self.rng.randrange(1000) :][:n]

    def _output_size(self) -> int:
        """Tool output sizes: mostly small, a few large reads and logs carry most bytes."""
        r = self.rng.random()
        if r < 0.70:
            return self.rng.randint(100, 1_500)
        if r < 0.92:
            return self.rng.randint(1_500, 8_000)
        if r < 0.98:
            return self.rng.randint(8_000, 40_000)
        if r < 0.997:
            return self.rng.randint(40_000, 150_000)
        return self.rng.randint(150_000, 400_000)

    def _tick(self, f: _File, lo_s: float, hi_s: float) -> int:
        """Advance a file's clock; never into the window-edge guard, never past now - 60 s."""
        ms = f.ms + int(self.rng.uniform(lo_s, hi_s) * 1000) + 1
        if self.guard[0] <= ms < self.guard[1]:
            ms = self.guard[1] + self.rng.randint(1000, 60_000)
        ms = min(ms, self.now_ms - 60_000)
        if ms % 1000 < 20:  # keep room so a message timestamp a few ms earlier is the same second
            ms += 20
        f.ms = max(ms, f.ms + 1)
        return f.ms

    # -- the workspace -------------------------------------------------------------

    def _note(self, title: str, words: str, sections: int) -> str:
        out = [f"# {title}", ""]
        for _ in range(sections):
            out.append(f"## {self.rng.choice(_WORDS).capitalize()} {self.rng.choice(_WORDS)}")
            for _ in range(self.rng.randint(2, 6)):
                out.append(f"- {self._text(30, 160)}")
            if self.rng.random() < 0.3:
                out.append(f"- related: {words}")
            out.append("")
        return "\n".join(out)

    def _build_workspace(self) -> None:
        rng = self.rng
        ws = self.workspace
        (ws / "memory").mkdir(parents=True, exist_ok=True)
        start_day = self.now - SPAN_DAYS * DAY
        files: list[_MemFile] = []

        def add(
            rel: str,
            title: str,
            words: str,
            weight: float,
            sections: int,
            mtime: float,
            born: float = start_day - 60 * DAY,  # topic notes predate the corpus
        ) -> None:
            content = self._note(title, words, sections)
            files.append(_MemFile(rel, title, words, weight, content, mtime, born))

        add(
            "MEMORY.md",
            "Long-term memory",
            "preferences decisions people",
            30.0,
            14,
            self.now - 2 * DAY,
        )
        days = sorted(rng.sample(range(SPAN_DAYS), k=min(SPAN_DAYS, 58)))
        for d in days:
            day = datetime.fromtimestamp(start_day + d * DAY, UTC).strftime("%Y-%m-%d")
            add(
                f"memory/{day}.md",
                day,
                "daily log",
                0.0,
                rng.randint(2, 6),
                start_day + (d + 0.9) * DAY,
                born=start_day + d * DAY,
            )
        for slug, title, words in _TOPICS:
            add(
                f"memory/{slug}.md",
                title,
                words,
                0.0,
                rng.randint(3, 8),
                start_day + rng.uniform(0, 80) * DAY,
            )
        for d in rng.sample(days, k=4):
            day = datetime.fromtimestamp(start_day + d * DAY, UTC).strftime("%Y-%m-%d")
            slug = rng.choice(("boat-trip", "vendor-call", "move-planning", "tax-prep"))
            add(
                f"memory/{day}-{slug}.md",
                f"{day} {slug}",
                slug.replace("-", " "),
                0.0,
                3,
                start_day + (d + 1) * DAY,
                born=start_day + d * DAY,
            )
        for rel, title, words in _NESTED:
            add(
                rel,
                title,
                words,
                0.0,
                30 if "imports" in rel else 5,
                start_day + rng.uniform(0, 60) * DAY,
            )
        for d in days[-2:]:
            day = datetime.fromtimestamp(start_day + d * DAY, UTC).strftime("%Y-%m-%d")
            add(
                f"memory/dreaming/deep/{day}.md",
                f"Deep dreaming {day}",
                "dreaming summary",
                0.0,
                2,
                start_day + (d + 1) * DAY,
                born=start_day + (d + 0.95) * DAY,
            )

        # Popularity: MEMORY.md dominates, a few favourites, a long tail, ~40 % never hit.
        rest = files[1:]
        rng.shuffle(rest)
        n_never = int(len(rest) * 0.42)
        for i, mf in enumerate(rest):
            if i < n_never:
                mf.weight = 0.0
                self.never_hit.append(mf)
            elif i < n_never + 3:
                mf.weight = 10.0
            else:
                mf.weight = rng.choice((0.5, 1.0, 1.0, 2.0, 4.0))
        # The big import always exists and is hit by the 600 KB memory_get line.
        big = next(mf for mf in files if "imports" in mf.rel)
        if big.weight == 0.0:
            big.weight = 0.5
            self.never_hit.remove(big)
        self.memfiles = files
        for mf in files:
            p = ws / mf.rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(mf.content + "\n", encoding="utf-8")
            os.utime(p, (mf.mtime, mf.mtime))

        # Files around the memory files that are not memory files.
        for name in ("AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "HEARTBEAT.md"):
            (ws / name).write_text(
                self._note(name[:-3].title(), "workspace", 2) + "\n", encoding="utf-8"
            )
        (ws / "memory" / "notes.txt").write_text(
            "plain text, not a memory file\n", encoding="utf-8"
        )
        dreams = ws / "memory" / ".dreams"
        dreams.mkdir(exist_ok=True)
        (dreams / "short-term-recall.json").write_text(
            _pretty({"version": 1, "entries": {files[1].rel: {"recalls": 3}}}), encoding="utf-8"
        )
        (dreams / "events.jsonl").write_text(
            _dumps({"type": "memory.recall.recorded", "path": files[1].rel}).decode() + "\n",
            encoding="utf-8",
        )
        link = ws / "memory" / "shortcut.md"
        if not link.is_symlink():
            with contextlib.suppress(OSError):  # no symlinks here: nothing to test then
                link.symlink_to(Path("..") / "AGENTS.md")
        self.stats["memory_files"] = len(files)

    # -- planning ------------------------------------------------------------------

    def _plan_specs(self, n: int) -> list[_Spec]:
        rng = self.rng
        columns: dict[str, list[str]] = {}
        for dim, (options, weights) in _DIMS.items():
            col: list[str] = []
            if n >= _FORCE_COVERAGE_FROM:
                col.extend(options[1:] * 2)
            col.extend(rng.choices(options, weights=weights, k=n - len(col)))
            rng.shuffle(col)
            columns[dim] = col
        specs = [_Spec(**{dim: columns[dim][i] for dim in _DIMS}) for i in range(n)]
        for sp in specs:  # a few combinations make no sense: resolve them
            if sp.outcome == "empty":
                sp.tool = "get"
            if sp.payload == "cut" and sp.tool == "get":
                sp.tool = "search"
                if sp.outcome == "empty":
                    sp.outcome = "normal"
            if sp.synthetic == "dreaming":
                sp.tool = "search"
                if sp.outcome == "empty":
                    sp.outcome = "normal"
        return specs

    def _session_kinds(self) -> list[str]:
        """One kind per transcript file: live, topic, reset, deleted, parent+successor, cron."""
        n = self.n_sessions
        kinds: list[str] = []
        if n >= 4:
            kinds.append("cron")
        pairs = max(1 if n >= 6 else 0, round(n * 0.05))
        for _ in range(pairs):
            kinds.extend(("parent", "successor"))
        for kind, share in (("reset", 0.12), ("deleted", 0.03), ("topic", 0.03)):
            kinds.extend([kind] * max(1 if n >= 8 else 0, round(n * share)))
        kinds = kinds[:n]
        kinds.extend(["live"] * (n - len(kinds)))
        return kinds

    # -- lines ---------------------------------------------------------------------

    def _wrap(self, f: _File, msg: dict[str, Any], ms: int) -> bytes:
        eid = self._entry_id()
        line = {
            "type": "message",
            "id": eid,
            "parentId": f.last_id,
            "timestamp": iso_ms(ms),
            "message": msg,
        }
        f.last_id = eid
        return _dumps(line)

    def _header(self, f: _File, sid: str, parent: str | None = None) -> None:
        version = self.rng.choice((3, 3, 3, 4, 2, None))
        head: dict[str, Any] = {"type": "session"}
        if version is not None:
            head["version"] = version
        head.update(id=sid, timestamp=iso_ms(f.ms), cwd=str(self.workspace))
        if parent:
            head["parentSession"] = parent
        f.add(_dumps(head))
        # Budgets ignore the root's path, so a seed gives the same corpus wherever it is written.
        f.size -= len(str(self.workspace)) + len(parent or "")
        if self.rng.random() < 0.7:
            eid = self._entry_id()
            f.add(
                _dumps(
                    {
                        "type": "model_change",
                        "id": eid,
                        "parentId": None,
                        "timestamp": iso_ms(self._tick(f, 0.01, 0.2)),
                        "provider": "anthropic",
                        "modelId": self.rng.choice(_MODELS),
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
            "model": rng.choice(_MODELS),
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

    def _ordinary(self, f: _File, *, allow_big: bool, room: int = 1 << 30) -> None:
        """One turn of everyday traffic: text, thinking, other tools, and now and then a decoy."""
        rng = self.rng
        r = 1.0 if allow_big else rng.random()  # a big line is always a tool output
        if r < 0.15:
            ms = self._tick(f, 20, 600)
            text = self._text(20, 600)
            if rng.random() < 0.01:
                text += " Can you memory_search what we said about the router? memory/2026-01-05.md"
                self.stats["decoy_text"] += 1
            f.add(
                self._wrap(
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
            ms = self._tick(f, 2, 40)
            content: list[dict[str, Any]] = []
            if rng.random() < 0.4:
                content.append(
                    {
                        "type": "thinking",
                        "thinking": self._text(100, 1500),
                        "thinkingSignature": "sig",
                    }
                )
            content.append({"type": "text", "text": self._text(40, 1500)})
            f.add(
                self._wrap(
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
        tool = rng.choice(_OTHER_TOOLS)
        decoy = rng.random() < 0.03
        if allow_big:
            size = BIG_LINE_BYTES + rng.randint(0, 40_000)
        else:  # a session ends near its budget, not a 300 KB output past it
            size = min(self._output_size(), max(150, room - 1500))
        args, output = self._other_tool(tool, size, decoy)
        call_id = self._tool_id("toolCall")
        ms = self._tick(f, 1, 20)
        msg = {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": call_id, "name": tool, "arguments": args}],
            **self._assistant_meta(ms, "toolUse"),
        }
        f.add(self._wrap(f, msg, ms))
        ms = self._tick(f, 0.2, 30)
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
        f.add(self._wrap(f, res, ms))
        if allow_big:
            self.stats["big_line_other_tool"] += 1

    def _custom(self, f: _File) -> None:
        ms = self._tick(f, 0.1, 5)
        eid = self._entry_id()
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
        f.add(_dumps(line))

    def _other_tool(self, tool: str, size: int, decoy: bool) -> tuple[dict[str, Any], str]:
        """Arguments and output of a non-memory tool; decoys mention memory paths and tool names."""
        rng = self.rng
        mf = rng.choice(self.memfiles)
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
                {"query": self._text(10, 60)}
                if tool == "web_search"
                else {"url": "https://example.org/a"}
            )
        else:
            args = {"action": "poll", "sessionId": self._uuid()[:8]}
        output = self._output(size)
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
                "results": [self._search_result(mf, "plain", "numbers", "camel")],
                "provider": "openai",
            }
            output = _pretty(payload) + "\n" + output
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
                "toolCallId": self._tool_id("toolCall"),
                "toolName": "memory_search",
                "content": [
                    {
                        "type": "text",
                        "text": _pretty(
                            {"results": [{"path": rel, "score": 0.8, "source": "memory"}]}
                        ),
                    }
                ],
                "details": {"results": [{"path": rel, "score": 0.8, "source": "memory"}]},
                "isError": False,
            },
        }
        return _dumps(line).decode()

    # -- memory calls --------------------------------------------------------------

    def _pick_file(self, at_ms: int) -> _MemFile:
        """A memory file by popularity, among those that existed at ``at_ms``."""
        alive = [mf for mf in self.memfiles if mf.weight > 0 and mf.born * 1000 <= at_ms]
        if not alive:
            return self.memfiles[0]  # MEMORY.md
        return self.rng.choices(alive, weights=[mf.weight for mf in alive], k=1)[0]

    def _style(self, rel: str, style: str) -> str:
        if style == "dot":
            return "./" + rel
        if style == "backslash":
            return rel.replace("/", "\\")
        if style == "dot_backslash":
            return ".\\" + rel.replace("/", "\\")
        return rel

    def _num(self, value: float | int, numbers: str) -> Any:
        return str(value) if numbers == "strings" else value

    def _search_result(
        self, mf: _MemFile, style: str, numbers: str, keys: str, raw: str | None = None
    ) -> dict[str, Any]:
        rng = self.rng
        start = rng.randint(1, 60)
        lines = mf.content.count("\n") + 1
        start = min(start, lines)
        end = min(lines, start + rng.randint(2, 14))
        snippet_at = rng.randrange(max(1, len(mf.content) - 700))
        snippet = mf.content[snippet_at : snippet_at + rng.randint(160, 700)]
        sk, ek = ("start_line", "end_line") if keys == "snake" else ("startLine", "endLine")
        path = raw if raw is not None else self._style(mf.rel, style)
        res = {
            "path": path,
            sk: self._num(start, numbers),
            ek: self._num(end, numbers),
            "score": self._num(round(rng.uniform(0.35, 0.92), 4), numbers),
            "snippet": snippet,
            "source": "memory",
        }
        if rng.random() < 0.3:
            res["citation"] = f"{path}#L{start}-L{end}"
        return res

    def _search_payload(
        self, sp: _Spec, decoy_targets: bool, at_ms: int
    ) -> tuple[dict[str, Any], list[str]]:
        """Results of one search, and the memory files they name (dedup, in order)."""
        rng = self.rng
        results: list[dict[str, Any]] = []
        hit: list[str] = []
        for _ in range(rng.choices((1, 2, 3, 4, 5, 6), weights=(8, 12, 18, 22, 20, 20))[0]):
            mf = (
                rng.choice(self.never_hit or self.memfiles)
                if decoy_targets and rng.random() < 0.6
                else self._pick_file(at_ms)
            )
            results.append(self._search_result(mf, sp.path_style, sp.numbers, sp.keys))
            hit.append(mf.rel)
            if rng.random() < 0.08:  # another chunk of the same file
                results.append(self._search_result(mf, sp.path_style, sp.numbers, sp.keys))
                hit.append(mf.rel)
                self.stats["duplicate_chunk"] += 1
        if rng.random() < 0.1:
            sess = {
                "path": f"sessions/{self._uuid()}.jsonl",
                "startLine": rng.randint(1, 400),
                "endLine": rng.randint(401, 800),
                "score": round(rng.uniform(0.3, 0.8), 4),
                "snippet": self._text(60, 300),
                "source": "sessions",
            }
            results.insert(rng.randrange(len(results) + 1), sess)
            hit.insert(results.index(sess), "")
            self.stats["sessions_source_result"] += 1
        if rng.random() < 0.04:
            bad = rng.choice(
                ("../../etc/passwd", "/etc/passwd", "memory/../../x.md", "../notes/extra.md")
            )
            mf = rng.choice(self.memfiles)
            results.insert(
                rng.randrange(len(results) + 1),
                self._search_result(mf, "plain", sp.numbers, sp.keys, raw=bad),
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

    def _memory_call(self, f: _File, specs: list[_Spec], *, defer: bool = False) -> None:
        """One assistant message carrying the calls, then their results (or defer them)."""
        rng = self.rng
        ms = self._tick(f, 1, 25)
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
        pendings: list[_Pending] = []
        if len(specs) > 1 and f.role == "counted" and not self._multi_block_done:
            specs[0].result = "tool_result_block"  # at least once: several results in one message
            self._multi_block_done = True
        if specs[0].result.endswith("_block"):  # Claude style: one turn's results come together
            for sp in specs:
                sp.result = specs[0].result
        for sp in specs:
            base = "memory_search" if sp.tool == "search" else "memory_get"
            name = base if sp.name == "plain" else sp.name + base
            call_id = self._tool_id(sp.block)
            decoy_targets = f.role != "counted" or sp.synthetic == "dreaming"
            if sp.tool == "search":
                if sp.synthetic == "dreaming":
                    day = datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")
                    query = f"__dreaming_daily__:{day}:{rng.choice(_WORDS)}"
                else:
                    query = rng.choice(_QUERIES)
                args: dict[str, Any] = {
                    "query": query,
                    "maxResults": self._num(rng.choice((5, 6, 8)), sp.numbers),
                }
                if rng.random() < 0.3:
                    args["minScore"] = self._num(0.3, sp.numbers)
                payload, hit = self._search_payload(sp, decoy_targets, ms)
            else:
                args, payload, hit = self._get_payload(sp, decoy_targets, ms)
            block = {"type": sp.block, sp.call_id: call_id, "name": name, sp.args: args}
            blocks.append(block)
            text, details, hit = self._render_result(sp, payload, hit)
            sp.call_wrap = specs[0].call_wrap  # one message, one wrapping
            self.stats[f"{f.role}.call.{sp.tool}"] += 1
            if f.role == "counted":
                for dim in _DIMS:
                    self.stats[f"{dim}={getattr(sp, dim)}"] += 1
            if sp.outcome != "unanswered":
                pendings.append(_Pending(sp, call_id, name, text, details, hit))
        msg = {"role": "assistant", "content": blocks, **self._assistant_meta(ms, "toolUse")}
        if specs[0].call_wrap == "bare":
            msg["timestamp"] = ms
            f.add(_dumps(msg))
        else:
            f.add(self._wrap(f, msg, ms))
        if len(specs) > 1:
            self.stats["multi_call_message"] += 1
        if defer:
            f.pending.extend(pendings)
            return
        self._emit_results(f, pendings)

    def _get_payload(
        self, sp: _Spec, decoy_targets: bool, at_ms: int
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
            text = "root:x:0:0:root:/root:/bin/bash\n" if "passwd" in raw else self._text(50, 300)
            self.stats["hostile_path"] += 1
        else:
            mf = (
                rng.choice(self.never_hit or self.memfiles)
                if decoy_targets and rng.random() < 0.6
                else self._pick_file(at_ms)
            )
            if sp.big:
                mf = next(m for m in self.memfiles if "imports" in m.rel)
            raw, rel = self._style(mf.rel, sp.path_style), mf.rel
            if sp.big:
                text = (mf.content + "\n") * (BIG_LINE_BYTES // max(1, len(mf.content)) + 1)
                self.stats["big_line_memory_get"] += 1
            else:
                at = rng.randrange(max(1, len(mf.content) - 1200))
                text = mf.content[at : at + rng.randint(80, 1200)]
        args: dict[str, Any] = {"path": raw}
        if rng.random() < 0.4:
            args["from"] = self._num(rng.randint(1, 40), sp.numbers)
            args["lines"] = self._num(rng.choice((20, 40, 80)), sp.numbers)
        if sp.outcome == "empty":
            text = ""
        if rng.random() < 0.4:
            payload: dict[str, Any] = {"path": raw, "text": text}
        else:
            payload = {
                "text": text,
                "path": raw,
                "from": self._num(1, sp.numbers),
                "lines": self._num(text.count("\n") + 1, sp.numbers),
            }
            if rng.random() < 0.2:
                payload.update(truncated=True, nextFrom=self._num(81, sp.numbers))
        return args, payload, [rel]

    def _render_result(
        self, sp: _Spec, payload: dict[str, Any], hit: list[str]
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
            return _pretty(body), body, []
        if sp.outcome == "error":
            return "Error: embedding provider timed out after 30000ms", None, []
        if sp.outcome == "empty":
            return _pretty(payload), payload, []
        text = _pretty(payload)
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
            return text, details, _dedup(named)
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
        return text, details, _dedup(named)

    def _emit_results(self, f: _File, pendings: list[_Pending]) -> None:
        rng = self.rng
        if len(pendings) > 1 and rng.random() < 0.4:
            pendings = list(reversed(pendings))
        blocky = [p for p in pendings if p.spec.result.endswith("_block")]
        if len(blocky) > 1 and rng.random() < 0.8:
            # Several tool_result blocks in one user message: all hits share its time.
            ms = self._tick(f, 0.3, 6)
            blocks = [self._result_block(p) for p in blocky]
            msg: dict[str, Any] = {"role": "user", "content": blocks}
            if blocky[0].spec.msg_ts == "present":
                msg["timestamp"] = ms - rng.randint(0, 9)
            f.add(self._wrap(f, msg, ms))
            for p in blocky:
                self._record(f, p, ms)
            self.stats["multi_result_message"] += 1
            pendings = [p for p in pendings if p not in blocky]
        for p in pendings:
            ms = self._tick(f, 0.3, 6)
            sp = p.spec
            if sp.result.endswith("_block"):
                msg = {"role": "user", "content": [self._result_block(p)]}
                if sp.msg_ts == "present":
                    msg["timestamp"] = ms - rng.randint(0, 9)
                f.add(self._wrap(f, msg, ms))
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
                    f.add(_dumps(res))
                else:
                    if sp.msg_ts == "present":
                        res["timestamp"] = ms - rng.randint(0, 9)
                    f.add(self._wrap(f, res, ms))
            self._record(f, p, ms)

    def _result_block(self, p: _Pending) -> dict[str, Any]:
        sp = p.spec
        if sp.result == "tool_result_block":
            content: Any = (
                p.payload_text
                if self.rng.random() < 0.5
                else [{"type": "text", "text": p.payload_text}]
            )
            block = {"type": "tool_result", "tool_use_id": p.call_id, "content": content}
            if sp.outcome == "error":
                block["is_error"] = True
            return block
        block = {
            "type": "toolResult",
            sp.result_id: p.call_id,
            "toolName": p.name,
            "content": [{"type": "text", "text": p.payload_text}],
        }
        block["isError"] = sp.outcome == "error"
        return block

    def _record(self, f: _File, p: _Pending, ms: int) -> None:
        """The reference: the files this result names count once each, at this line's time."""
        if f.role != "counted":
            self.stats[f"hits_not_counted_{f.role}"] += len(p.hit_paths)
            return
        if p.spec.synthetic == "dreaming":
            self.stats["hits_not_counted_dreaming"] += len(p.hit_paths)
            return
        for rel in p.hit_paths:
            self.hits.setdefault(rel, []).append(ms / 1000.0)

    # -- sessions ------------------------------------------------------------------

    def _fill(
        self,
        f: _File,
        budget: int,
        specs: list[_Spec],
        *,
        end_pending: bool = False,
        big: bool = False,
    ) -> None:
        """Ordinary traffic up to ``budget`` bytes with the planned memory calls spread through it.

        ``end_pending``: the last call closes the file unanswered; its result goes to the
        successor. ``big``: one other-tool result line of 600 KB+ in the middle.
        """
        rng = self.rng
        queue = list(specs)
        n = len(queue)
        marks = sorted(rng.uniform(0.02, 0.98) * budget for _ in range(n))
        if end_pending and marks:
            marks[-1] = float(budget)
        big_at = budget * 0.4 if big else None
        while f.size < budget or queue or big_at is not None:
            if big_at is not None and f.size >= big_at:
                big_at = None
                self._ordinary(f, allow_big=True)
                continue
            if queue and f.size >= marks[n - len(queue)]:
                k = 1
                if len(queue) > 1 and rng.random() < 0.12:
                    k = rng.randint(2, min(3, len(queue)))
                group = [queue.pop(0) for _ in range(k)]
                defer = end_pending and not queue
                self._memory_call(f, group, defer=defer)
                if rng.random() < 0.02 and not defer:
                    self._reappend(f)
                continue
            self._ordinary(f, allow_big=False, room=budget - f.size)

    def _reappend(self, f: _File) -> None:
        """Tool-result truncation re-branches: earlier entries re-appended verbatim (same ids)."""
        tail = f.lines[-2:]
        for line in tail:
            f.add(line)
        self.stats["reappended_copy"] += 1

    def _write(self, f: _File, *, rename_to: Path | None = None) -> None:
        data = f.data()
        f.path.parent.mkdir(parents=True, exist_ok=True)
        final = rename_to or f.path
        final.write_bytes(data)
        t = f.ms / 1000
        os.utime(final, (t, t))
        self.transcripts.append(Transcript(f.agent, final, f.path, len(f.lines), len(data)))
        self._end_ms[final] = f.ms

    def _sessions_dir(self, agent: str) -> Path:
        return self.state_dir / "agents" / agent / "sessions"

    def _decoy_file(self, path: Path, agent: str, copy_from: _File | None = None) -> None:
        """A file memoryd must not read, holding memory results it would count if it did."""
        start_ms = copy_from.ms if copy_from else int((self.now - 20 * DAY) * 1000)
        f = _File(path, agent, start_ms, crlf=False, role="decoy")
        if copy_from is not None:
            f.lines.extend(copy_from.lines[: max(1, len(copy_from.lines) // 2)])
        else:
            self._header(f, self._uuid())
        plain = _Spec(
            "search",
            "toolCall",
            "plain",
            "arguments",
            "id",
            "wrapped",
            "message",
            "toolCallId",
            "full",
            "normal",
            "numbers",
            "camel",
            "plain",
            "present",
            "user",
        )
        for _ in range(2):
            self._ordinary(f, allow_big=False, room=0)
            self._memory_call(f, [plain])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f.data())
        self.ignored.append(path)
        self.stats["decoy_file"] += 1

    def run(self) -> CorpusTruth:
        rng = self.rng
        self._build_workspace()
        kinds = self._session_kinds()
        n = len(kinds)
        # Sizes: most sessions modest, a long tail, one outlier in big corpora.
        weights = [rng.lognormvariate(0, 1.0) for _ in range(n)]
        if n >= 50:
            weights[rng.randrange(n)] *= 8
        total_w = sum(weights)
        budgets = [max(1500, int(self.target * w / total_w)) for w in weights]
        big_corpus = self.target >= 3_000_000

        # Memory calls: about one per CALL_EVERY_BYTES, spread over the counted sessions by size.
        specs = self._plan_specs(max(len(_DIMS), round(self.target / self.call_every)))
        if big_corpus:  # 600 KB+ memory_get lines (real hits)
            for sp in specs[: max(1, self.target // 50_000_000)]:
                sp.tool, sp.outcome, sp.synthetic, sp.payload, sp.big = (
                    "get",
                    "normal",
                    "user",
                    "full",
                    True,
                )
        counted_idx = [i for i, k in enumerate(kinds) if k != "cron"]
        plain = [i for i in counted_idx if kinds[i] in ("live", "topic", "reset", "deleted")]
        biggest = max(plain or counted_idx, key=lambda i: budgets[i])  # holds the 600 KB lines
        per_session: list[list[_Spec]] = [[] for _ in range(n)]
        cw = [budgets[i] for i in counted_idx]
        for sp in specs:
            i = biggest if sp.big else rng.choices(counted_idx, weights=cw, k=1)[0]
            per_session[i].append(sp)
        for i, kind in enumerate(kinds):
            if kind == "cron":  # cron traffic: ordinary searches, never counted
                per_session[i] = self._plan_specs(3)
                for sp in per_session[i]:
                    sp.outcome, sp.synthetic = "normal", "user"
            elif kind == "parent":  # its last call is answered in the successor
                answered = self._plan_specs(1)[0]
                answered.outcome = "normal"
                per_session[i].append(answered)

        starts = sorted(
            rng.uniform(self.now - SPAN_DAYS * DAY, self.now - 1.2 * DAY) for _ in range(n)
        )
        order = list(range(n))
        rng.shuffle(order)
        successors = [i for i in order if kinds[i] == "successor"]
        agent_of = [
            self.agents[0]
            if len(self.agents) == 1 or rng.random() < 0.7
            else rng.choice(self.agents)
            for _ in range(n)
        ]
        oddities_done = crlf_done = False
        for slot, i in enumerate(order):
            kind = kinds[i]
            if kind == "successor":
                continue  # written right after its parent
            agent = agent_of[i]
            sdir = self._sessions_dir(agent)
            sid = self._uuid()
            crlf = kind in ("live", "topic", "reset") and (not crlf_done or rng.random() < 0.03)
            crlf_done = crlf_done or crlf
            name = f"{sid}-topic-{rng.randint(1, 9)}.jsonl" if kind == "topic" else f"{sid}.jsonl"
            role = "cron" if kind == "cron" else "counted"
            f = _File(sdir / name, agent, int(starts[slot] * 1000), crlf=crlf, role=role)
            if self.guard[0] <= f.ms < self.guard[1]:
                f.ms = self.guard[1] + 5000
            self._header(f, sid)
            big = big_corpus and (
                i == biggest or (budgets[i] >= 3 * BIG_LINE_BYTES and rng.random() < 0.3)
            )
            self._fill(f, budgets[i], per_session[i], end_pending=kind == "parent", big=big)
            if kind == "live" and not oddities_done:
                self._oddities(f)
                oddities_done = True
            if crlf:
                self.stats["crlf_file"] += 1
            rename: Path | None = None
            if kind in ("reset", "deleted"):
                when = _file_ts(f.ms + rng.randint(60_000, 7_200_000))
                rename = f.path.with_name(f"{f.path.name}.{kind}.{when}")
                self.stats[f"{kind}_file"] += 1
            elif kind == "cron":
                job = f"{rng.getrandbits(32):08x}"
                self._index(agent, f"cron:{job}", sid, f)
                self.stats["cron_session"] += 1
            elif kind == "topic":
                topic = name.split("-topic-")[1].removesuffix(".jsonl")
                group = rng.randint(10**9, 10**10)
                self._index(
                    agent, f"agent:{agent}:telegram:group:-100{group}:topic:{topic}", sid, f
                )
            else:
                key = f"agent:{agent}:main"
                if key in self.index[agent]:
                    key = f"agent:{agent}:telegram:direct:{rng.randint(10**8, 10**9)}"
                self._index(agent, key, sid, f)
            self._write(f, rename_to=rename)
            if kind == "parent":
                succ = successors.pop()
                self._successor(f, budgets[succ], per_session[succ])
                self._decoy_file(sdir / f"{sid}.checkpoint.{self._uuid()}.jsonl", agent, f)
        self._decoys()
        self._write_config()
        hits = {k: tuple(sorted(v)) for k, v in sorted(self.hits.items())}
        self.stats["hits"] = sum(len(v) for v in hits.values())
        self.stats["transcripts"] = len(self.transcripts)
        self.transcripts.sort(key=lambda t: (self._end_ms[t.path], str(t.path)))
        return CorpusTruth(
            state_dir=self.state_dir,
            workspace=self.workspace,
            now=self.now,
            memory_files=frozenset(mf.rel for mf in self.memfiles),
            hits=hits,
            transcripts=tuple(self.transcripts),
            ignored=tuple(self.ignored),
            stats=dict(sorted(self.stats.items())),
        )

    def _index(self, agent: str, key: str, sid: str, f: _File) -> None:
        self.index[agent][key] = {"sessionId": sid, "updatedAt": f.ms, "sessionFile": str(f.path)}

    def _oddities(self, f: _File) -> None:
        """A line cut by a crash, a line of NULs, a line that is not UTF-8: none of them a hit."""
        f.add(
            b'{"type":"message","id":"9f3a0c1d","parentId":null,"message":'
            b'{"role":"assistant","content":[{"type":"te'
        )
        f.add(b"\x00\x00\x00\x00\x00\x00")
        self.stats["garbage_line"] += 2
        self._ordinary(f, allow_big=False, room=0)
        ms = self._tick(f, 5, 60)
        msg = {"role": "user", "content": [{"type": "text", "text": "caf\u00e9 PLACEHOLDER"}]}
        line = self._wrap(f, {**msg, "timestamp": ms}, ms)
        f.add(line.replace(b"PLACEHOLDER", b"\xff\xfe latin-1 \xe9t\xe9"))
        self.stats["invalid_utf8_line"] += 1
        self._ordinary(f, allow_big=False, room=0)

    def _successor(self, parent: _File, budget: int, specs: list[_Spec]) -> None:
        """After compaction: a new file copying the parent's kept tail; pending results go here."""
        rng = self.rng
        sid = self._uuid()
        start = parent.ms + rng.randint(2_000, 60_000)
        path = parent.path.with_name(f"{_file_ts(start)}_{sid}.jsonl")
        f = _File(path, parent.agent, start, crlf=False, role=parent.role)
        self._header(f, sid, parent=str(parent.path))
        eid = self._entry_id()
        tail = parent.lines[-min(len(parent.lines) - 1, rng.randint(4, 12)) :]
        f.add(
            _dumps(
                {
                    "type": "compaction",
                    "id": eid,
                    "parentId": None,
                    "timestamp": iso_ms(self._tick(f, 0.1, 2)),
                    "summary": self._text(200, 800),
                    "firstKeptEntryId": self._entry_id(),
                    "tokensBefore": rng.randint(90_000, 180_000),
                }
            )
        )
        f.last_id = eid
        for line in tail:
            f.add(line)
        if parent.pending:
            self._emit_results(f, parent.pending)
            self.stats["successor_result"] += len(parent.pending)
            parent.pending = []
        self._fill(f, budget, specs)
        self._write(f)
        self.stats["successor_file"] += 1

    def _decoys(self) -> None:
        rng = self.rng
        for agent in self.agents:
            sdir = self._sessions_dir(agent)
            sdir.mkdir(parents=True, exist_ok=True)
            mine = [t for t in self.transcripts if t.agent == agent]
            base = mine[0].written_as.name.split(".jsonl")[0] if mine else self._uuid()
            pid, ms = rng.randint(1000, 99999), rng.randint(10**12, 2 * 10**12)
            when = _file_ts(int((self.now - 20 * DAY) * 1000))
            for name in (
                f"{base}.trajectory.jsonl",
                f"{base}.jsonl.lock",
                f"{base}.jsonl.bak-{pid}-{ms}",
                f"{base}.jsonl.deleted.{when}.zst",
                f"{base}.jsonl.repair-{rng.getrandbits(24):06x}.tmp",
                f"active-memory/{self._uuid()}.jsonl",
            ):
                self._decoy_file(sdir / name, agent)
            index_path = sdir / "sessions.json"
            index_path.write_bytes(orjson.dumps(self.index[agent], option=orjson.OPT_INDENT_2))
            self.ignored.append(index_path)

    def _write_config(self) -> None:
        ws = orjson.dumps(str(self.workspace)).decode()
        listed = ",\n".join(
            f'      {{ id: "{a}"{", default: true" if i == 0 else ""} }}'
            for i, a in enumerate(self.agents)
        )
        text = (
            f"// OpenClaw configuration (memoryd's corpus generator, seed {self.seed}).\n"
            "{\n"
            "  agents: {\n"
            "    defaults: {\n"
            f"      workspace: {ws},\n"
            '      model: { primary: "anthropic/claude-opus-4-6" },\n'
            '      memorySearch: { provider: "openai", sources: ["memory", "sessions"] },\n'
            "    },\n"
            "    list: [\n"
            f"{listed},\n"
            "    ],\n"
            "  },\n"
            '  channels: { telegram: { enabled: true, botToken: "000000:demo", }, },\n'
            "}\n"
        )
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "openclaw.json").write_text(text, encoding="utf-8")


def _dedup(paths: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(paths))


# ---------------------------------------------------------------------------- entry points


def generate(
    root: Path,
    *,
    seed: int,
    sessions: int,
    target_bytes: int,
    now: float,
    agents: tuple[str, ...] = ("main",),
    call_every_bytes: int = CALL_EVERY_BYTES,
) -> CorpusTruth:
    """Write an OpenClaw state dir (``root/state``) and workspace (``root/workspace``).

    ``sessions`` is the number of transcripts memoryd must read (live, topic, renamed,
    successor and cron files); ``target_bytes`` their approximate total size. Decoy
    files come on top. Returns the reference counts, computed from the generator's own
    decisions. ``call_every_bytes`` sets how much transcript there is per memory call
    (the default is everyday traffic; a few KB make a memory-heavy corpus).
    """
    return _Generator(
        Path(root), seed, sessions, target_bytes, now, tuple(agents), call_every_bytes
    ).run()


def generate_demo(root: Path, *, now: float) -> CorpusTruth:
    """The small preset ``memoryd demo`` shows a newcomer: 12 sessions, about 400 KB."""
    return generate(root, now=now, **DEMO)
