"""The small install ``memoryd demo`` shows a newcomer, and its tier store.

Kept apart from the generator's modules so the preset and the demo notes are easy to
find; :func:`generate_demo` is :func:`.sessions.generate` with :data:`DEMO`.
"""

from __future__ import annotations

import os
from pathlib import Path

from .sessions import generate
from .truth import CorpusTruth

# Eight months of sessions, a memory call every 4 KB of transcript: `simulate` needs 30 days
# of hits before a replayed monthly run and 60 after it, so this span gives it four runs to
# replay (90 days gave none), and enough hits that its tables say something.
DEMO = {
    "seed": 7,
    "sessions": 12,
    "target_bytes": 400_000,
    "span_days": 240,
    "call_every_bytes": 4_000,
}


def generate_demo(root: Path, *, now: float, size_mb: int | None = None) -> CorpusTruth:
    """The small preset ``memoryd demo`` shows a newcomer: 12 sessions, about 400 KB, over
    eight months (long enough for ``memoryd simulate`` to replay several runs).

    ``size_mb`` (``memoryd demo --size N``): a heavy user's year instead, about N MB of
    transcripts in 6 sessions per 10 MB (the shape of the 1 GB, 600-transcript install
    issue 32 measured), as memory-heavy as the small one.
    """
    if size_mb is None:
        return generate(
            root,
            now=now,
            seed=DEMO["seed"],
            sessions=DEMO["sessions"],
            target_bytes=DEMO["target_bytes"],
            span_days=DEMO["span_days"],
            call_every_bytes=DEMO["call_every_bytes"],
        )
    return generate(
        root,
        now=now,
        seed=DEMO["seed"],
        sessions=max(12, size_mb * 6 // 10),
        target_bytes=size_mb << 20,
        span_days=365,
        call_every_bytes=DEMO["call_every_bytes"],
    )


# (tier, file name, age in hours, text). Ages are picked so that a first `organize` has
# something of each kind to do (see DEMO_TIER_PLAN), and every note has a word of its own
# for `recall` to find.
DEMO_NOTES: tuple[tuple[str, str, float, str], ...] = (
    (
        "hot",
        "deploy-checklist.md",
        1.0,
        "# Deploy checklist\n\nBefore Friday's release: freeze the main branch at 14:00, run the "
        "smoke tests against staging, and post the changelog in #releases.\n\n## Rollback\n"
        "Keep the previous container tag; `kubectl rollout undo` takes about two minutes.\n",
    ),
    (
        "hot",
        "boat-trip.md",
        5.0,
        "# Boat trip with Mia\n\nSaturday 9:30 at the harbour. Mia brings the life jackets; "
        "I bring sandwiches and the waterproof bag. Forecast says wind 3 Bft.\n",
    ),
    (
        "warm",
        "api-rate-limits.md",
        2 * 24.0,
        "# API rate limits\n\nThe payments API allows 100 requests per minute per key; above "
        "that it answers 429 with a Retry-After header. Batch the nightly sync in pages of 50.\n",
    ),
    (
        "warm",
        "db-migration.md",
        9 * 24.0,
        "# 数据库迁移计划\n\n我们决定把数据库迁移到新的服务器。"
        "迁移安排在周六晚上，预计停机一小时。\n\n"
        "## 风险\n数据库主从切换可能丢失几秒写入，所以先停掉写入服务。\n\n"
        "## 回滚\n保留旧服务器一周，出问题就把域名切回去。\n",
    ),
    (
        "warm",
        "kafka-upgrade.md",
        12 * 24.0,
        "# Kafka upgrade\n\nUpgrade the cluster from 3.6 to 3.8 one broker at a time; check "
        "under-replicated partitions are zero before the next one.\n\n## Clients\n"
        "The Java clients need 3.7 or later for the new consumer protocol.\n",
    ),
    (
        "gist",
        "kafka-upgrade.md",
        11 * 24.0,
        "# Kafka upgrade\n标签: kafka, broker, upgrade, clients\n"
        "Upgrade the cluster from 3.6 to 3.8 one broker at a time.\n"
        "- Clients: The Java clients need 3.7 or later for the new consumer protocol.\n",
    ),
    (
        "warm",
        "vendor-evaluation.md",
        20 * 24.0,
        "# Vendor evaluation: log storage\n\nCompared three hosted log stores. Cheapest at our "
        "volume (40 GB/day) was the one with 14-day retention; we postponed the decision.\n",
    ),
    (
        "gist",
        "vendor-evaluation.md",
        13 * 24.0,
        "# Vendor evaluation: log storage\n标签: vendor, log, retention\n"
        "Compared three hosted log stores.\n",
    ),
    (
        "forgotten",
        "printer-setup.md",
        40 * 24.0,
        "# Office printer\n\nThe printer on floor 2 needs the driver from the vendor site; "
        "IP 10.0.4.17, queue name floor2-color.\n",
    ),
)

# What a first `organize` on the demo store does, note by note (checked by the tests).
DEMO_TIER_PLAN = {
    "boat-trip.md": "hot/ → warm/ (older than 3 hours)",
    "db-migration.md": "gist copy (older than 7 days)",
    "vendor-evaluation.md": "warm/ and gist/ → forgotten/ (not retrieved for 14 days)",
}


def generate_demo_tiers(tiers_root: Path, *, now: float) -> list[str]:
    """A small tier store (hot / warm / gist / forgotten notes of several ages) for the demo.

    Returns the files written, root-relative. Each file's mtime is its age before
    ``now``: organize layers by mtime, and a note never retrieved counts from its
    oldest file.
    """
    written = []
    for tier, name, age_hours, text in DEMO_NOTES:
        path = tiers_root / tier / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        when = now - age_hours * 3600.0
        os.utime(path, (when, when))
        written.append(f"{tier}/{name}")
    return written
