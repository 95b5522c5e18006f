"""A generated OpenClaw state folder for ``memoryd explain``: a workspace of notes and a state
database of memory calls drawn from a seed, some spelled in another case, some for deleted
notes, some in the allowed clock skew and beyond.

``test_explain_one_file`` and ``test_explain_pruned`` explain the same workspaces.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from memoryd.signals import CLOCK_SKEW
from memoryd.store import Store

DAY = 86400.0
NOW = 1_793_700_000.0  # 2026-11-03


def build(root: Path, seed: int, files: int = 40, calls: int = 900) -> tuple[Path, list[str]]:
    """An OpenClaw state folder whose workspace has ``files`` notes and a state database
    with ``calls`` generated memory calls; the listed names."""
    rng = random.Random(seed)
    state = root / "oc"
    ws = state / "workspace"
    (ws / "memory" / "projects").mkdir(parents=True)
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# long-term\n")
    rels = ["MEMORY.md"]
    for i in range(files - 1):
        rel = (
            f"memory/2026-{1 + i % 10:02d}-{1 + i % 27:02d}.md"
            if i % 3
            else (f"memory/projects/topic-{i:03d}.md")
        )
        if rel in rels:
            rel = f"memory/note-{i:03d}.md"
        p = ws / rel
        p.write_text(f"# note {i}\ntags: #t{i % 4}\n" + "words q3 q7 " * rng.randint(1, 40))
        t = NOW - rng.uniform(0, 300) * DAY
        os.utime(p, (t, t))
        rels.append(rel)
    weights = [rng.paretovariate(1.2) for _ in rels]

    def spelled(rel: str) -> str:
        """Mostly the name; sometimes another case of it (a Mac folds it back), or a
        deleted note."""
        x = rng.random()
        if x < 0.08:
            return rel[:7] + rel[7:].swapcase()
        if x < 0.1:
            return f"memory/gone-{rng.randrange(5)}.md"
        return rel

    rows = []
    for n in range(calls):
        ts = NOW - rng.expovariate(1 / 50) * DAY
        if rng.random() < 0.03:
            ts = NOW + rng.uniform(0, 2 * CLOCK_SKEW)  # within the allowance, or beyond
        session = rng.choice(["s1", "s2", "s3", None])
        agent = rng.choice(["main", "main", "ops"])
        if rng.random() < 0.6:
            hits = rng.choices(rels, weights=weights, k=rng.randint(1, 6))
            unknown = rng.random() < 0.2
            query = rng.choice([f"q{rng.randrange(12)}", f"  Q{rng.randrange(3)} ", "", None])
            seen: set[str] = set()
            for rel in hits:
                path = spelled(rel)
                if path in seen:
                    continue
                seen.add(path)
                score = None if unknown and rng.random() < 0.5 else round(rng.random(), 2)
                rows.append((agent, f"c{n}", path, "search", ts, query, score, session))
                if rng.random() < 0.3:  # read afterwards in the same session (or not)
                    later = ts + rng.uniform(0, 3 * DAY)
                    rows.append((agent, f"g{n}-{len(rows)}", path, "get", later, None, None,
                                 rng.choice([session, "s9"])))  # fmt: skip
        else:
            rel = rng.choices(rels, weights=weights)[0]
            rows.append((agent, f"c{n}", spelled(rel), "get", ts, None, None, session))
    with Store.open(state / "memoryd" / "state.db") as store, store.transaction():
        store.conn.executemany(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query, score, session) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        store.set_mark(rels[5][:7] + rels[5][7:].upper(), "marked")  # given in another case
        store.set_mark(rels[6], "pinned")
    return state, rels
