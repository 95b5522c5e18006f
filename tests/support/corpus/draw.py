"""The corpus's one source of randomness: ids, prose and tool output drawn from one seed.

Every random choice of a corpus goes through one ``random.Random(seed)``, in the order
the writers make them: the same seed gives the same bytes. The prose and the bulk tool
output are drawn once, up front, and sliced from afterwards.
"""

from __future__ import annotations

import random
import uuid

WORDS = [
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
    # (not "recipe": a procedure word for promote, it made nearly every generated note a
    # "skill"; a word of the same length keeps every generated corpus's sizes the same)
    "ribbon",
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


class Draw:
    """Random ids, text and tool output, all from ``random.Random(seed)``."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self._sentences = self._make_sentences()
        self._bulk = self._make_bulk()

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def entry_id(self) -> str:
        return f"{self.rng.getrandbits(32):08x}"

    def tool_id(self, block: str) -> str:
        """A tool call id in the style of the API that names blocks ``block``."""
        if block.lower() == "functioncall":
            return f"call_{self.rng.getrandbits(96):024x}"
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return "toolu_01" + "".join(self.rng.choices(alphabet, k=22))

    def _make_sentences(self) -> list[str]:
        rng = self.rng
        out = []
        for _ in range(1500):
            words = rng.choices(WORDS, k=rng.randint(6, 22))
            out.append(" ".join(words).capitalize() + rng.choice(".?!."))
        out.extend(_CHINESE * 20)
        return out

    def text(self, lo: int, hi: int) -> str:
        """Prose of ``lo``..``hi`` characters (whole sentences, so a little more)."""
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
                    f"[{rng.randint(100, 99999)}]: {' '.join(rng.choices(WORDS, k=9))} "
                    f"in {rng.randint(1, 900)}ms\n"
                )
            elif kind == 1:
                name = rng.choice(WORDS)
                line = (
                    f"def {name}_{rng.randint(1, 99)}(value, *, limit={rng.randint(1, 64)}):\n"
                    f'    """{" ".join(rng.choices(WORDS, k=7))}."""\n'
                    f"    return [x for x in value if x < limit]  # {rng.choice(WORDS)}\n\n"
                )
            elif kind == 2:
                line = (
                    f"-rw-r--r--  1 alice  staff  {rng.randint(10, 999999):>7} "
                    f"Feb {rng.randint(1, 28):>2} {rng.randint(0, 23):02d}:"
                    f"{rng.randint(0, 59):02d} {rng.choice(WORDS)}_{rng.randint(1, 999)}."
                    f"{rng.choice(('py', 'ts', 'md', 'json'))}\n"
                )
            else:
                line = (
                    f"<p>{' '.join(rng.choices(WORDS, k=rng.randint(10, 40)))}</p>\n"
                    if rng.random() < 0.5
                    else f'{{"id": {rng.randint(1, 9999)}, "name": "{rng.choice(WORDS)}", '
                    f'"ok": {rng.choice(("true", "false"))}}}\n'
                )
            chunks.append(line)
            size += len(line)
        return "".join(chunks)

    def output(self, n: int) -> str:
        bulk = self._bulk
        if n <= len(bulk) // 2:
            start = self.rng.randrange(len(bulk) - n)
            return bulk[start : start + n]
        return (bulk * (n // len(bulk) + 2))[self.rng.randrange(1000) :][:n]

    def output_size(self) -> int:
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
