"""memoryd against a fixture: scan the unpacked copy, compare the counts with the truth.

Used by the replay test (every committed fixture, no Node needed) and by the live run
(fresh recordings). memoryd runs as a real process (``python -m memoryd``) with a config of
its own whose state folder is outside the copy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .truth import LEFT_OUT_RUNS

# Routes of memory calls memoryd does not count yet: a fixture with a hit made this way is
# expected to differ (a strict xfail). Empty since the `shapes` branch (issue 20) counts
# Tool Search's ``tool_call`` and code mode.
KNOWN_GAPS: frozenset[str] = frozenset()


# Agent-store schemas whose healthy stores memoryd still warns about. Empty since the archive
# tables of schemas 19 and 23 are read without a warning (issue 20).
KNOWN_WARNING_SCHEMAS: frozenset[int | None] = frozenset()


# Agent-store schemas memoryd takes for a failed source. Empty since 2026.7's agent database
# (`user_version` 1, no transcripts) is no source (issue 20, the `shapes` branch).
KNOWN_FAILED_STORE_SCHEMAS: frozenset[int | None] = frozenset()


def scan_fails_today(truth: dict[str, Any]) -> bool:
    """Whether memoryd is known to call this install's agent database a failed source."""
    return truth.get("agent_schema") in KNOWN_FAILED_STORE_SCHEMAS


def expected_to_differ(truth: dict[str, Any]) -> bool:
    """Whether a fixture holds a hit memoryd cannot count yet (see KNOWN_GAPS)."""
    return any(c["route"] in KNOWN_GAPS and c["files"] for c in truth["calls"])


def known_routes_only(truth: dict[str, Any]) -> dict[str, Any]:
    """The truth without the hits made through KNOWN_GAPS routes: what memoryd must count
    exactly today (no more: a hit of an unknown route counted is as wrong as one missed)."""
    hits = {agent: dict.fromkeys(files, 0) for agent, files in truth["hits"].items()}
    for call in truth["calls"]:
        if call.get("run") in LEFT_OUT_RUNS:
            continue  # a heartbeat or cron turn: not counted by default (truth.LEFT_OUT_RUNS)
        if call["route"] not in KNOWN_GAPS:
            for path in call["files"]:
                hits[call["agent"]][path] += 1
    return {**truth, "hits": hits}


@dataclass
class Outcome:
    """What memoryd said about one fixture."""

    scan_code: int
    scan: dict[str, Any]
    rescan_code: int
    rescan: dict[str, Any]
    hits: dict[str, dict[str, int]]  # agent -> file -> hits
    stderr: str

    def problems(self, truth: dict[str, Any], exit_code: bool = True) -> list[str]:
        """Every way this outcome differs from the truth (empty: exact); ``exit_code``
        False leaves the scan's exit code out (the counts still must be exact)."""
        out = []
        if exit_code and self.scan_code != 0:
            failed = self.scan.get("failed_sources")
            out.append(f"scan exited {self.scan_code}: failed_sources={failed}")
        if self.rescan.get("new_hits", 0) != 0:
            out.append(f"a rescan added {self.rescan.get('new_hits')} hits")
        for agent, want in truth["hits"].items():
            got = self.hits.get(agent, {})
            diff = {p: (want.get(p), got.get(p)) for p in sorted(set(want) | set(got))
                    if want.get(p, 0) != got.get(p, 0)}
            if diff:
                out.append(f"agent {agent}: (truth, memoryd) differ: {diff}")
        return out


def write_config(copy: Path, md_state: Path) -> Path:
    cfg = md_state.parent / (md_state.name + ".toml")
    md_state.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f"[openclaw]\nstate_dir = {json.dumps(str(copy / 'state'))}\n"
                   f"[state]\ndir = {json.dumps(str(md_state))}\n", encoding="utf-8")
    return cfg


def memoryd(cfg: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "MEMORYD_"))}
    env["MEMORYD_CONFIG"] = str(cfg)
    return subprocess.run([sys.executable, "-m", "memoryd", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def _scan(cfg: Path) -> tuple[int, dict[str, Any], str]:
    proc = memoryd(cfg, "scan", "--json")
    if "Traceback" in proc.stderr:
        raise AssertionError(f"memoryd scan crashed:\n{proc.stderr[-3000:]}")
    try:
        return proc.returncode, json.loads(proc.stdout), proc.stderr
    except ValueError:
        raise AssertionError(f"scan exited {proc.returncode} without JSON:\n"
                             f"{proc.stdout[-800:]}\n{proc.stderr[-2000:]}") from None


def hits_of(cfg: Path, agent: str) -> dict[str, int]:
    proc = memoryd(cfg, "hits", "--all", "--json", "--no-scan", "--agent", agent)
    if proc.returncode != 0:
        raise AssertionError(
            f"hits --agent {agent} exited {proc.returncode}: {proc.stderr[-1500:]}")
    doc = json.loads(proc.stdout)
    got = {f["path"]: f["hits"] for f in doc["files"]}
    got.update({(n["path"] if isinstance(n, dict) else n): 0 for n in doc["never_hit"]})
    return got


def scan_copy(copy: Path, md_state: Path, agents: list[str]) -> Outcome:
    """Scan an unpacked copy twice with a memoryd of its own; the hits per agent."""
    cfg = write_config(copy, md_state)
    code, summary, err = _scan(cfg)
    code2, summary2, err2 = _scan(cfg)
    hits = {a: hits_of(cfg, a) for a in agents}
    return Outcome(code, summary, code2, summary2, hits, err + err2)
