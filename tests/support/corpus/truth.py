"""The reference counts: what a correct counter must report, decided while writing.

The writers call :meth:`Reference.record` for every memory result they put in a file;
nothing here reads a file back. The counting contract it follows: one hit per (agent,
call id, memory file); the hit time is the time of the line that carries the result;
results in cron sessions, in decoy files and of dreaming queries do not count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

DAY = 86_400.0


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


class Reference:
    """The hits a generator decided to write, and the tally of everything it wrote."""

    def __init__(self) -> None:
        self.hits: dict[str, list[float]] = {}
        self.stats: Counter[str] = Counter()

    def record(self, role: str, dreaming: bool, paths: Iterable[str], ms: int) -> None:
        """A result line naming ``paths`` was written at ``ms`` in a file of ``role``.

        ``role`` is ``"counted"`` (a transcript whose results count), ``"cron"`` (read,
        not counted) or ``"decoy"`` (a file that must not be read at all).
        """
        paths = list(paths)
        if role != "counted":
            self.stats[f"hits_not_counted_{role}"] += len(paths)
            return
        if dreaming:
            self.stats["hits_not_counted_dreaming"] += len(paths)
            return
        for rel in paths:
            self.hits.setdefault(rel, []).append(ms / 1000.0)

    def sorted_hits(self) -> dict[str, tuple[float, ...]]:
        return {k: tuple(sorted(v)) for k, v in sorted(self.hits.items())}
