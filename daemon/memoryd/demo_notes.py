"""What the demo's notes say: its workspace's notes and prose, and its small tier store.

Kept apart from :mod:`memoryd.demo_install`, which writes them in OpenClaw's formats, so the
texts are easy to find and to change. The tier store (hot, warm, gist and forgotten notes of
several ages, docs/tier-store.md) gives a first ``organize`` something of each kind to do,
and ``recall`` and ``inject`` something to find.
"""

from __future__ import annotations

import os
from pathlib import Path

# The topic and project notes. Their wording picks promote's category on purpose
# (policy/promote.py): procedures (numbered steps, a code block, shell prompts), preferences
# and standing facts, and notes only a person can judge. The prose around them has no cue.
TOPIC_NOTES = {
    "memory/acp-setup.md": "# ACP setup\n\n1. Start the gateway with the ACP bridge on.\n"
    "2. Pair the editor with the code the gateway log prints.\n3. Make `main` the agent "
    "for new threads.\n4. Try a one-line prompt before a long task.\n",
    "memory/home-network.md": "# Home network\n\nThe router hands out 192.168.8.0/24; the "
    "NAS and the printer have fixed leases.\n\n```\ntailscale up --advertise-exit-node\n```\n",
    "memory/projects/homelab/backups.md": "# Homelab backups\n\nRestic runs nightly at 02:30 "
    "to the NAS, weekly to the cloud bucket.\n\n$ restic -r sftp:nas:/backups snapshots\n",
    "memory/espresso-notes.md": "# Espresso notes\n\nI prefer the light Ethiopian roast, "
    "18 g in and 40 g out in 28 seconds; the darker beans go to the moka pot.\n",
    "memory/people.md": "# People\n\nMia prefers calls after six and likes dark chocolate. "
    "Jonas has his birthday in March and is allergic to nuts.\n",
    "memory/health.md": "# Health\n\n- Dentist: Dr. Weber, every six months\n- Next checkup:"
    " 12 February\n- Vitamin D: 1000 IU in winter\n- Blood type: A+\n",
    "memory/car.md": "# Car\n\n- Service: every 15,000 km\n- Tyres: 205/55 R16, the winter "
    "set in the garage\n- Insurance renewal: 1 October\n",
    "memory/travel-japan.md": "# Travel: Japan\n\nKyoto first, then Osaka. The hotel near "
    "the station is booked for four nights; the rail pass is still open.\n",
    "memory/reading-list.md": "# Reading list\n\nThe novel Mia lent me, then the book on "
    "distributed systems from the team's shelf.\n",
    "memory/finances.md": "# Finances\n\nThe October invoice went out late; the tax papers "
    "for the flat are in the blue folder.\n",
    "memory/garden.md": "# Garden\n\nTomatoes on the south side this year, the sensor by the "
    "shed reads too dry after rain.\n",
    "memory/projects/memoryd.md": "# memoryd project\n\nA daemon that counts which notes the "
    "agent looks up, and archives the ones nobody reads. Open question: the monthly run.\n",
    "memory/projects/garden-irrigation.md": "# Garden irrigation\n\nThe valve schedule moved "
    "to the evening; the second zone still leaks at the joint.\n",
    "memory/imports/chatgpt/2025-11-export.md": "# ChatGPT export\n\nOld conversations, "
    "exported in November before the account was closed.\n",
}
KEEP_WHOLE = ("memory/health.md", "memory/car.md")  # short key: value notes; no prose added
# Found by most searches: a procedure, a preference, a note to judge (promote's three kinds).
FAVOURITES = ("memory/acp-setup.md", "memory/espresso-notes.md", "memory/projects/memoryd.md")
# Needed rarely but surely: written early on, not looked up since, so expire would archive them
# (the README's step 3 marks them to keep them).
RARELY = ("memory/people.md", "memory/health.md")
MEMORY_SECTIONS = (
    "Preferences", "People", "Work", "Home", "Travel", "Health", "Money", "Projects", "Tools",
    "Decisions", "Routines", "Devices", "Open questions", "Garden",
)  # fmt: skip
DAY_SECTIONS = ("Morning", "Work", "Errands", "Calls", "Evening", "Follow-up")
EVENTS = ("boat-trip", "vendor-call", "move-planning", "tax-prep")
WHO = ("We", "Mia", "The client", "Jonas", "The team", "I")
DID = (
    "moved the standup to", "booked", "reviewed", "sent the invoice for", "fixed", "ordered",
    "postponed", "checked", "cleaned up", "backed up", "renewed", "tested", "drafted", "paid",
)  # fmt: skip
WHAT = (
    "the Kyoto hotel", "the router firmware", "the garden valves", "the quarterly report",
    "the grinder burrs", "the NAS disks", "the dentist visit", "the car service",
    "the release notes", "the tax papers", "the boat trip", "the staging server",
    "the nginx certificates", "the postgres upgrade", "the flight to Lisbon",
)  # fmt: skip
WHEN = ("on Monday", "after lunch", "for next week", "this morning", "before the trip", "again")
CHINESE = (
    "周末去看了展览，下次提前订票。", "和客户开会确认了下一季的交付时间。",
    "咖啡豆换成了埃塞俄比亚的浅焙。", "这个问题上次遇过，解法写在笔记里。",
)  # fmt: skip
QUERIES = (
    "boat trip decision", "espresso ratio for the new beans", "what did we decide about the "
    "router", "tailscale exit node", "dentist appointment", "acp setup", "invoice for october",
    "kyoto hotel booking", "backup schedule homelab", "garden irrigation valve", "birthday "
    "gift ideas", "memoryd design decisions", "咖啡 浅焙", "deploy checklist",
)  # fmt: skip

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


def write_tier_store(tiers_root: Path, *, now: float) -> list[str]:
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
