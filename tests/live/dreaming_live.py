"""``python -m tests.live.dreaming_live``: memoryd's hits per section across a real OpenClaw
2026.9.6 dreaming sweep that rewrites MEMORY.md.

A real install (the live harness's, Tool Search off) with a MEMORY.md of 12 topics under the
10,000 characters dreaming writes into, and a daily note ``memory/YYYY-MM-DD.md`` (today, UTC)
whose one entry MEMORY.md's Okapi topic also has. Then:

1. searches in one session (``agent --local`` turns) that return different topics;
2. the daily entry recalled by ``openclaw memory search`` (which records the short-term recall
   dreaming ranks), and a full dreaming sweep: the gateway's own managed cron job ("Memory
   Dreaming Promotion", the one ``0 3 * * *`` fires) run by ``openclaw cron run --wait``,
   with low deep-phase thresholds in ``plugins.entries.memory-core.config.dreaming``. Its
   deep phase asks the model how to consolidate (the scripted model answers ``merged``: the
   candidate is the Okapi entry), and OpenClaw rewrites MEMORY.md: the old entry is taken out
   of the Okapi topic (every topic after it moves up a line) and a ``## Consolidated Memory
   (DATE)`` section with the promotion's ``<!-- … -->`` markers is appended;
3. searches in a second session, of topics the rewrite moved and of the new section;
4. a second daily note's entry (new to MEMORY.md), recalled, and promoted by ``openclaw memory
   promote --apply`` (the CLI's path: no consolidation model call, an append of ``## Promoted
   From Short-Term Memory (DATE)``), then searches in a third session.

memoryd then scans the install and ``memoryd sections MEMORY.md --json`` must give each
section exactly the hits the truth gives (each ``memory_search`` result on MEMORY.md the model
was sent, credited to the sections its ``startLine``..``endLine`` covered in the version of the
file its snippet came from), none unplaced. Takes a few minutes; ``record`` also packs the run
into ``tests/fixtures/openclaw-dreaming/2026.9.6/`` for tests/lifecycle/test_dreaming_record.py;
a folder checks a recording made before again.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tarfile
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .check import memoryd
from .install import ensure_openclaw
from .model_server import ScriptedModel
from .openclaw import (
    TURN_TIMEOUT_S,
    CommandFailed,
    Gateway,
    Install,
    agent_turn,
    run_bounded,
    write_notes,
)
from .record import search
from .sections_live import memoryd_sections, section_hits, tool_results, truth_hits

ANIMALS = ["wombat", "quokka", "narwhal", "pangolin", "okapi", "axolotl", "tapir", "kinkajou",
           "capybara", "ocelot", "dugong", "fossa"]
SHARED_FACT = "- okapi moved house to the east paddock by the creek"
NEW_FACT = "- capybara learned to swim across the north pond"
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "openclaw-dreaming" / "2026.9.6"
AFTER = "logs/MEMORY.after-dreaming.md"  # the file dreaming wrote, kept with the recording
AFTER_PROMOTE = "logs/MEMORY.after-promote.md"  # and what `memory promote --apply` wrote
DREAMING = {  # plugins.entries.memory-core.config.dreaming for the run
    "enabled": True,
    "timezone": "UTC",
    "verboseLogging": True,
    "phases": {
        "deep": {"minScore": 0, "minRecallCount": 1, "minUniqueQueries": 1, "limit": 5},
    },
}


def memory_md() -> str:
    """MEMORY.md before dreaming: 12 topics of 4 entries; the Okapi topic also holds the
    daily note's entry."""
    out = ["# Long-term memory", ""]
    for i, animal in enumerate(ANIMALS):
        out.append(f"## {animal.title()} notes")
        out += [f"- {animal} fact {j}: " + " ".join(f"w{i}x{j}y{k}" for k in range(12))
                for j in range(4)]
        if animal == "okapi":
            out.append(SHARED_FACT)
        out.append("")
    return "\n".join(out)


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def versions(work: Path) -> list[str]:
    """The MEMORY.md texts of a run: before dreaming, as dreaming wrote it, as promote did."""
    return [memory_md(), *((work / p).read_text(encoding="utf-8") for p in (AFTER, AFTER_PROMOTE))]


