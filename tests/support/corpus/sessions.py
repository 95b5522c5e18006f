"""The session planner: which transcripts an install holds, how big, and in what order.

:func:`generate` writes what an OpenClaw install looks like after three months of use:
live, topic, reset, deleted, compacted (parent + successor) and cron transcripts for
each agent, ``sessions.json`` indexes, the decoy files OpenClaw leaves beside them
(trajectories, locks, backups, checkpoints, temporary repairs, a deleted session's
``.zst`` archive), and ``openclaw.json``. The workspace comes from :mod:`.workspace`,
the lines from :mod:`.openclaw_jsonl`, the answer from :mod:`.truth`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from .dialects import DIMS, Spec, plain_spec, plan_specs
from .draw import Draw
from .openclaw_jsonl import OpenClawWriter, TranscriptFile, dumps, file_ts, iso_ms, zstd_frame
from .payloads import BIG_LINE_BYTES, Payloads
from .truth import DAY, CorpusTruth, Reference, Transcript
from .workspace import SPAN_DAYS, Workspace

CALL_EVERY_BYTES = 40_000  # about 2,500 memory calls in 100 MB of transcripts


class _Planner:
    """One corpus being written: the plan of its sessions, and the files they end up in."""

    def __init__(
        self,
        root: Path,
        seed: int,
        sessions: int,
        target_bytes: int,
        now: float,
        agents: tuple,
        call_every_bytes: int = 0,
        span_days: int = SPAN_DAYS,
    ):
        if sessions < 1 or target_bytes < 1:
            raise ValueError("sessions and target_bytes must be positive")
        if not agents:
            raise ValueError("at least one agent")
        self.root = root
        self.seed = seed
        self.n_sessions = sessions
        self.target = target_bytes
        self.call_every = call_every_bytes or CALL_EVERY_BYTES
        self.now = now
        self.span_days = span_days
        self.agents = tuple(agents)
        self.state_dir = root / "state"
        self.workspace = root / "workspace"
        self.transcripts: list[Transcript] = []
        self.ignored: list[Path] = []
        self.index: dict[str, dict[str, dict[str, Any]]] = {a: {} for a in self.agents}
        self._end_ms: dict[Path, int] = {}
        self._live: dict[str, Transcript] = {}  # per agent, its first live transcript
        self.draw = Draw(seed)
        self.rng = self.draw.rng
        self.ref = Reference()
        self.stats = self.ref.stats
        self.ws = Workspace(self.workspace, self.draw, now, span_days)
        self.writer = OpenClawWriter(
            self.draw, self.ws, Payloads(self.draw, self.ws, self.stats), self.ref, now
        )

    def _fill(
        self,
        f: TranscriptFile,
        budget: int,
        specs: list[Spec],
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
                self.writer.ordinary(f, allow_big=True)
                continue
            if queue and f.size >= marks[n - len(queue)]:
                k = 1
                if len(queue) > 1 and rng.random() < 0.12:
                    k = rng.randint(2, min(3, len(queue)))
                group = [queue.pop(0) for _ in range(k)]
                defer = end_pending and not queue
                self.writer.memory_call(f, group, defer=defer)
                if rng.random() < 0.02 and not defer:
                    self._reappend(f)
                continue
            self.writer.ordinary(f, allow_big=False, room=budget - f.size)

    def _reappend(self, f: TranscriptFile) -> None:
        """Tool-result truncation re-branches: earlier entries re-appended verbatim (same ids)."""
        tail = f.lines[-2:]
        for line in tail:
            f.add(line)
        self.stats["reappended_copy"] += 1

    def _write(self, f: TranscriptFile, *, rename_to: Path | None = None) -> None:
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

    def _decoy_file(self, path: Path, agent: str, copy_from: TranscriptFile | None = None) -> None:
        """A file memoryd must not read, holding memory results it would count if it did."""
        start_ms = copy_from.ms if copy_from else int((self.now - 20 * DAY) * 1000)
        f = TranscriptFile(path, agent, start_ms, crlf=False, role="decoy")
        if copy_from is not None:
            f.lines.extend(copy_from.lines[: max(1, len(copy_from.lines) // 2)])
        else:
            self.writer.header(f, self.draw.uuid())
        plain = plain_spec()
        for _ in range(2):
            self.writer.ordinary(f, allow_big=False, room=0)
            self.writer.memory_call(f, [plain])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f.data())
        self.ignored.append(path)
        self.stats["decoy_file"] += 1

    def run(self) -> CorpusTruth:
        rng = self.rng
        self.ws.build(self.stats)
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
        specs = plan_specs(rng, max(len(DIMS), round(self.target / self.call_every)))
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
        per_session: list[list[Spec]] = [[] for _ in range(n)]
        cw = [budgets[i] for i in counted_idx]
        for sp in specs:
            i = biggest if sp.big else rng.choices(counted_idx, weights=cw, k=1)[0]
            per_session[i].append(sp)
        for i, kind in enumerate(kinds):
            if kind == "cron":  # cron traffic: ordinary searches, never counted
                per_session[i] = plan_specs(rng, 3)
                for sp in per_session[i]:
                    sp.outcome, sp.synthetic = "normal", "user"
            elif kind == "parent":  # its last call is answered in the successor
                answered = plan_specs(rng, 1)[0]
                answered.outcome = "normal"
                per_session[i].append(answered)

        starts = sorted(
            rng.uniform(self.now - self.span_days * DAY, self.now - 1.2 * DAY) for _ in range(n)
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
            sid = self.draw.uuid()
            crlf = kind in ("live", "topic", "reset") and (not crlf_done or rng.random() < 0.03)
            crlf_done = crlf_done or crlf
            name = f"{sid}-topic-{rng.randint(1, 9)}.jsonl" if kind == "topic" else f"{sid}.jsonl"
            role = "cron" if kind == "cron" else "counted"
            f = TranscriptFile(sdir / name, agent, int(starts[slot] * 1000), crlf=crlf, role=role)
            if self.writer.guard[0] <= f.ms < self.writer.guard[1]:
                f.ms = self.writer.guard[1] + 5000
            self.writer.header(f, sid)
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
                when = file_ts(f.ms + rng.randint(60_000, 7_200_000))
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
            if kind == "live":
                self._live.setdefault(agent, self.transcripts[-1])
            if kind == "parent":
                succ = successors.pop()
                self._successor(f, budgets[succ], per_session[succ])
                self._decoy_file(sdir / f"{sid}.checkpoint.{self.draw.uuid()}.jsonl", agent, f)
        self._decoys()
        self._write_config()
        hits = self.ref.sorted_hits()
        self.stats["hits"] = sum(len(v) for v in hits.values())
        self.stats["transcripts"] = len(self.transcripts)
        self.transcripts.sort(key=lambda t: (self._end_ms[t.path], str(t.path)))
        return CorpusTruth(
            state_dir=self.state_dir,
            workspace=self.workspace,
            now=self.now,
            memory_files=frozenset(mf.rel for mf in self.ws.files),
            hits=hits,
            transcripts=tuple(self.transcripts),
            ignored=tuple(self.ignored),
            stats=dict(sorted(self.stats.items())),
        )

    def _index(self, agent: str, key: str, sid: str, f: TranscriptFile) -> None:
        self.index[agent][key] = {"sessionId": sid, "updatedAt": f.ms, "sessionFile": str(f.path)}

    def _oddities(self, f: TranscriptFile) -> None:
        """A line cut by a crash, a line of NULs, a line that is not UTF-8: none of them a hit."""
        f.add(
            b'{"type":"message","id":"9f3a0c1d","parentId":null,"message":'
            b'{"role":"assistant","content":[{"type":"te'
        )
        f.add(b"\x00\x00\x00\x00\x00\x00")
        self.stats["garbage_line"] += 2
        self.writer.ordinary(f, allow_big=False, room=0)
        ms = self.writer.tick(f, 5, 60)
        msg = {"role": "user", "content": [{"type": "text", "text": "caf\u00e9 PLACEHOLDER"}]}
        line = self.writer.wrap(f, {**msg, "timestamp": ms}, ms)
        f.add(line.replace(b"PLACEHOLDER", b"\xff\xfe latin-1 \xe9t\xe9"))
        self.stats["invalid_utf8_line"] += 1
        self.writer.ordinary(f, allow_big=False, room=0)

    def _successor(self, parent: TranscriptFile, budget: int, specs: list[Spec]) -> None:
        """After compaction: a new file copying the parent's kept tail; pending results go here."""
        rng = self.rng
        sid = self.draw.uuid()
        start = parent.ms + rng.randint(2_000, 60_000)
        path = parent.path.with_name(f"{file_ts(start)}_{sid}.jsonl")
        f = TranscriptFile(path, parent.agent, start, crlf=False, role=parent.role)
        self.writer.header(f, sid, parent=str(parent.path))
        eid = self.draw.entry_id()
        tail = parent.lines[-min(len(parent.lines) - 1, rng.randint(4, 12)) :]
        f.add(
            dumps(
                {
                    "type": "compaction",
                    "id": eid,
                    "parentId": None,
                    "timestamp": iso_ms(self.writer.tick(f, 0.1, 2)),
                    "summary": self.draw.text(200, 800),
                    "firstKeptEntryId": self.draw.entry_id(),
                    "tokensBefore": rng.randint(90_000, 180_000),
                }
            )
        )
        f.last_id = eid
        for line in tail:
            f.add(line)
        if parent.pending:
            self.writer.emit_results(f, parent.pending)
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
            base = mine[0].written_as.name.split(".jsonl")[0] if mine else self.draw.uuid()
            pid, ms = rng.randint(1000, 99999), rng.randint(10**12, 2 * 10**12)
            for name in (
                f"{base}.trajectory.jsonl",
                f"{base}.jsonl.lock",
                f"{base}.jsonl.bak-{pid}-{ms}",
                f"{base}.jsonl.repair-{rng.getrandbits(24):06x}.tmp",
                f"active-memory/{self.draw.uuid()}.jsonl",
            ):
                self._decoy_file(sdir / name, agent)
            if agent in self._live:
                self._deleted_archive(self._live[agent])
            index_path = sdir / "sessions.json"
            index_path.write_bytes(orjson.dumps(self.index[agent], option=orjson.OPT_INDENT_2))
            self.ignored.append(index_path)

    def _deleted_archive(self, live: Transcript) -> None:
        """A ``<session>.jsonl.deleted.<ts>.zst`` archive of a transcript that is still live.

        OpenClaw derives such a file (zstd, level 1, checksummed, the session's JSONL text)
        for a session deleted from its store. This session is still live as a file, so every
        hit in the archive is one the transcript already gives: a reader that follows
        archives must not count it twice.
        """
        deleted_ms = min(self._end_ms[live.path] + 60_000, int(self.now * 1000) - 1000)
        path = live.path.with_name(f"{live.path.name}.deleted.{file_ts(deleted_ms)}.zst")
        path.write_bytes(zstd_frame(live.path.read_bytes()))
        os.utime(path, (deleted_ms / 1000, deleted_ms / 1000))
        self.ignored.append(path)
        self.stats["deleted_archive"] += 1

    def _write_config(self) -> None:
        ws = orjson.dumps(str(self.workspace)).decode()
        # Every agent names the one workspace: OpenClaw gives an agent without a workspace of
        # its own `<agents.defaults.workspace>/<id>`, not the default agent's folder.
        listed = ",\n".join(
            f'      {{ id: "{a}"{", default: true" if i == 0 else ""}, workspace: {ws} }}'
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


def generate(
    root: Path,
    *,
    seed: int,
    sessions: int,
    target_bytes: int,
    now: float,
    agents: tuple[str, ...] = ("main",),
    call_every_bytes: int = CALL_EVERY_BYTES,
    span_days: int = SPAN_DAYS,
) -> CorpusTruth:
    """Write an OpenClaw state dir (``root/state``) and workspace (``root/workspace``).

    ``sessions`` is the number of transcripts memoryd must read (live, topic, renamed,
    successor and cron files); ``target_bytes`` their approximate total size. Decoy
    files come on top. Returns the reference counts, computed from the generator's own
    decisions. ``call_every_bytes`` sets how much transcript there is per memory call
    (the default is everyday traffic; a few KB make a memory-heavy corpus).
    ``span_days``: how far before ``now`` the sessions and dated notes reach.
    """
    return _Planner(
        Path(root), seed, sessions, target_bytes, now, tuple(agents), call_every_bytes, span_days
    ).run()
