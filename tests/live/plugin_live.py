"""memoryd's OpenClaw plugin in the real program (issue 21), on the live harness.

One install, one gateway, the scripted model; every phase's facts go into one record
(``record.json``), which :func:`problems` judges. The live run (``python -m
tests.live.plugin_live check``, part of ``python -m tests.live check``) judges a fresh
record; the default suite (tests/plugin/test_plugin_record.py) judges the committed one and
replays its transcripts through memoryd's scanner, without Node.

Phases:

1. ``memoryd plugin install`` on an install whose ``openclaw.json`` OpenClaw wrote itself.
2. A new session: the model's first request holds the hot notes (not the one whose text is
   already in ``MEMORY.md``); the second turn's request holds none.
3. An archived note (a journaled ``expire:`` move) is recalled by the model with
   ``memoryd_recall``: the tool's answer says it was restored, the file is back, memoryd
   counts it once (its own recall hit; the scanner counts nothing for the tool's call).
4. ``/memoryd`` and ``/refresh`` through the gateway's chat path: status facts; organize
   moved the stale hot note to warm/, the session was reset, and the next turn (a new
   session) gets the hot notes again.
5. memoryd's config broken: a new session's turn still succeeds, without notes, and the
   gateway logs one line.
6. Latency of the hook: new sessions with the hot notes unchanged (the plugin's stamp
   check) and with a hot note touched before each (memoryd runs).
7. ``memoryd plugin uninstall``: ``openclaw.json`` is byte for byte what it was.
8. (before 7) Tool Search off, hot-applied: the tool's schema in the requests. Over the whole
   request log, what the plugin added to each request and each session, Tool Search on and
   off (issue 35: ``live.plugin_cost``), printed and judged (at most 200 a request
   with Tool Search on; the recall turn finds the deferred tool with ``tool_search`` and calls
   it through ``tool_call``).

Issue 28's phases, in the same gateway: a ``memory_get`` of an archived note's path returns
its text in that very call (the plugin's ``before_tool_call`` ran ``memoryd on-read``
first); with the archive in OpenClaw's index (``memory.search.extraPaths``), a ``memory_get``
of an archived copy returns its text, the hit is the note's, and the daemon's restore check
brings the note home; a recall matching more than 3 archived notes with one clearly ahead
restores that one; the time the read hook adds to each ``memory_get`` (its own log line). Then, in a
gateway of its own, memoryd missing (the plugin's ``command`` names no program): a
``memory_get``, a ``memory_search`` and a recall still each get an answer.

Issue 34's phase (11, in the first gateway, after Tool Search off): ``/refresh`` with
``promote.auto`` hands two candidates to a sub-session of the agent, which the scripted model
plays; ``restore --last``; ``/memoryd promote`` with the sub-session failing
(``promote_live.phases``, judged by ``promote_live.problems``).

Issue 29's venv phase (10): the plugin installed by the memoryd of a venv made with the
README's command; the venv deleted, a gateway start (no load trouble, one warning saying to
run ``memoryd plugin install``, ``/memoryd`` says the same); the venv made again and the
plugin installed again: a gateway start without trouble, a new session gets the hot notes.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from tests.support.plugin_record import (
    ARCHIVED,
    COPY_MARK,
    COPY_NOTE,
    HOT_MARK,
    LEADER,
    LEADER_MARK,
    READ_MARK,
    READ_NOTE,
    RIVALS,
    SEARCH_MARK,
    SEARCH_NOTE,
    STALE_MARK,
    TEA,
    p95,
    problems,
)

from . import promote_live
from .install import NEWEST, Runtime, ensure_openclaw
from .model_server import ScriptedModel, message_text
from .openclaw import Gateway, Install, agent_turn, gateway_call, run_bounded, version_key
from .plugin_cost import cost, describe, directory_line

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "openclaw-plugin"
LATENCY_SESSIONS = 20  # new sessions timed by `record` (half as many with a note touched)
CHECK_SESSIONS = 6  # and by `check` (.ci/run's bounded run)
READ_MS = 5000  # the read hook's deadline in this run (readTimeoutMs; the default is 800)
SEARCH_MS = 5000  # and the search hook's (searchTimeoutMs; the default is 800)
INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT"
ARCHIVE_FOLDER = "memory-archive/2026-12"  # where `_archive` puts a note, as expire would


def _memoryd_program() -> str:
    """The ``memoryd`` console script of this interpreter (what a user's PATH would have)."""
    beside = Path(sys.executable).parent / "memoryd"
    return str(beside) if beside.exists() else shutil.which("memoryd") or "memoryd"


def _memoryd(
    cfg: Path, env: dict[str, str], *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``memoryd --config CFG ARGS…`` as a user's shell would run it, output captured."""
    return subprocess.run(
        [_memoryd_program(), "--config", str(cfg), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _plugin_command(
    action: str, cfg: Path, openclaw: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``memoryd plugin install|uninstall --json`` with this run's config and openclaw."""
    return _memoryd(cfg, env, "plugin", action, "--json", "--openclaw", str(openclaw))


def _requests(log: Path, since: int) -> list[dict[str, Any]]:
    """The chat requests logged from line ``since`` on, reduced to what is judged."""
    out = []
    for line in log.read_text(encoding="utf-8").splitlines()[since:]:
        entry = json.loads(line)
        if not entry["path"].endswith("/chat/completions"):
            continue
        body = entry["body"]
        messages = body.get("messages") or []
        # OpenClaw adds a user-role message of its own context after the prompt; the
        # conversation's messages are the others.
        users = [message_text(m) for m in messages if m.get("role") == "user"]
        said = [u for u in users if not u.startswith(INTERNAL)]
        out.append(
            {
                "last_user": said[-1] if said else "",
                "user_messages": len(said),
                "tool_results": [message_text(m) for m in messages if m.get("role") == "tool"],
                "tool_result_ids": [
                    m.get("tool_call_id") for m in messages if m.get("role") == "tool"
                ],
                "tools": sorted(
                    (t.get("function") or {}).get("name", "") for t in body.get("tools") or []
                ),
                "body_has_hot_mark": HOT_MARK in json.dumps(body),
                "reply": entry["reply"],
            }
        )
    return out


def _log_lines(log: Path, since: int = 0, until: int | None = None) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines()[since:until]


def _first_body(log: Path, since: int) -> dict[str, Any]:
    for line in _log_lines(log, since):
        entry = json.loads(line)
        if entry["path"].endswith("/chat/completions"):
            return entry["body"]
    return {}


def _lines(log: Path) -> int:
    return len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0


def _plugin_log(gateway_log: Path) -> list[str]:
    return [
        ln.strip()
        for ln in gateway_log.read_text(encoding="utf-8", errors="replace").splitlines()
        if "memoryd:" in ln and "[plugins]" in ln
    ]


def _archive(cfg: Path, rel: str, env: dict[str, str]) -> None:
    """Archive ``rel`` as expire does: a journaled move in an ``expire:`` batch."""
    code = (
        "import sys\n"
        "from memoryd.config import load_config, resolve_paths\n"
        "from memoryd.mover import mover_for\n"
        "from memoryd.store import Store\n"
        "paths = resolve_paths(load_config(sys.argv[1]))\n"
        "paths.memoryd_dir.mkdir(parents=True, exist_ok=True)\n"
        "store = Store.open(paths.db)\n"
        "src = paths.workspace / sys.argv[2]\n"
        f"dst = paths.workspace / {ARCHIVE_FOLDER!r} / sys.argv[2]\n"
        "dst.parent.mkdir(parents=True, exist_ok=True)\n"
        "mover_for(store, paths).move(src, dst, reason='live: archived', batch='expire:live')\n"
        "store.close()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(cfg), rel], env=env, check=True, timeout=60)


def _restore_check(cfg: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """One restore check of the daemon's (it runs one after each ingest pass): its events."""
    code = (
        "import json, sys\n"
        "from memoryd.config import load_config, resolve_paths\n"
        "from memoryd.ondemand import RestoreOnDemand\n"
        "from memoryd.store import Store\n"
        "cfg = load_config(sys.argv[1])\n"
        "paths = resolve_paths(cfg)\n"
        "store = Store.open(paths.db)\n"
        "print(json.dumps(RestoreOnDemand(cfg, paths).check(store), default=str))\n"
        "store.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(cfg)], env=env, check=True,
                          timeout=120, capture_output=True, text=True)  # fmt: skip
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def _history(inst: Install, key: str, log: Path) -> dict[str, Any]:
    return gateway_call(inst, "chat.history", {"sessionKey": key}, log)


def _assistant_texts(history: dict[str, Any]) -> list[str]:
    return [message_text(m) for m in history.get("messages") or [] if m.get("role") == "assistant"]


def _reset_marked(history: dict[str, Any]) -> bool:
    """Whether the session's history now starts over at a reset (nothing said since)."""
    messages = history.get("messages") or []
    kinds = [(m.get("__openclaw") or {}).get("kind") for m in messages]
    return "reset" in kinds and all(m.get("role") != "user" for m in messages)


def _wait(what: str, probe: Any, timeout: float = 120.0) -> Any:
    """Poll ``probe()`` until it returns something true (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = probe()
        if got:
            return got
        time.sleep(1.0)
    raise AssertionError(f"live plugin: {what} not seen within {timeout:.0f} s")


def _send(inst: Install, key: str, message: str, log: Path) -> dict[str, Any]:
    """A message through the gateway's chat path (where slash commands are dispatched)."""
    return gateway_call(
        inst,
        "chat.send",
        {"sessionKey": key, "message": message, "idempotencyKey": str(uuid.uuid4())},
        log,
    )


def _hook_ms(lines: list[str]) -> list[tuple[str, int]]:
    """(how, ms) of each injection the plugin logged."""
    out = []
    for ln in lines:
        if "injected" not in ln and "no hot notes to inject" not in ln:
            continue
        inner = ln.rsplit("(", 1)[-1].rstrip(")")
        how, _, ms = inner.rpartition(", ")
        if ms.endswith(" ms"):
            out.append((how, int(ms[:-3])))
    return out


def _read_hook_ms(lines: list[str]) -> list[int]:
    """The ms of each read hook run the plugin logged (``read of PATH: OUTCOME (N ms)``)."""
    out = []
    for ln in lines:
        if "memoryd: read of " not in ln or not ln.endswith(" ms)"):
            continue
        ms = ln.rsplit("(", 1)[-1].removesuffix(" ms)")
        if ms.isdigit():
            out.append(int(ms))
    return out


def _search_hook_ms(lines: list[str]) -> list[int]:
    """The ms of each search hook run the plugin logged (``search "Q": OUTCOME (N ms)``, or
    ``restored on demand: search "Q" → …  (N ms)``)."""
    out = []
    for ln in lines:
        if 'memoryd: search "' not in ln and "restored on demand: search" not in ln:
            continue
        ms = ln.rsplit("(", 1)[-1].removesuffix(" ms)")
        if ln.endswith(" ms)") and ms.isdigit():
            out.append(int(ms))
    return out


def record(
    runtime: Runtime, work: Path, say: Any = print, sessions: int = LATENCY_SESSIONS
) -> dict[str, Any]:
    """Drive the real program through every phase; the record (see module doc)."""
    root = work / "plugin-live"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    gw_log = root / "gateway.log"
    req_log = root / "requests.jsonl"
    rec: dict[str, Any] = {"openclaw": runtime.version, "recorded_root": str(root)}
    player = promote_live.SubSession(root / "ws")  # (plays the promotion's sub-session)
    with ScriptedModel(req_log, [player]) as model:
        inst = Install(root, runtime, model.port)
        inst.create()
        tiers = inst.state / "memory_fs"
        (tiers / "hot").mkdir(parents=True)
        (tiers / "hot" / "zebra.md").write_text(
            f"# Deploy\n\nThe marker is {HOT_MARK}: the deploy moved to Thursday.\n"
        )
        heron = tiers / "hot" / "heron.md"
        heron.write_text(f"# Birds\n\nSeen at the lake: {STALE_MARK}, a grey heron.\n")
        old = time.time() - 4 * 3600
        os.utime(heron, (old, old))
        (tiers / "hot" / "tea.md").write_text(f"# Tea\n\n{TEA}\n")
        memory = inst.workspace() / "memory"
        (memory / Path(READ_NOTE).name).write_text(f"# Runbook\n\nRestart order: {READ_MARK}.\n")
        (memory / Path(SEARCH_NOTE).name).write_text(
            f"# Otter survey\n\nThe otter holt below the weir: {SEARCH_MARK}, two cubs.\n"
        )
        for i, rel in enumerate(RIVALS):
            (memory / Path(rel).name).write_text(f"# Walk {i}\n\nTook the lantern along.\n")
        (memory / Path(COPY_NOTE).name).write_text(f"# Herons\n\nNests counted: {COPY_MARK}.\n")
        (memory / Path(LEADER).name).write_text(
            f"# Quokka bay\n\nThe lantern at quokka bay: {LEADER_MARK}.\n"
        )
        cfg = root / "memoryd.toml"
        good_cfg = (
            f"[openclaw]\nstate_dir = {json.dumps(str(inst.state))}\n"
            f"[state]\ndir = {json.dumps(str(root / 'memoryd-state'))}\n"
        )
        cfg.write_text(good_cfg)
        env = inst.env()
        env["PATH"] = f"{Path(_memoryd_program()).parent}{os.pathsep}{env['PATH']}"
        env.pop("MEMORYD_CONFIG", None)
        # OpenClaw writes its file in its own format first (a setting that changes something:
        # an unchanged value writes nothing): this is what uninstall must give back.
        run_bounded(
            inst.command("config", "set", "agents.defaults.bootstrapMaxChars", "20000"),
            env,
            120,
            gw_log,
        )
        # The archive in OpenClaw's own index (issue 28): its copies are found and read there
        # (before the install: uninstall gives back this file).
        run_bounded(
            inst.command(
                "config", "set", "memory.search.extraPaths", '["memory-archive"]', "--strict-json"
            ),
            env,
            120,
            gw_log,
        )
        before = inst.config_path.read_bytes()

        t0 = time.monotonic()
        inst_proc = _plugin_command("install", cfg, runtime.openclaw, env)
        rec["install"] = {
            "exit": inst_proc.returncode,
            "seconds": round(time.monotonic() - t0, 1),
            "doc": json.loads(inst_proc.stdout or "{}"),
        }
        say(f"plugin install: exit {inst_proc.returncode} in {rec['install']['seconds']} s")
        # The read hook's own deadline, raised for this run: the check is that the read gets
        # the note in that same call, on a machine that may be busy (a Python start-up alone
        # takes a second at a load of 16 on two cores); its time is recorded, not judged.
        run_bounded(
            inst.command(
                "config", "set", "plugins.entries.memoryd.config.readTimeoutMs", str(READ_MS)
            ),
            env,
            120,
            gw_log,
        )
        run_bounded(
            inst.command(
                "config", "set", "plugins.entries.memoryd.config.searchTimeoutMs", str(SEARCH_MS)
            ),
            env,
            120,
            gw_log,
        )
        oc = json.loads(inst.config_path.read_text())
        rec["entry"] = oc.get("plugins", {}).get("entries", {}).get("memoryd")
        rec["extra_paths"] = oc.get("memory", {}).get("search", {}).get("extraPaths")

        with Gateway(inst, gw_log):
            # 2. a new session, then its second turn
            mark = _lines(req_log)
            agent_turn(inst, "agent:main:s1", "hello [[text hi]]", gw_log)
            rec["first_turn"] = _requests(req_log, mark)
            # Tool Search's one line for the deferred tool (issue 35)
            rec["directory_line"] = directory_line(_first_body(req_log, mark))
            mark = _lines(req_log)
            agent_turn(inst, "agent:main:s1", "again [[text ok]]", gw_log)
            rec["second_turn"] = _requests(req_log, mark)
            say("turns 1-2 done")

            # 3. recall an archived note
            _archive(cfg, ARCHIVED, env)
            rec["archived_before_recall"] = not (inst.workspace() / ARCHIVED).exists()
            mark = _lines(req_log)
            agent_turn(
                inst,
                "agent:main:s1",
                # found by Tool Search on the seed's words, then called through tool_call
                'did we discuss the kayak before? [[call tool_search {"query": "did we discuss '
                'this before"}]] [[call memoryd_recall {"query": "kayak"}]] [[text noted]]',
                gw_log,
            )
            rec["recall_turn"] = _requests(req_log, mark)
            rec["back_after_recall"] = (inst.workspace() / ARCHIVED).is_file()
            # the recalled note's hits now, before later turns read it again by its path (the
            # read hook's timing turn, the memoryd-missing turn): the recall's own, and what
            # the scanner adds from the transcripts (nothing, for a recall)
            _memoryd(cfg, env, "scan", "--json")
            rec["hits"] = _hit_rows(root / "memoryd-state" / "state.db", ARCHIVED)
            say(f"recall: back in the workspace: {rec['back_after_recall']}")

            # 3b. issue 28: a path read reaches the archive in the same call
            _archive(cfg, READ_NOTE, env)
            rec["archived_before_read"] = not (inst.workspace() / READ_NOTE).exists()
            mark = _lines(req_log)
            agent_turn(
                inst,
                "agent:main:s1",
                f'the runbook? [[call memory_get {{"path": "{READ_NOTE}"}}]] [[text read]]',
                gw_log,
            )
            rec["read_turn"] = _requests(req_log, mark)
            rec["back_after_read"] = (inst.workspace() / READ_NOTE).is_file()
            say(f"read: back in the workspace: {rec['back_after_read']}")

            # 3b'. issue 28: a search naming an archived note reaches it in the same call
            _archive(cfg, SEARCH_NOTE, env)
            rec["archived_before_search"] = not (inst.workspace() / SEARCH_NOTE).exists()
            mark = _lines(req_log)
            agent_turn(
                inst,
                "agent:main:s1",
                'the otters? [[call memory_search {"query": "otter holt weir"}]] [[text seen]]',
                gw_log,
            )
            rec["search_turn"] = _requests(req_log, mark)
            rec["back_after_search"] = (inst.workspace() / SEARCH_NOTE).is_file()
            _memoryd(cfg, env, "scan", "--json")
            rec["search_hits"] = _hit_rows(root / "memoryd-state" / "state.db", SEARCH_NOTE)
            # the next search, OpenClaw's own (the note is no longer archived: no restore)
            mark = _lines(req_log)
            agent_turn(
                inst,
                "agent:main:s1",
                'again [[call memory_search {"query": "otter holt"}]] [[text seen]]',
                gw_log,
            )
            rec["search_next_turn"] = _requests(req_log, mark)
            say(f"search: back in the workspace: {rec['back_after_search']}")

            # 3b''. issue 28: a read of an archived copy where OpenClaw's index has it (the
            # archive in memory.search.extraPaths): its text in that call, its hit counted
            # under the note's own name, and the daemon's check brings the note home
            _archive(cfg, COPY_NOTE, env)
            copy = f"{ARCHIVE_FOLDER}/{COPY_NOTE}"
            _restore_check(cfg, env)  # the daemon's first check: what came before is history
            mark = _lines(req_log)
            agent_turn(
                inst,
                "agent:main:s1",
                f'the heron count? [[call memory_get {{"path": "{copy}"}}]] [[text read]]',
                gw_log,
            )
            rec["copy_read_turn"] = _requests(req_log, mark)
            _memoryd(cfg, env, "scan", "--json")
            db = root / "memoryd-state" / "state.db"
            rec["copy_hits"] = _hit_rows(db, COPY_NOTE) + _hit_rows(db, copy)
            rec["copy_restores"] = _restore_check(cfg, env)
            rec["copy_back"] = (inst.workspace() / COPY_NOTE).is_file()
            rec["copy_left"] = (inst.workspace() / copy).exists()
            say(f"read of an archived copy: back in the workspace: {rec['copy_back']}")

            # 3c. issue 28: a recall with more than 3 matches and a clear winner restores it
            for rel in (*RIVALS, LEADER):
                _archive(cfg, rel, env)
            mark = _lines(req_log)
            agent_turn(
                inst,
                "agent:main:s1",
                'the lantern at quokka bay? [[call memoryd_recall {"query": "lantern quokka"}]] '
                "[[text noted]]",
                gw_log,
            )
            rec["leader_turn"] = _requests(req_log, mark)
            rec["leader_back"] = (inst.workspace() / LEADER).is_file()
            rec["rivals_back"] = [r for r in RIVALS if (inst.workspace() / r).exists()]
            say(f"recall with a clear leader: back {rec['leader_back']}")

            # 4. /memoryd, then /refresh
            _send(inst, "agent:main:s1", "/memoryd", gw_log)
            texts = _wait(
                "/memoryd's reply",
                lambda: [
                    t
                    for t in _assistant_texts(_history(inst, "agent:main:s1", gw_log))
                    if t.startswith("memoryd: daemon")
                ],
            )
            rec["status_reply"] = texts[-1]
            rec["status_json"] = json.loads(
                _memoryd(cfg, env, "status", "--json", timeout=120).stdout
            )
            before_refresh = _history(inst, "agent:main:s1", gw_log)
            sent = time.monotonic()
            _send(inst, "agent:main:s1", "/refresh", gw_log)
            # A reset in place keeps the session id: the history then starts at a reset mark.
            after = _wait(
                "the reset after /refresh",
                lambda: h if _reset_marked(h := _history(inst, "agent:main:s1", gw_log)) else None,
            )
            rec["refresh"] = {
                "messages_before": len(before_refresh.get("messages") or []),
                "messages_after": len(after.get("messages") or []),
                "reset_marked": True,
                "seconds_to_reset": round(time.monotonic() - sent, 1),
                "heron_in_warm": (tiers / "warm" / "heron.md").is_file(),
                "heron_in_hot": (tiers / "hot" / "heron.md").exists(),
                "reply": next(
                    (
                        ln.split("/refresh: ", 1)[1]
                        for ln in _plugin_log(gw_log)
                        if "memoryd: /refresh: " in ln
                    ),
                    "",
                ),
                "reset_logged": any("reset after /refresh" in ln for ln in _plugin_log(gw_log)),
            }
            # The reply as a chat client reads it after the reset: the new session's first
            # message (the plugin puts it there with chat.inject).
            rec["refresh"]["reply_in_history"] = _wait(
                "/refresh's reply in chat.history after the reset",
                lambda: next(
                    (
                        t
                        for t in _assistant_texts(_history(inst, "agent:main:s1", gw_log))
                        if "memoryd refresh:" in t
                    ),
                    None,
                ),
            )
            mark = _lines(req_log)
            agent_turn(inst, "agent:main:s1", "after the refresh [[text fresh]]", gw_log)
            rec["turn_after_refresh"] = _requests(req_log, mark)
            say(
                f"refresh: {rec['refresh']['messages_before']} messages → reset mark "
                f"in {rec['refresh']['seconds_to_reset']} s"
            )

            # 6. latency: unchanged hot notes, then a touched one before each session
            for i in range(sessions):
                agent_turn(inst, f"agent:main:warm{i}", "hi [[text hi]]", gw_log)
            for i in range(sessions // 2):
                zebra = tiers / "hot" / "zebra.md"
                os.utime(zebra, None)
                agent_turn(inst, f"agent:main:cold{i}", "hi [[text hi]]", gw_log)
            reads = " ".join(
                f'[[call memory_get {{"path": "{ARCHIVED}"}}]]' for _ in range(sessions)
            )
            agent_turn(inst, "agent:main:reads", f"read {reads} [[text ok]]", gw_log)
            searches = " ".join(
                '[[call memory_search {"query": "kayak"}]]' for _ in range(sessions)
            )
            agent_turn(inst, "agent:main:searches", f"search {searches} [[text ok]]", gw_log)
            search_ms = _search_hook_ms(_plugin_log(gw_log))
            rec["search_latency"] = {"hook_ms": search_ms, "hook_p95": p95(search_ms)}
            say(f"search hook p95: {p95(search_ms)} ms over {len(search_ms)} memory_search calls")
            read_ms = _read_hook_ms(_plugin_log(gw_log))
            rec["read_latency"] = {"hook_ms": read_ms, "hook_p95": p95(read_ms)}
            say(f"read hook p95: {p95(read_ms)} ms over {len(read_ms)} memory_get calls")
            samples = _hook_ms(_plugin_log(gw_log))
            cached = [ms for how, ms in samples if how.startswith("unchanged")]
            ran = [ms for how, ms in samples if how == "memoryd inject"]
            rec["latency"] = {
                "cached_ms": cached,
                "memoryd_ms": ran,
                "cached_p95": p95(cached),
                "memoryd_p95": p95(ran),
            }
            say(f"latency p95: cached {p95(cached)} ms, memoryd run {p95(ran)} ms")

            # 5. memoryd's config broken
            cfg.write_text("this is [[[ not toml\n")
            log_before = len(_plugin_log(gw_log))
            mark = _lines(req_log)
            broken = agent_turn(inst, "agent:main:broken", "still there? [[text yes]]", gw_log)
            rec["broken"] = {
                "status": broken.get("status"),
                "requests": _requests(req_log, mark),
                "log": _plugin_log(gw_log)[log_before:],
            }
            cfg.write_text(good_cfg)
            say(f"broken config: turn {broken.get('status')}")
            on_until = _lines(req_log)

            # 8. Tool Search off (`tools` hot-applies): the tool's schema in every request
            saved = inst.config_path.read_bytes()
            run_bounded(
                inst.command("config", "set", "tools.toolSearch", "false"), env, 120, gw_log
            )
            off_from = _lines(req_log)
            for i in range(4):  # until the reload has reached the runs
                agent_turn(inst, f"agent:main:off{i}", "hi [[text hi]]", gw_log)
                sent = _requests(req_log, off_from)
                if sent and "tool_search" not in sent[-1]["tools"]:
                    break
                off_from = _lines(req_log)
                time.sleep(5)
            inst.config_path.write_bytes(saved)
            off_until = _lines(req_log)

            # 11. issue 34: /refresh with promote.auto hands the candidates to a sub-session
            # of the agent, memoryd records what landed; restore --last; a failing sub-session
            # (tests/live/promote_live.py, judged there)
            cfg.write_text(good_cfg + "[promote]\nauto = true\n")
            rec["promote"] = promote_live.phases(inst, cfg, env, gw_log, player, say)
            cfg.write_text(good_cfg)

        # what the plugin added to each request, with Tool Search on (everything before the
        # last phase) and off
        rec["cost"] = {
            "on": _cost_summary(cost(_log_lines(req_log, 0, on_until))),
            "off": _cost_summary(cost(_log_lines(req_log, off_from, off_until))),
        }
        for label in ("on", "off"):
            for line in describe(rec["cost"][label], f"cost, Tool Search {label}"):
                say(line)

        # 9. issue 28: memoryd missing: every memory tool call still gets its answer
        missing = str(root / "no-such-memoryd")
        entry_cmd = "plugins.entries.memoryd.config.command"
        run_bounded(inst.command("config", "set", entry_cmd, missing), env, 120, gw_log)
        with Gateway(inst, gw_log):
            log_before = len(_plugin_log(gw_log))
            mark = _lines(req_log)
            turn = agent_turn(
                inst,
                "agent:main:missing",
                f'all three [[call memory_get {{"path": "{ARCHIVED}"}}]] '
                '[[call memory_search {"query": "kayak"}]] '
                '[[call memoryd_recall {"query": "kayak"}]] [[text done]]',
                gw_log,
            )
            rec["missing"] = {
                "status": turn.get("status"),
                "requests": _requests(req_log, mark),
                "log": _plugin_log(gw_log)[log_before:],
            }
        say(f"memoryd missing: turn {turn.get('status')}")

        # 10. issue 29: the venv memoryd runs from is deleted, then made again with the
        # README's command: the gateway starts cleanly, says once what to do, and the plugin
        # works again after `memoryd plugin install`
        rec["venv"] = _venv_phase(inst, root, cfg, env, runtime, gw_log, say)

        # the read note's hits: the read's, counted once
        _memoryd(cfg, env, "scan", "--json")
        rec["read_hits"] = _hit_rows(root / "memoryd-state" / "state.db", READ_NOTE)

        # 7. uninstall: the file as OpenClaw wrote it before the install
        t0 = time.monotonic()
        un = _plugin_command("uninstall", cfg, runtime.openclaw, env)
        after_bytes = inst.config_path.read_bytes()
        rec["uninstall"] = {
            "exit": un.returncode,
            "seconds": round(time.monotonic() - t0, 1),
            "same_bytes": after_bytes == before,
            "before": before.decode(),
            "after": after_bytes.decode(),
        }
        say(f"uninstall: exit {un.returncode}, openclaw.json as before: {after_bytes == before}")
        rec["plugin_log"] = _plugin_log(gw_log)
        _pack_transcripts(root, work / "transcripts.tar.xz")
    return rec


REPO = Path(__file__).resolve().parent.parent.parent
# What the gateway says when a plugin it was told to load is not loadable (the wrong fixes
# 2026.9.6 offered when the plugin lived inside a deleted venv).
LOAD_TROUBLE = ("doctor --fix", "update repair", "upgrade is unfinished", "failed to load")


def _readme_venv(venv: Path, gw_log: Path) -> float:
    """The README's install into ``venv`` (``python3 -m venv .venv && .venv/bin/pip install
    -q .``) from a copy of this clone's package files; seconds taken."""
    src = venv.parent / "memoryd-src"
    if not src.exists():
        src.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            shutil.copy2(REPO / name, src / name)
        shutil.copytree(REPO / "daemon", src / "daemon",
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    t0 = time.monotonic()
    with gw_log.open("a", encoding="utf-8") as out:
        out.write(f"\n$ python3 -m venv {venv} && pip install -q .\n")
        out.flush()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300,
                       stdout=out, stderr=subprocess.STDOUT)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "."], cwd=src, check=True,
                       timeout=900, stdout=out, stderr=subprocess.STDOUT)
    return round(time.monotonic() - t0, 1)


def _gateway_lines(gw_log: Path, since: int) -> list[str]:
    return gw_log.read_text(encoding="utf-8", errors="replace").splitlines()[since:]


def _venv_phase(
    inst: Install, root: Path, cfg: Path, env: dict[str, str], runtime: Runtime,
    gw_log: Path, say: Any,
) -> dict[str, Any]:
    """Issue 29: the plugin installed by a venv's memoryd; the venv deleted (a gateway start:
    no load trouble, one warning that says what to do, ``/memoryd`` says it too); the venv
    made again with the README's command and ``memoryd plugin install`` run again (a gateway
    start without trouble, a new session gets the hot notes)."""
    venv = root / "venv"
    out: dict[str, Any] = {"seconds_install": _readme_venv(venv, gw_log)}
    program = venv / "bin" / "memoryd"
    install = subprocess.run(
        [str(program), "--config", str(cfg), "plugin", "install", "--json",
         "--openclaw", str(runtime.openclaw)],
        env=env, capture_output=True, text=True, timeout=1200,
    )
    out["install_exit"] = install.returncode
    out["command"] = ((json.loads(inst.config_path.read_text()).get("plugins") or {})
                      .get("entries", {}).get("memoryd", {}).get("config", {}).get("command"))
    shutil.rmtree(venv)
    since = len(_gateway_lines(gw_log, 0))
    with Gateway(inst, gw_log):
        _send(inst, "agent:main:venv-gone", "/memoryd", gw_log)
        texts = _wait(
            "/memoryd's reply with the venv gone",
            lambda: [
                t for t in _assistant_texts(_history(inst, "agent:main:venv-gone", gw_log))
                if t.startswith("memoryd")
            ],
        )
        out["gone_reply"] = texts[-1]
    gone = _gateway_lines(gw_log, since)
    out["gone_warnings"] = [ln.strip() for ln in gone
                            if "[plugins]" in ln and "memoryd:" in ln and "is missing" in ln]
    out["gone_trouble"] = [ln.strip() for ln in gone if any(t in ln for t in LOAD_TROUBLE)]
    say(f"venv deleted: {len(out['gone_warnings'])} warning(s), "
        f"{len(out['gone_trouble'])} load trouble line(s)")
    out["seconds_reinstall"] = _readme_venv(venv, gw_log)
    again = subprocess.run(
        [str(program), "--config", str(cfg), "plugin", "install", "--json",
         "--openclaw", str(runtime.openclaw)],
        env=env, capture_output=True, text=True, timeout=1200,
    )
    out["reinstall_exit"] = again.returncode
    since = len(_gateway_lines(gw_log, 0))
    req_log = root / "requests.jsonl"
    with Gateway(inst, gw_log):
        mark = _lines(req_log)
        agent_turn(inst, "agent:main:venv-again", "hello again [[text hi]]", gw_log)
        first = _requests(req_log, mark)
        out["again_hot_notes"] = bool(first) and first[0]["body_has_hot_mark"]
    again_lines = _gateway_lines(gw_log, since)
    out["again_trouble"] = [ln.strip() for ln in again_lines
                            if any(t in ln for t in LOAD_TROUBLE)
                            or ("memoryd:" in ln and "is missing" in ln)]
    say(f"venv made again, plugin install exit {again.returncode}: hot notes in the new "
        f"session: {out['again_hot_notes']}")
    return out


def _cost_summary(c: dict[str, Any]) -> dict[str, Any]:
    """The cost without its per-request rows (the request log keeps those)."""
    return {k: v for k, v in c.items() if k != "rows"}


def _hit_rows(db: Path, rel: str) -> list[dict[str, Any]]:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT agent, kind, memory_path FROM hits WHERE memory_path = ?", (rel,)
        ).fetchall()
    finally:
        conn.close()
    return [{"agent": a, "kind": k, "path": p} for a, k, p in rows]


def _pack_transcripts(root: Path, dest: Path) -> None:
    """OpenClaw's session store of the run (for the scanner replay) and the workspace."""
    with tarfile.open(dest, "w:xz", preset=9) as tar:
        for path in sorted((root / "state" / "agents").rglob("*")):
            if path.is_file() and not path.is_symlink():
                tar.add(path, arcname=str(path.relative_to(root)), recursive=False)
        for path in sorted((root / "ws").rglob("*")):
            if path.is_file() and not path.is_symlink():
                tar.add(path, arcname=str(path.relative_to(root)), recursive=False)


PLUGIN_API = (2026, 8, 1)  # the plugin's openclaw.compat.pluginApi floor


def supported(runtime: Runtime) -> bool:
    """Whether this OpenClaw takes the plugin (its plugin API floor)."""
    return version_key(runtime.version) >= PLUGIN_API


def check(runtime: Runtime, work: Path, say: Any = print) -> int:
    """The live check as ``python -m tests.live check`` runs it: 0 when it passes, else 1."""
    rec = record(runtime, work, say, sessions=CHECK_SESSIONS)
    (work / "plugin-record.json").write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    found = problems(rec) + [f"promotion: {p}" for p in promote_live.problems(rec["promote"])]
    for p in found:
        say(f"FAIL plugin {runtime.version}: {p}")
    if not found:
        lat = rec["latency"]
        say(
            f"ok   plugin {runtime.version}: hot notes, recall from the archive, /refresh, "
            f"/memoryd, broken config, uninstall (injection p95 {lat['cached_p95']} ms cached, "
            f"{lat['memoryd_p95']} ms with memoryd run); promotion through a sub-session, "
            f"restore --last, a failing sub-session ({rec['promote']['refresh_seconds']} s + "
            f"{rec['promote']['failed_seconds']} s)"
        )

    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.live.plugin_live")
    parser.add_argument("command", choices=("record", "check"))
    parser.add_argument("--version", default=NEWEST)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    runtime = ensure_openclaw(args.version)
    work = Path(tempfile.mkdtemp(prefix="memoryd-plugin-live-"))
    try:
        rec = record(runtime, work, say=lambda s: print(s, flush=True))
        found = problems(rec) + [f"promotion: {p}" for p in promote_live.problems(rec["promote"])]
        for p in found:
            print(f"FAIL plugin: {p}", flush=True)
        if args.command == "record":
            dest = FIXTURE_DIR / runtime.version
            dest.mkdir(parents=True, exist_ok=True)
            (dest / "record.json").write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
            shutil.copy2(work / "transcripts.tar.xz", dest / "transcripts.tar.xz")
            # what bench/bench_plugin_cost.py reads
            log = work / "plugin-live" / "requests.jsonl"
            with lzma.open(dest / "requests.jsonl.xz", "wb", preset=9) as out:
                out.write(log.read_bytes())
            print(f"recorded {dest}")
        print("ok   plugin live check" if not found else f"{len(found)} problem(s)")
        return 1 if found else 0
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