def pack(work: Path, dest: Path) -> None:
    """A recorded run as the suite replays it: OpenClaw's config and session store, the
    workspace (MEMORY.md as dreaming left it, DREAMS.md, the daily note), the model's request
    log, MEMORY.md as dreaming wrote it, and the folder it was recorded in."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest / "run.tar.xz", "w:xz", preset=9) as tar:
        picked = [work / "install" / "state" / "openclaw.json", work / "logs" / "requests.jsonl",
                  work / AFTER, work / AFTER_PROMOTE]
        for top in (work / "install" / "state" / "agents", work / "install" / "ws"):
            picked += sorted(p for p in top.rglob("*") if p.is_file() and not p.is_symlink()
                             and "/.dreams/" not in str(p))
        for path in picked:
            tar.add(path, arcname=str(path.relative_to(work)), recursive=False)
    (dest / "recorded.json").write_text(json.dumps({"recorded_root": str(work)}) + "\n")
    pack_cron(work / "install" / "state" / "state" / "openclaw.sqlite", dest / "cron.sqlite")


def pack_cron(db: Path, dest: Path) -> None:
    """The gateway's cron tables (``cron_jobs``, ``cron_run_receipts``) as the run left them,
    in OpenClaw's own schema: what says a dreaming sweep is running (the whole state database
    is 1.6 MB)."""
    dest.unlink(missing_ok=True)
    src = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out = sqlite3.connect(dest)
    with out:
        for table in ("cron_jobs", "cron_run_receipts"):
            (ddl,) = src.execute("SELECT sql FROM sqlite_master WHERE name = ?",
                                 (table,)).fetchone()
            out.execute(ddl)
            rows = src.execute(f"SELECT * FROM {table}").fetchall()
            if rows:
                marks = ",".join("?" * len(rows[0]))
                out.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    src.close()
    out.execute("VACUUM")
    out.close()


def cron_job_id(inst: Install, log: Path) -> str:
    """The id of memory-core's managed dreaming job, once the gateway has made it."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        proc = run_bounded(inst.command("cron", "list", "--all", "--json"), inst.env(), 120, log)
        try:
            doc: Any = json.loads(proc.stdout)
        except ValueError:
            doc = {}
        jobs = doc.get("jobs", doc) if isinstance(doc, dict) else doc
        for job in jobs if isinstance(jobs, list) else []:
            if isinstance(job, dict) and job.get("name") == "Memory Dreaming Promotion":
                return str(job["id"])
        time.sleep(3)
    raise CommandFailed(f"no managed dreaming job after 180 s: see {log}")


def dream(inst: Install, logs: Path) -> dict[str, Any]:
    """One full dreaming sweep, run by the gateway as its cron would; the run's JSON."""
    log = logs / "gateway.log"
    with Gateway(inst, log):
        job = cron_job_id(inst, logs / "cli.log")
        proc = run_bounded(inst.command("cron", "run", job, "--wait", "--wait-timeout", "8m",
                                        "--json"), inst.env(), 600, logs / "cli.log")
        try:
            out: dict[str, Any] = json.loads(proc.stdout)
        except ValueError:
            out = {"raw": proc.stdout[-2000:]}
        out["exit"] = proc.returncode
        time.sleep(5)  # the detached diary completion
    return out


