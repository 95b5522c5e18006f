"""``python -m tests.live.sections_live``: memoryd's hits per section and bootstrap cut against
what the real OpenClaw 2026.9.6 sent the model (issue 33).

A real install (the live harness's, Tool Search off, ``agent --local`` turns) with a MEMORY.md
of 16 topics over 20,000 characters: searches that return different topics, then an edit that
moves the topics around, more searches, a dreaming-style append (``## Light Sleep``) and a new
session. Then memoryd scans the install and ``memoryd sections MEMORY.md --json`` must give

- per section, exactly the hits the truth gives: each ``memory_search`` result on MEMORY.md
  that the model was sent is credited to the sections its ``startLine``..``endLine`` covered in
  the version of MEMORY.md its snippet came from (told by the snippet's lines, compared with
  every version written); memoryd never sees those versions, only the file as it is at the end;
- per section of the final MEMORY.md, "loaded" exactly when all of its lines are in the
  request the gateway sent the model at the new session's first turn (the system prompt that
  carries the bootstrap files), "cut" exactly when none are.

Exit 0 when both hold; prints what differs otherwise. Takes a few minutes (one OpenClaw
process per turn).
"""

from __future__ import annotations

import json
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from .check import memoryd, write_config
from .install import ensure_openclaw
from .model_server import ScriptedModel, message_text
from .openclaw import TURN_TIMEOUT_S, Install, agent_turn, run_bounded, write_notes
from .record import search

ANIMALS = ["wombat", "quokka", "narwhal", "pangolin", "axolotl", "okapi", "tapir", "kinkajou",
           "capybara", "ocelot", "dugong", "fossa", "gharial", "jerboa", "margay", "numbat"]


def memory_md(order: list[int], top: str = "", tail: str = "") -> str:
    out = ["# Long-term memory", "", *([top, ""] if top else [])]
    for i in order:
        out.append(f"## {ANIMALS[i].title()} notes")
        out += [f"- {ANIMALS[i]} fact {j}: " + " ".join(f"w{i}x{j}y{k}" for k in range(34))
                for j in range(6)]
        out.append("")
    return "\n".join(out) + tail


def sections_of(text: str) -> list[tuple[str, int, int]]:
    """(heading, first line, last line) of each ``#`` section (as docs/sections.md defines)."""
    lines = text.split("\n")
    heads = [(i + 1, ln.lstrip("#").strip()) for i, ln in enumerate(lines) if ln.startswith("#")]
    out = []
    for n, (first, heading) in enumerate(heads):
        last = heads[n + 1][0] - 1 if n + 1 < len(heads) else len(lines)
        out.append((heading, first, last))
    return out


def tool_results(log: Path) -> list[tuple[int, str, dict[str, Any]]]:
    """(request index, call id, parsed result) of every memory_search result the model was
    sent, each once."""
    seen: set[str] = set()
    out = []
    for i, line in enumerate(log.read_text(encoding="utf-8").splitlines()):
        body = json.loads(line).get("body") or {}
        for m in body.get("messages") or []:
            if m.get("role") != "tool" or m.get("tool_call_id") in seen:
                continue
            try:
                doc = json.loads(message_text(m))
            except ValueError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("results"), list):
                seen.add(m["tool_call_id"])
                out.append((i, m["tool_call_id"], doc))
    return out


def truth_hits(results: list[tuple[int, str, dict[str, Any]]],
               versions: list[str]) -> tuple[dict[str, int], list[str]]:
    """Per heading, the hits OpenClaw's own line ranges give, in the version each came from."""
    want: dict[str, int] = {}
    notes = []
    for _, call_id, doc in results:
        credited: set[str] = set()
        for r in doc["results"]:
            if r.get("path") != "MEMORY.md":
                continue
            first, last = int(r["startLine"]), int(r["endLine"])
            snippet = str(r.get("snippet", "")).split("\n\nSource: ")[0]
            match = [v for v in versions
                     if "\n".join(v.split("\n")[first - 1:last]).startswith(snippet[:200])]
            if not match:
                notes.append(f"{call_id}: a snippet of no version written: {snippet[:80]!r}")
                continue
            for heading, a, b in sections_of(match[-1]):
                if a <= last and first <= b:
                    credited.add(heading)
        for h in credited:
            want[h] = want.get(h, 0) + 1
    return want, notes


