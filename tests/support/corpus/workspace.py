"""The workspace builder: the agent's memory notes, their popularity, and the files around them.

Memory files are ``MEMORY.md`` and ``memory/**/*.md``: a long-term file that dominates,
dated daily logs (each exists from its day on), topic notes, nested project notes, a
large import that a 600 KB ``memory_get`` reads, dreaming summaries; about 40 % are never
hit. Around them: workspace files that are not memory files, ``.dreams`` state, a
symlink. Each note's mtime is set from the corpus's own timeline.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from .draw import WORDS, Draw
from .truth import DAY

SPAN_DAYS = 90  # the corpus covers this many days before `now`

TOPICS = (
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

NESTED = (
    ("memory/projects/memoryd.md", "memoryd project", "memory daemon hit tracker"),
    ("memory/projects/garden-irrigation.md", "Garden irrigation", "valve schedule sensor"),
    ("memory/projects/homelab/backups.md", "Homelab backups", "restic nightly backup"),
    ("memory/imports/chatgpt/2025-11-export.md", "ChatGPT export", "old conversations export"),
)


@dataclass
class MemFile:
    """One memory note: where it is, what it says, how often it is searched for."""

    rel: str
    title: str
    words: str
    weight: float
    content: str
    mtime: float
    born: float  # before this time the note did not exist: no hit can name it


class Workspace:
    """The notes of ``path``, written by :meth:`build`; :meth:`pick` draws one by popularity."""

    def __init__(self, path: Path, draw: Draw, now: float, span_days: int = SPAN_DAYS):
        self.path = path
        self.draw = draw
        self.rng = draw.rng
        self.now = now
        self.span_days = span_days
        self.files: list[MemFile] = []
        self.never_hit: list[MemFile] = []

    def pick(self, at_ms: int) -> MemFile:
        """A memory file by popularity, among those that existed at ``at_ms``."""
        alive = [mf for mf in self.files if mf.weight > 0 and mf.born * 1000 <= at_ms]
        if not alive:
            return self.files[0]  # MEMORY.md
        return self.rng.choices(alive, weights=[mf.weight for mf in alive], k=1)[0]

    def note(self, title: str, words: str, sections: int) -> str:
        """A markdown note: sections of bullet points, now and then a line of its own words."""
        out = [f"# {title}", ""]
        for _ in range(sections):
            out.append(f"## {self.rng.choice(WORDS).capitalize()} {self.rng.choice(WORDS)}")
            for _ in range(self.rng.randint(2, 6)):
                out.append(f"- {self.draw.text(30, 160)}")
            if self.rng.random() < 0.3:
                out.append(f"- related: {words}")
            out.append("")
        return "\n".join(out)

    def build(self, stats: Counter[str]) -> None:
        """Write the notes and the files around them; tally them in ``stats``."""
        rng = self.rng
        ws = self.path
        (ws / "memory").mkdir(parents=True, exist_ok=True)
        start_day = self.now - self.span_days * DAY
        files: list[MemFile] = []

        def add(
            rel: str,
            title: str,
            words: str,
            weight: float,
            sections: int,
            mtime: float,
            born: float = start_day - 60 * DAY,  # topic notes predate the corpus
        ) -> None:
            content = self.note(title, words, sections)
            files.append(MemFile(rel, title, words, weight, content, mtime, born))

        add(
            "MEMORY.md",
            "Long-term memory",
            "preferences decisions people",
            30.0,
            14,
            self.now - 2 * DAY,
        )
        days = sorted(rng.sample(range(self.span_days), k=min(self.span_days, 58)))
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
        for slug, title, words in TOPICS:
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
        for rel, title, words in NESTED:
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
        self.files = files
        for mf in files:
            p = ws / mf.rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(mf.content + "\n", encoding="utf-8")
            os.utime(p, (mf.mtime, mf.mtime))

        # Files around the memory files that are not memory files (USER.md is one: OpenClaw
        # searches it as memory, and memoryd counts it).
        for name in ("AGENTS.md", "SOUL.md", "IDENTITY.md", "TOOLS.md", "HEARTBEAT.md"):
            (ws / name).write_text(
                self.note(name[:-3].title(), "workspace", 2) + "\n", encoding="utf-8"
            )
        (ws / "memory" / "notes.txt").write_text(
            "plain text, not a memory file\n", encoding="utf-8"
        )
        dreams = ws / "memory" / ".dreams"
        dreams.mkdir(exist_ok=True)
        (dreams / "short-term-recall.json").write_text(
            orjson.dumps(
                {"version": 1, "entries": {files[1].rel: {"recalls": 3}}},
                option=orjson.OPT_INDENT_2,
            ).decode(),
            encoding="utf-8",
        )
        (dreams / "events.jsonl").write_text(
            orjson.dumps({"type": "memory.recall.recorded", "path": files[1].rel}).decode() + "\n",
            encoding="utf-8",
        )
        link = ws / "memory" / "shortcut.md"
        if not link.is_symlink():
            with contextlib.suppress(OSError):  # no symlinks here: nothing to test then
                link.symlink_to(Path("..") / "AGENTS.md")
        stats["memory_files"] = len(files)

    # -- planning ------------------------------------------------------------------