def main(argv: list[str]) -> int:
    v1 = memory_md()
    if argv and argv[0] != "record":
        work = Path(argv[0])
        return analyze(work, versions(work))
    runtime = ensure_openclaw("2026.9.6")
    work = Path(tempfile.mkdtemp(prefix="memoryd-dreaming-live-"))
    logs = work / "logs"
    logs.mkdir()
    log = logs / "requests.jsonl"
    cli = logs / "cli.log"
    t0 = time.monotonic()
    with ScriptedModel(log) as model:
        inst = Install(work / "install", runtime, model.port, tool_search=False,
                       extra={"plugins": {"entries": {"memory-core": {
                           "config": {"dreaming": DREAMING}}}}})
        inst.create()
        ws = inst.workspace("main")
        for p in (ws / "memory").glob("*.md"):
            p.unlink()  # the harness's own notes: dreaming would rank them too
        write_notes(ws, {"MEMORY.md": v1, f"memory/{today()}.md": SHARED_FACT + "\n"})
        inst.write_config()

        def index() -> None:
            run_bounded(inst.command("memory", "index", "--agent", "main"), inst.env(),
                        TURN_TIMEOUT_S, cli)

        index()
        agent_turn(inst, "agent:main:d1", "before dreaming " + search("wombat fact") + " "
                   + search("tapir fact"), cli, local=True)
        agent_turn(inst, "agent:main:d1", "more " + search("fossa fact"), cli, local=True)
        run_bounded(inst.command("memory", "search", "okapi moved house east paddock",
                                 "--agent", "main", "--json"), inst.env(), TURN_TIMEOUT_S, cli)
        swept = dream(inst, logs)
        after = (ws / "MEMORY.md").read_text(encoding="utf-8")
        (work / AFTER).write_text(after, encoding="utf-8")
        print(f"dreaming: {json.dumps(swept)[:600]}", flush=True)
        if after == v1:
            print("FAIL: dreaming left MEMORY.md as it was: see", logs / "gateway.log")
            return 1
        index()
        agent_turn(inst, "agent:main:d2", "after dreaming " + search("tapir fact") + " "
                   + search("okapi moved house east paddock"), cli, local=True)
        agent_turn(inst, "agent:main:d2", "and " + search("fossa fact"), cli, local=True)
        # (a note of its own: a line added to the first daily note joins its chunk, whose
        # recall entry is the one promoted already)
        write_notes(ws, {f"memory/{today()}-pond.md": NEW_FACT + "\n"})
        index()
        # A process that exits while it records a recall leaves its lock row in OpenClaw's
        # state (namespace short-term-locks); for 60 s no other process takes it, and
        # `memory search` then drops its recall without a word. Wait that out.
        time.sleep(65)
        run_bounded(inst.command("memory", "search", "capybara swim north pond", "--agent",
                                 "main", "--json"), inst.env(), TURN_TIMEOUT_S, cli)
        promoted = run_bounded(inst.command(
            "memory", "promote", "--agent", "main", "--apply", "--min-score", "0",
            "--min-recall-count", "1", "--min-unique-queries", "1", "--json"),
            inst.env(), TURN_TIMEOUT_S, cli)
        print(f"promote: {promoted.stdout[-600:]}", flush=True)
        (work / AFTER_PROMOTE).write_text((ws / "MEMORY.md").read_text(encoding="utf-8"),
                                          encoding="utf-8")
        index()
        agent_turn(inst, "agent:main:d3", "after the promotion "
                   + search("capybara swim north pond") + " " + search("kinkajou fact"), cli,
                   local=True)
    print(f"recorded in {time.monotonic() - t0:.0f} s: {work}", flush=True)
    found = analyze(work, versions(work))
    if argv and found == 0:
        pack(work, FIXTURE)
        print(f"packed into {FIXTURE}")
    return found


def analyze(work: Path, versions: list[str]) -> int:
    """memoryd on the recorded install against what OpenClaw sent the model."""
    cfg, doc = memoryd_sections(work)
    if doc is None:
        return 1
    got = section_hits(doc)
    results = tool_results(work / "logs" / "requests.jsonl")
    want, failures = truth_hits(results, versions)
    if got != want:
        failures.append(f"hits per section (truth, memoryd) differ: {want} vs {got}")
    if doc["hits"]["unplaced"]:
        failures.append(f"{doc['hits']['unplaced']} unplaced hits")
    consolidated = [s["heading"] for s in doc["sections"]
                    if s["heading"].startswith(("Consolidated Memory (", "Promoted From "))]
    if len(consolidated) != 2 or not all(want.get(h) for h in consolidated):
        failures.append(f"not one hit on each section dreaming appended: {consolidated}")
    print(json.dumps({"hits_truth": want, "hits_memoryd": got, "new_sections": consolidated},
                     indent=1))
    print(memoryd(cfg, "sections", "MEMORY.md", "--no-scan").stdout)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