def first_request_of(log: Path, marker: str) -> dict[str, Any]:
    for line in log.read_text(encoding="utf-8").splitlines():
        body = json.loads(line).get("body") or {}
        users = [message_text(m) for m in body.get("messages") or [] if m.get("role") == "user"]
        if any(marker in u for u in users):  # (the last user message is OpenClaw's own)
            return body
    raise AssertionError(f"no request for the turn {marker!r}")


FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "openclaw-sections" / "2026.9.6"


def versions() -> list[str]:
    """The three MEMORY.md texts the run writes: 16 topics, the edit that moves them (and a
    new first note), dreaming's append."""
    v1 = memory_md(list(range(16)))
    order = [3, 9, 0, 14, 1, 2, 4, 5, 6, 7, 8, 10, 11, 12, 13, 15]
    v2 = memory_md(order, top="- a new first note, written since the first searches")
    v3 = v2 + "\n## Light Sleep\n- promoted by dreaming: the okapi moved house\n"
    return [v1, v2, v3]


def pack(work: Path, dest: Path) -> None:
    """A recorded run as the suite replays it (tests/lifecycle/test_sections_record.py): OpenClaw's
    config and session store, the workspace, the model's request log, and the folder it was
    recorded in (openclaw.json names the workspace by its absolute path)."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest / "run.tar.xz", "w:xz", preset=9) as tar:
        picked = [work / "install" / "state" / "openclaw.json", work / "logs" / "requests.jsonl"]
        for top in (work / "install" / "state" / "agents", work / "install" / "ws"):
            picked += sorted(p for p in top.rglob("*") if p.is_file() and not p.is_symlink())
        for path in picked:
            tar.add(path, arcname=str(path.relative_to(work)), recursive=False)
    (dest / "recorded.json").write_text(json.dumps({"recorded_root": str(work)}) + "\n")


def main(argv: list[str]) -> int:
    """No argument: record and check; ``record``: also pack the run into the fixtures;
    a folder: check a recording made before again."""
    v1, v2, v3 = versions()
    if argv and argv[0] != "record":  # a recording made before: check it again
        work = Path(argv[0])
        log = work / "logs" / "requests.jsonl"
        return analyze(work, log, [v1, v2, v3])
    runtime = ensure_openclaw("2026.9.6")
    work = Path(tempfile.mkdtemp(prefix="memoryd-sections-live-"))
    logs = work / "logs"
    logs.mkdir()
    log = logs / "requests.jsonl"
    t0 = time.monotonic()
    with ScriptedModel(log) as model:
        inst = Install(work / "install", runtime, model.port, tool_search=False)
        inst.create()
        ws = inst.workspace("main")
        write_notes(ws, {"MEMORY.md": v1})
        inst.write_config()
        cli = logs / "cli.log"

        def index() -> None:
            """The memory index brought up to date by OpenClaw's own command (on a loaded
            machine a search otherwise times out while it builds the index itself)."""
            run_bounded(inst.command("memory", "index", "--agent", "main"), inst.env(),
                        TURN_TIMEOUT_S, cli)

        index()
        agent_turn(inst, "agent:main:s1", "warm the index " + search("wombat fact"), cli,
                   local=True)
        agent_turn(inst, "agent:main:s1", "two topics " + search("quokka fact") + " "
                   + search("gharial fact"), cli, local=True)
        write_notes(ws, {"MEMORY.md": v2})  # the edit that moves lines
        index()
        agent_turn(inst, "agent:main:s2", "after the edit " + search("wombat fact") + " "
                   + search("numbat fact"), cli, local=True)
        write_notes(ws, {"MEMORY.md": v3})  # dreaming's append
        index()
        agent_turn(inst, "agent:main:s3", "SECTIONS-NEW-SESSION " + search("tapir fact"), cli,
                   local=True)
    print(f"recorded in {time.monotonic() - t0:.0f} s: {work}", flush=True)
    found = analyze(work, log, [v1, v2, v3])
    if argv and found == 0:
        pack(work, FIXTURE)
        print(f"packed into {FIXTURE}")
    return found


def memoryd_sections(work: Path) -> tuple[Path, dict[str, Any] | None]:
    """memoryd's config for the recorded install in ``work`` (its state made afresh) and
    what ``memoryd sections MEMORY.md --json`` answers there (None: it failed, said)."""
    md = work / "md"
    shutil.rmtree(md, ignore_errors=True)
    cfg = write_config(work / "install", md)
    proc = memoryd(cfg, "sections", "MEMORY.md", "--json")
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return cfg, None
    return cfg, json.loads(proc.stdout)


def section_hits(doc: dict[str, Any]) -> dict[str, int]:
    """heading → hits, of the sections ``memoryd sections`` credited with any."""
    return {s["heading"]: s["hits_total"] for s in doc["sections"] if s["hits_total"]}


def unpack_run(fixture: Path, dest: Path) -> Path:
    """A recorded run (``fixture``'s ``run.tar.xz``) in ``dest``, openclaw.json naming the
    workspace where it now is."""
    with tarfile.open(fixture / "run.tar.xz", "r:xz") as tar:
        tar.extractall(dest, filter="data")
    old = json.loads((fixture / "recorded.json").read_text())["recorded_root"]
    config = dest / "install" / "state" / "openclaw.json"
    config.write_text(config.read_text(encoding="utf-8").replace(old, str(dest)), encoding="utf-8")
    return dest


def analyze(work: Path, log: Path, versions: list[str]) -> int:
    """memoryd on the recorded install against what OpenClaw sent the model."""
    v3 = versions[-1]
    cfg, doc = memoryd_sections(work)
    if doc is None:
        return 1
    got = section_hits(doc)
    results = tool_results(log)
    want, notes = truth_hits(results, versions)
    failures = list(notes)
    timed_out = [cid for _, cid, doc in results if doc.get("timedOut") or doc.get("disabled")]
    if timed_out or not want:
        failures.append(f"searches that timed out or found nothing on MEMORY.md: {timed_out}")
    if got != want:
        failures.append(f"hits per section (truth, memoryd) differ: {want} vs {got}")
    if doc["hits"]["unplaced"]:
        failures.append(f"{doc['hits']['unplaced']} unplaced hits")
    body = first_request_of(log, "SECTIONS-NEW-SESSION")
    sent = "\n".join(message_text(m) for m in body.get("messages") or [])
    lines = v3.split("\n")
    cut_seen = 0
    for s in doc["sections"]:
        mine = [ln for ln in lines[s["first_line"] - 1 : s["last_line"]] if ln.strip()]
        present = sum(1 for ln in mine if ln in sent)
        real = "loaded" if present == len(mine) else ("cut" if present == 0 else "partly cut")
        cut_seen += real != "loaded"
        if s["bootstrap"] != real and not (s["bootstrap"] == "partly cut" and real != "cut"):
            failures.append(f"{s['title']}: memoryd says {s['bootstrap']}, the request {real}")
    print(json.dumps({"hits_truth": want, "hits_memoryd": got, "bootstrap": doc["bootstrap"],
                      "sections_not_loaded": cut_seen}, indent=1))
    proc = memoryd(cfg, "sections", "MEMORY.md", "--no-scan")
    print(proc.stdout)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures or cut_seen == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
