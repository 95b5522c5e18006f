"""Scenarios: what the scripted model does to a real OpenClaw install, phase by phase.

Each phase changes the config (the Tool Search mode), runs its steps (turns through the
gateway or ``agent --local``; resets, deletes and compactions through the gateway) with no
OpenClaw process left afterwards, then the install is packed as a fixture with the truth so
far (hits are cumulative over the phases of one install).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import fixtures, truth
from .install import Runtime, ensure_openclaw
from .model_server import ScriptedModel
from .openclaw import (
    CALL_TIMEOUT_S,
    TURN_TIMEOUT_S,
    CommandFailed,
    Gateway,
    Install,
    agent_turn,
    gateway_call,
    run_bounded,
    version_key,
    write_notes,
)


def search(query: str) -> str:
    return f"[[call memory_search {json.dumps({'query': query})}]]"


def get(path: str, **more: int) -> str:
    return f"[[call memory_get {json.dumps({'path': path, **more})}]]"


def together(*calls: tuple[str, dict[str, Any]]) -> str:
    """Calls the model makes in one assistant message (parallel tool calls)."""
    return "[[many " + " ;; ".join(f"{n} {json.dumps(a)}" for n, a in calls) + "]]"


def spawn_fork(task: str) -> str:
    """A ``sessions_spawn`` of a forked subagent whose task holds directives of its own
    (its brackets written as JSON escapes, so that the parent's directive ends where it
    should; the subagent is sent them as brackets)."""
    args = json.dumps({"task": task, "context": "fork", "runtime": "subagent"})
    return "[[call sessions_spawn " + args.replace("[", "\\u005b").replace("]", "\\u005d") + "]]"


def code(body: str) -> str:
    return f"[[code {body}]]"


def bridged(name: str, args: dict[str, Any]) -> str:
    return f"await openclaw.tools.call({json.dumps(name)}, {json.dumps(args)})"


@dataclass(frozen=True)
class Step:
    """One thing done to the install: ``turn`` (key, message, agent), ``reset`` (key,
    reason), ``delete`` (key), ``compact`` (key); through the gateway also ``heartbeat`` (a
    heartbeat wake now: the configured prompt runs in the heartbeat session) and ``cron``
    (key: the job's ``--session`` target, message: its message; added, run once, waited for).
    ``waits_for``: after the step, wait for a turn whose user message holds this text (a
    spawned subagent's, which runs after the turn that spawned it)."""

    kind: str
    key: str
    message: str = ""
    agent: str = "main"
    reason: str = "new"
    waits_for: str = ""


def turn(key: str, message: str, agent: str = "main", waits_for: str = "") -> Step:
    return Step("turn", f"agent:{agent}:{key}", message, agent, waits_for=waits_for)


@dataclass(frozen=True)
class Phase:
    name: str
    tool_search: Any  # None = unset (OpenClaw's default)
    runner: str  # "gateway" | "local"
    steps: tuple[Step, ...]
    extra_config: dict[str, Any] = field(default_factory=dict)
    openclaw: str | None = None  # another OpenClaw version for this phase (an upgrade)


@dataclass(frozen=True)
class Scenario:
    name: str
    phases: tuple[Phase, ...]
    agents: tuple[str, ...] = ("main",)
    notes: dict[str, str] = field(default_factory=dict)  # more notes in main's workspace
    # notes of a memory.search.extraPaths folder outside the workspace (<root>/shared-notes/)
    shared_notes: dict[str, str] = field(default_factory=dict)


UNSET = None
# A cell's deadline covers its bridged calls: on a loaded 2-core machine a cell of three
# lookups took over 2 s, so 20 s; the cell that must time out loops forever.
CODE = {"mode": "code", "codeTimeoutMs": 20000}

LIFECYCLE = (
    Step("reset", "agent:main:a", reason="new"),
    turn("a", "after /new " + search("kayak June")),
    Step("reset", "agent:main:b", reason="reset"),
    turn("b", "after /reset " + get("memory/delta.md")),
    turn("c", "soon deleted " + search("redis") + " " + get("memory/recipes.md")),
    Step("delete", "agent:main:c"),
)
LOOKUPS = (
    turn("a", "what db does alpha use? " + search("postgres") + " " + get("memory/gamma.md")),
    turn("a", "and the dentist? " + search("dentist Tuesdays") + " " + get("MEMORY.md")),
    turn("b", "nothing there: " + search("xylophone zeppelin") + " "
         + get("memory/missing.md") + " " + get("../outside.md")),
    turn("b", "more " + get("/etc/hostname") + " " + search("lentil soup")),
)
LONG = (
    *(turn("long", f"long session, turn {i}: " + search(q) + " " + get(p) + " " + "filler " * 400)
      for i, (q, p) in enumerate([("postgres", "memory/alpha.md"), ("redis", "memory/beta.md"),
                                  ("kayak", "memory/gamma.md"), ("receipts", "memory/delta.md")])),
    Step("compact", "agent:main:long"),
    turn("long", "after compaction " + search("dentist")),
)
CODE_CELLS = (
    turn("a", "three inner calls "
         + code("return [" + bridged("memory_search", {"query": "postgres"}) + ", "
                + bridged("memory_get", {"path": "memory/beta.md"}) + ", "
                + bridged("memory_search", {"query": "receipts blue folder"}) + "];")),
    turn("e", "one inner call fails "
         + code("const ok = " + bridged("memory_search", {"query": "green tea"})
                + "; let bad; try { bad = " + bridged("memory_get", {"path": "../outside.md"})
                + "; } catch (e) { bad = String(e); } return {ok, bad};")),
    turn("e", "a cell that times out "
         + code("const r = " + bridged("memory_search", {"query": "kayak"})
                + "; while (true) {} return r;")
         + " " + search("lentils cumin")),
)

# Direct calls only (Tool Search off), every lifecycle event: what memoryd counts today.
DIRECT = Scenario("direct", (
    Phase("lookups", False, "gateway", LOOKUPS),
    Phase("reset-delete-compact", False, "gateway", LIFECYCLE + LONG),
))

# The newest OpenClaw as installed (Tool Search "tools" mode), then every other mode.
MAIN = Scenario("main", (
    Phase("tools-mode", UNSET, "gateway", LOOKUPS),
    Phase("reset-delete-compact", UNSET, "gateway", LIFECYCLE + LONG),
    Phase("direct", False, "local", (
        turn("a", "direct " + search("postgres vacuum") + " " + get("memory/people/ana.md")),
        turn("d", "direct, nothing " + search("quasar nebula") + " " + get("memory/nope.md")),
    )),
    Phase("directory", {"mode": "directory"}, "local", (
        turn("a", "hidden name called directly "
             + "[[direct memory_search {\"query\": \"plumber sink\"}]] "
             + "[[tool_call memory_get {\"path\": \"memory/2026-11-30.md\"}]]"),
    )),
    Phase("code-mode", CODE, "local", CODE_CELLS),
))

AGENTS = Scenario("agents", (
    Phase("two-agents", UNSET, "local", (
        turn("main", "main agent " + search("postgres")),
        turn("main", "ops agent " + search("backups NAS") + " " + get("memory/oncall.md"), "ops"),
    )),
    Phase("two-agents-direct", False, "local", (
        turn("main", "ops agent, direct " + search("pager weekends") + " " + get("MEMORY.md"),
             "ops"),
        turn("main", "main agent, direct " + get("MEMORY.md")),
    )),
), agents=("main", "ops"))

# What .ci/run drives end to end: the default config with a reset and a delete, then code
# mode (one gateway start, a few local turns).
CI = Scenario("ci", (
    Phase("tools-mode-lifecycle", UNSET, "gateway", LOOKUPS[:1] + LOOKUPS[2:3] + (
        Step("reset", "agent:main:a", reason="new"),
        turn("a", "after /new " + search("kayak June")),
        turn("c", "soon deleted " + search("redis")),
        Step("delete", "agent:main:c"),
    )),
    Phase("code-mode", CODE, "local", CODE_CELLS[:1]),
))

# An older release: direct calls with every lifecycle event, then Tool Search's "tools" and
# code modes (off by default there); from the last JSONL release, an upgrade to the newest.
OLDER = Scenario("lifecycle", (
    Phase("direct", False, "gateway", LOOKUPS + LIFECYCLE + LONG),
    Phase("tools-mode", {"mode": "tools"}, "local", (
        turn("a", "tools mode " + search("postgres") + " " + get("memory/gamma.md")),
        turn("f", "tools mode, nothing " + search("xylophone") + " " + get("memory/none.md")),
    )),
    Phase("code-mode", CODE, "local", CODE_CELLS[:2]),
))
UPGRADE = Scenario("lifecycle", (
    *OLDER.phases,
    Phase("upgraded-to-2026.9.6", UNSET, "gateway", (
        turn("a", "after the upgrade " + search("kayak June")),
        turn("g", "a new session after the upgrade " + search("dentist")),
    ), openclaw="2026.9.6"),
))

# Issue 29: runs that are not the user's, and every memory file OpenClaw searches. The
# heartbeat runs in the main session (its prompt configured to make a lookup), a cron job
# pinned to a named session and an isolated one, a user session whose name holds
# "heartbeat"; USER.md and memory.search.extraPaths inside the workspace and outside it
# (configured absolute), names with spaces, umlauts and CJK. (The runs make memory_get calls:
# on a loaded machine the first searches of a fresh install time out while its index is built.)
SHARED = "@SHARED@"  # replaced by the absolute path of <root>/shared-notes when configured
RUNS = Scenario("runs", (
    Phase("runs-and-extra-paths", UNSET, "gateway", (
        turn("heartbeat-notes", "a user session " + search("lighthouse keeper") + " "
             + get("USER.md")),
        turn("main", "the user in main " + get("memory/alpha.md")),
        Step("heartbeat", "agent:main:main"),
        Step("cron", "session:t4-pinned", "cron pinned " + get("notes/lighthouse.md")),
        Step("cron", "isolated", "cron isolated " + get("memory/beta.md")),
        turn("main", "back to the user " + search("walrus service") + " "
             + get("notes/Tromsø 北極.md") + " " + get("../shared-notes/runbook.md")),
    ), extra_config={
        "memory": {"search": {"extraPaths": ["notes", SHARED]}},
        "agents": {"defaults": {"heartbeat": {
            "every": "0m", "target": "none",
            "prompt": truth.HEARTBEAT_PROMPT + " " + get("memory/gamma.md")}}},
    }),
), notes={
    "USER.md": "# User\n\nThe user prefers oolong tea and lives in Tromsø.\n",
    "notes/lighthouse.md": "# Lighthouse\n\nThe lighthouse keeper lives on Skerry island.\n",
    "notes/Tromsø 北極.md": "# Tromsø\n\nThe northern lights over the fjord in winter.\n",
}, shared_notes={
    "runbook.md": "# Runbook\n\nRestart the walrus service with care.\n",
})

# The runs on the last release writing JSONL transcripts (issue 29: their markers there): a cron
# job pinned to a named session and an isolated one, and a user session keyed heartbeat-notes.
# (No heartbeat: 2026.7.35 logs "[heartbeat] disabled" for every: "0m", and woken by
# `system event --mode now` with every: "24h" it ran no turn within 240 s. No extraPaths: it
# refuses a top-level `memory` key.)
RUNS_JSONL = Scenario("runs", (
    Phase("runs", UNSET, "gateway", (
        turn("heartbeat-notes", "a user session " + get("memory/delta.md")),
        turn("main", "the user in main " + get("memory/alpha.md")),
        Step("cron", "session:t4-pinned", "cron pinned " + get("memory/recipes.md")),
        Step("cron", "isolated", "cron isolated " + get("memory/beta.md")),
        turn("t4-pinned", "the user in the pinned session " + get("memory/people/ana.md")),
        turn("main", "back to the user " + get("memory/gamma.md")),
    )),
))

# Issue 29 item 8, the shapes left: memory calls made together in one assistant message
# (Tool Search off, then on), memory_get with from/lines and past the note's end, a note whose
# name is in NFD (as macOS writes names) asked for in NFD and in NFC, a forked subagent (its
# transcript starts with copies of the parent's events), an isolated heartbeat.
CAFE_NFD = unicodedata.normalize("NFD", "memory/Café crème.md")
CAFE_NFC = unicodedata.normalize("NFC", CAFE_NFD)
SHAPES = Scenario("shapes", (
    Phase("together-direct", False, "local", (
        turn("p", "two at once " + together(("memory_search", {"query": "postgres"}),
                                            ("memory_get", {"path": "memory/beta.md"}))),
        turn("r", "ranges " + get("memory/gamma.md", **{"from": 3, "lines": 1}) + " "
             + get("memory/gamma.md", **{"from": 500, "lines": 5})),
        turn("n", "names " + get(CAFE_NFD) + " " + get(CAFE_NFC) + " " + search("croissant")),
    )),
    Phase("together-tools-mode", UNSET, "local", (
        turn("p", "two at once, tools mode "
             + together(("memory_get", {"path": "memory/alpha.md"}),
                        ("memory_search", {"query": "kayak June"}),
                        ("memory_get", {"path": "memory/delta.md", "from": 3}))),
    )),
    Phase("fork-and-isolated-heartbeat", UNSET, "gateway", (
        turn("f", "the parent " + search("dentist Tuesdays") + " "
             + spawn_fork("fork child task " + get("memory/recipes.md") + " "
                          + search("lentil soup")), waits_for="child task [[call"),
        Step("heartbeat", "agent:main:main"),
        turn("f", "the parent again " + get("memory/people/ana.md")),
    ), extra_config={"agents": {"defaults": {"heartbeat": {
        "every": "0m", "target": "none", "isolatedSession": True,
        "prompt": truth.HEARTBEAT_PROMPT + " " + get("memory/2026-11-30.md")}}}}),
), notes={
    CAFE_NFD: "# Café crème\n\nThe croissant bakery opens at seven.\n",
})

SCENARIOS = {s.name: s for s in (DIRECT, MAIN, AGENTS, CI, OLDER, RUNS, SHAPES)}
# Committed as fixtures, per version ("ci" is run live by .ci/run).
RECORDED = {"2026.9.6": ("direct", "main", "agents", "runs", "shapes"), "2026.8.1": ("lifecycle",),
            "2026.7.35": ("lifecycle", "runs"), "2026.5.28": ("lifecycle",)}


def scenario_for(name: str, version: str) -> Scenario:
    """A scenario as run on one version (the last JSONL release also gets upgraded)."""
    if name == "lifecycle" and version == "2026.7.35":
        return UPGRADE
    if name == "runs" and version_key(version) < (2026, 8, 1):
        return RUNS_JSONL
    return SCENARIOS[name]


def agent_schema(state: Path) -> int | None:
    """``PRAGMA user_version`` of the main agent's database (None: there is none)."""
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    if not db.exists():
        return None
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def run_step(inst: Install, step: Step, logs: Path, local: bool) -> None:
    before = _replies(logs)
    _run_step(inst, step, logs, local)
    if step.waits_for:
        _wait_for_turn(logs, before, step.waits_for, anywhere=True)


def _run_step(inst: Install, step: Step, logs: Path, local: bool) -> None:
    if step.kind == "turn":
        agent_turn(inst, step.key, step.message, logs / "cli.log", step.agent, local=local)
    elif step.kind == "reset":
        gateway_call(inst, "sessions.reset", {"key": step.key, "reason": step.reason},
                     logs / "cli.log")
    elif step.kind == "delete":
        gateway_call(inst, "sessions.delete", {"key": step.key, "deleteTranscript": True},
                     logs / "cli.log")
    elif step.kind == "compact":
        gateway_call(inst, "sessions.compact", {"key": step.key}, logs / "cli.log")
    elif step.kind == "heartbeat":
        before = _replies(logs)
        run_bounded(inst.command("system", "event", "--text", "memoryd-live wake", "--mode",
                                 "now", "--json"), inst.env(), CALL_TIMEOUT_S, logs / "cli.log")
        _wait_for_turn(logs, before, truth.HEARTBEAT_PROMPT)
    elif step.kind == "cron":
        before = _replies(logs)
        added = run_bounded(inst.command(
            "cron", "add", "--name", f"job{before}", "--every", "24h", "--session", step.key,
            "--message", step.message, "--no-deliver", "--json"), inst.env(), CALL_TIMEOUT_S,
            logs / "cli.log")
        job = json.loads(added.stdout[added.stdout.index("{"):])
        job_id = job.get("id") or (job.get("job") or {}).get("id")
        # (2026.7's `cron run` has no --json)
        json_flag = ("--json",) if version_key(inst.runtime.version) >= (2026, 8, 1) else ()
        run_bounded(inst.command("cron", "run", job_id, *json_flag), inst.env(), CALL_TIMEOUT_S,
                    logs / "cli.log")
        _wait_for_turn(logs, before, f"[cron:{job_id}")
    else:
        raise ValueError(step.kind)


def _replies(logs: Path) -> int:
    """How many requests the scripted model has answered so far."""
    log = logs / "requests.jsonl"
    return len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0


def _wait_for_turn(logs: Path, after: int, starts: str, timeout: float = TURN_TIMEOUT_S,
                   anywhere: bool = False) -> None:
    """Wait until the scripted model ended a turn whose user message begins ``starts`` (or
    holds it, ``anywhere``) with its final "done", in a request after the first ``after``;
    then a moment for the transcript."""
    from .model_server import INTERNAL, message_text

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = (logs / "requests.jsonl").read_text(encoding="utf-8").splitlines()[after:]
        for line in lines:
            doc = json.loads(line)
            users = [message_text(m) for m in (doc.get("body") or {}).get("messages") or []
                     if m.get("role") == "user" and INTERNAL not in message_text(m)]
            said = users[-1] if users else ""
            if (starts in said if anywhere else said.lstrip().startswith(starts)) \
                    and doc.get("reply") == "done":
                time.sleep(3.0)  # the turn's last events written after the reply
                return
        time.sleep(1.0)
    raise CommandFailed(f"no turn beginning {starts!r} ended within {timeout:.0f} s")


def record(scenario: Scenario, runtime: Runtime, work: Path, out: Path | None,
           say: Any = print) -> list[Path]:
    """Run a scenario on a fresh install under ``work``; after each phase pack a fixture
    into ``out/<version>/<scenario>/<NN>-<phase>/`` (``out`` None: ``work/fixtures``)."""
    root = work / f"{runtime.version}-{scenario.name}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    logs = root / "logs"
    logs.mkdir()
    dest_base = (out or work / "fixtures") / runtime.version / scenario.name
    written: list[Path] = []
    with ScriptedModel(logs / "requests.jsonl") as model:
        inst = Install(root / "install", runtime, model.port, agents=scenario.agents)
        inst.create()
        write_notes(inst.workspace("main"), scenario.notes)
        write_notes(inst.root / "shared-notes", scenario.shared_notes)
        workspaces = {
            a: {str(p.relative_to(inst.workspace(a))) for p in inst.workspace(a).rglob("*.md")}
            for a in scenario.agents}
        # (OpenClaw names a note of an extraPaths folder outside the workspace relative to it)
        workspaces["main"] |= {f"../shared-notes/{rel}" for rel in scenario.shared_notes}
        for n, phase in enumerate(scenario.phases, 1):
            t0 = time.monotonic()
            inst.tool_search = phase.tool_search
            inst.extra = json.loads(json.dumps(phase.extra_config).replace(
                json.dumps(SHARED)[1:-1], str(inst.root / "shared-notes")))
            if phase.openclaw is not None and phase.openclaw != inst.runtime.version:
                inst.runtime = ensure_openclaw(phase.openclaw)
            inst.write_config()
            if phase.runner == "gateway":
                with Gateway(inst, logs / "gateway.log"):
                    if version_key(inst.runtime.version) < (2026, 7, 1):
                        # 2026.5 pairs the CLI's device with the scopes of its first call and
                        # holds a later upgrade to admin (resets, deletes) for approval that
                        # needs admin itself: make the first call an admin one (a no-op).
                        gateway_call(inst, "sessions.delete", {"key": "agent:main:memoryd-prime"},
                                     logs / "cli.log")
                    for step in phase.steps:
                        run_step(inst, step, logs, local=False)
            else:
                for step in phase.steps:
                    run_step(inst, step, logs, local=True)
            calls = truth.memory_calls(logs / "requests.jsonl", workspaces)
            doc = truth.truth_document(calls, workspaces, {
                "openclaw": runtime.version, "scenario": scenario.name, "phase": phase.name,
                "phase_number": n, "tool_search": phase.tool_search, "runner": phase.runner,
                "openclaw_now": inst.runtime.version,
                "recorded_root": str(inst.root), "agents": list(scenario.agents),
                "agent_schema": agent_schema(inst.state),
            })
            dest = dest_base / f"{n:02d}-{phase.name}"
            shutil.rmtree(dest, ignore_errors=True)
            fixtures.pack(inst.root, dest, doc)
            written.append(dest)
            say(f"{runtime.version} {scenario.name} {n:02d}-{phase.name}: "
                f"{sum(sum(h.values()) for h in doc['hits'].values())} hits so far, "
                f"routes {doc['calls_by_route']}, {time.monotonic() - t0:.0f} s")
    return written
