"""A check to run by hand after changing how expire plans (it needs this repository's git
history, so it is not in the test suite):
``.venv/bin/python -m pytest -q bench/plan_against_base.py``.

The expire plan is the one the code before ``fastread`` made, on generated workspaces.

``fastread`` changed how the plan learns which hits are strong (the top score per call
instead of a rank per row: :func:`memoryd.strength.strong_flags`), how it gathers hit
times (``hit_times_by_file``), and counts the score's recent queries in SQL. expire moves
people's notes, so every file's verdict, rule, reason and chance must be what it was.

The code before is the repository's own at two commits, ``git archive``-d to a temporary
folder and run in a subprocess (one worker per commit, fed workspace after workspace):

* ``e3c5ddf``, fastread's base, with a Mac's folding (``MEMORYD_FS_TRAITS=macos``): the
  same file under two spellings in one call, a read under another spelling;
* ``a2dcecb``, before pathmatch, with exact names (``MEMORYD_FS_TRAITS=exact``; it knows
  no folding, so a plan on a folding file system is not comparable with it).

Workspaces come from hypothesis: ties in score, unknown scores, several results of one
call and a call of one result, reads before, at and after the search and at exactly the
clock-skew horizon, hits at window edges, agents of another workspace, pruning and
capacity on (the score reads the recent queries). Real files, real SQLite.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd import signals as signals_module
from memoryd.config import EXPIRE_POLICIES, parse_config, resolve_paths
from memoryd.policy.expire_plan import build_plan, planned_decision_of
from memoryd.signals import CLOCK_SKEW, snapshot
from memoryd.store import Store

DAY = 86400.0
NOW = 1_793_700_000.0  # 2026-11-03
REPO = Path(__file__).resolve().parents[1]
BASES = {"e3c5ddf": "macos", "a2dcecb": "exact"}  # commit → the file system's traits

# Listed names, and the spellings a transcript may give them (a Mac opens each).
CAFE = unicodedata.normalize("NFC", "memory/café.md")
LISTED = ["MEMORY.md", "memory/2026-10-01.md", "memory/Topic-a.md", "memory/topic-b.md", CAFE]
SPELLINGS = {
    "MEMORY.md": ["MEMORY.md", "memory.MD"],
    "memory/2026-10-01.md": ["memory/2026-10-01.md"],
    "memory/Topic-a.md": ["memory/Topic-a.md", "memory/topic-A.md", "memory/TOPIC-A.md"],
    "memory/topic-b.md": ["memory/topic-b.md", "memory/Topic-B.md"],
    CAFE: [CAFE, unicodedata.normalize("NFD", CAFE), "memory/CAFÉ.md"],
}
GONE = "memory/gone.md"  # a deleted note's hits
# Times at the edges: now, the skew horizon and past it, the 7/14/30/60-day windows.
TIMES = [NOW - d * DAY for d in (0, 0.5, 7, 13.99, 14, 30, 45, 60, 61, 120, 400)] + [
    NOW + CLOCK_SKEW / 2,
    NOW + CLOCK_SKEW,
    NOW + CLOCK_SKEW + 1,
]
READ_AFTER = [-DAY, -1.0, 0.0, 1.0, DAY]  # a read before, at, after the search

_result = st.tuples(
    st.sampled_from(range(len(LISTED) + 1)),  # a listed file, or the deleted note
    st.integers(0, 2),  # which spelling
    st.sampled_from([0.2, 0.5, 0.5, 0.9, 0.9, None]),  # ties; unknown
    st.one_of(st.none(), st.sampled_from(READ_AFTER), st.just("horizon")),
    st.sampled_from(["s1", "s1", "s2"]),  # the read's session (s2: another one)
)
_call = st.tuples(
    st.sampled_from(["main", "main", "ops"]),
    st.sampled_from(TIMES),
    st.sampled_from(["s1", "s1", "s2", None, ""]),
    st.sampled_from(["q1", "Q1", " q1 ", "q2", "", None]),
    st.one_of(st.lists(_result, min_size=1, max_size=5), st.tuples(_result).map(list)),
    st.booleans(),  # a get instead of a search
)
_workspace = st.fixed_dictionaries(
    {
        "ages": st.lists(st.sampled_from([1, 20, 90, 400]), min_size=5, max_size=5),
        "calls": st.lists(_call, min_size=1, max_size=40),
        "ops_elsewhere": st.booleans(),  # ops an agent of another workspace
        "marked": st.sampled_from([None, "memory/topic-a.md", "memory/topic-b.md"]),
    }
)


def _write(state: Path, spec: dict) -> None:
    """The state folder (workspace, agents, state database) a spec describes."""
    ws = state / "workspace"
    (ws / "memory").mkdir(parents=True)
    for agent in ("main", "ops") if spec["ops_elsewhere"] else ("main",):
        (state / "agents" / agent / "sessions").mkdir(parents=True)
    if spec["ops_elsewhere"]:  # ops keeps its memory in a workspace of its own
        (state / "ops-workspace").mkdir()
        roster = {
            "defaults": {"workspace": str(ws)},
            "entries": {"ops": {"workspace": str(state / "ops-workspace")}},
        }
        (state / "openclaw.json").write_text(json.dumps({"agents": roster}))
    for rel, age in zip(LISTED, spec["ages"], strict=True):
        p = ws / rel
        p.write_text(f"# {rel}\ntags: #q1\nq1 q2 words\n")
        os.utime(p, (NOW - age * DAY, NOW - age * DAY))
    rows: dict[tuple[str, str, str], tuple] = {}
    for n, (agent, ts, session, query, results, is_get) in enumerate(spec["calls"]):
        for k, (f, spelling, score, read, read_session) in enumerate(results):
            names = SPELLINGS[LISTED[f]] if f < len(LISTED) else [GONE]
            path = names[spelling % len(names)]
            if is_get:
                row = (agent, f"g{n}-{k}", path, "get", ts, None, None, session)
            else:
                row = (agent, f"c{n}", path, "search", ts, query, score, session)
            rows.setdefault(row[:3], row)
            if read is not None and not is_get:
                at = NOW + CLOCK_SKEW if read == "horizon" else ts + read
                get = (agent, f"r{n}-{k}", path, "get", at, None, None, read_session)
                rows.setdefault(get[:3], get)
    with Store.open(state / "memoryd" / "state.db") as store, store.transaction():
        store.conn.executemany(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query, score, session) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            list(rows.values()),
        )
        if spec["marked"]:
            store.set_mark(spec["marked"], "marked")


def _configs(state: Path) -> list[dict]:
    base = {"openclaw": {"state_dir": str(state)}}
    out = [{**base, "expire": {"policy": p}} for p in EXPIRE_POLICIES]
    pruning = {"prune_enabled": True, "prune_threshold": 0.55, "max_prune_fraction": 0.6}
    capacity = {"capacity_enabled": True, "capacity": 3, "max_prune_fraction": 0.6}
    out.append({**base, "expire": {"policy": "likely"}, "score": pruning})
    out.append({**base, "expire": {"policy": "seed"}, "score": capacity})
    return out


_WORKER = """
import json, os, sys
os.environ["MEMORYD_FS_TRAITS"] = sys.argv[1]
import memoryd
from memoryd import signals as signals_module
from memoryd.config import parse_config, resolve_paths
from memoryd.policy.expire_plan import build_plan
from memoryd.signals import snapshot
from memoryd.store import SCHEMA_VERSION, Store
print(json.dumps({"file": memoryd.__file__, "schema": SCHEMA_VERSION}), flush=True)
for line in sys.stdin:
    job = json.loads(line)
    cfg = parse_config(job["raw"])
    paths = resolve_paths(cfg, {})
    with Store.open(paths.db) as store:
        snap = snapshot(cfg, paths, store, job["now"])
        if "days" in job:  # the score's recent queries
            print(json.dumps([snap.recent_queries(d) for d in job["days"]]), flush=True)
            continue
        plan = build_plan(cfg, snap)
    print(json.dumps(plan.as_dict()), flush=True)
"""


class OldCode:
    """memoryd at ``commit``, in a worker process that plans workspace after workspace."""

    def __init__(self, commit: str, traits: str, folder: Path) -> None:
        archive = folder / f"{commit}.tar"
        with archive.open("wb") as out:
            subprocess.run(
                ["git", "-C", str(REPO), "archive", commit, "daemon"], stdout=out, check=True
            )
        with tarfile.open(archive) as tar:
            tar.extractall(folder / commit, filter="data")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
        env["PYTHONPATH"] = str(folder / commit / "daemon")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER, traits],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=folder,
        )  # fmt: skip
        hello = json.loads(self.proc.stdout.readline())
        assert hello["file"].startswith(str(folder / commit)), hello  # the old code runs
        self.schema = hello["schema"]
        self.commit, self.traits = commit, traits

    def plan(self, state: Path, raw: dict) -> dict:
        """The old code's plan of a copy of ``state`` (its database set to the schema that
        code knows: the later migrations add tables the plan never reads)."""
        doc = self._ask(state, {"raw": raw, "now": NOW})
        doc["workspace"] = str(state / "workspace")
        return doc

    def recent_queries(self, state: Path, raw: dict, days: list[float]) -> list[list[str]]:
        """The old code's recent queries over ``days`` windows (a pass over every hit)."""
        return self._ask(state, {"raw": raw, "now": NOW, "days": days})

    def _ask(self, state: Path, job: dict):
        copy = state.parent / f"{state.name}-{self.commit}"
        if not copy.exists():
            shutil.copytree(state, copy)  # (copy2: the notes' mtimes kept)
            with sqlite3.connect(copy / "memoryd" / "state.db") as conn:
                conn.execute(f"PRAGMA user_version = {self.schema}")
        job["raw"] = {**job["raw"], "openclaw": {"state_dir": str(copy)}}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the old code's worker stopped"
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture(scope="module")
def old_code(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, OldCode]]:
    folder = tmp_path_factory.mktemp("old-code")
    workers = {c: OldCode(c, traits, folder) for c, traits in BASES.items()}
    yield workers
    for w in workers.values():
        w.close()


def _new_plan(state: Path, raw: dict, traits: str) -> dict:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMORYD_FS_TRAITS", traits)
        cfg = parse_config(raw)
        paths = resolve_paths(cfg, {})
        with Store.open(paths.db) as store:
            return build_plan(cfg, snapshot(cfg, paths, store, NOW)).as_dict()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=_workspace)
def test_the_plan_is_the_one_the_code_before_made(
    old_code: dict[str, OldCode], tmp_path_factory: pytest.TempPathFactory, spec: dict
) -> None:
    state = tmp_path_factory.mktemp("ws") / "oc"
    _write(state, spec)
    for raw in _configs(state):
        for worker in old_code.values():
            assert _new_plan(state, raw, worker.traits) == worker.plan(state, raw), (
                worker.traits,
                raw.get("expire"),
                raw.get("score"),
            )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=_workspace)
def test_explains_verdict_is_the_plans_on_these_workspaces(
    tmp_path_factory: pytest.TempPathFactory, spec: dict
) -> None:
    """``explain``'s verdict (one file's rows read alone) is the plan's for every file, on
    the same edges, the Mac's folding and another workspace's agent included."""
    state = tmp_path_factory.mktemp("ws") / "oc"
    _write(state, spec)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMORYD_FS_TRAITS", "macos")
        for raw in _configs(state):
            cfg = parse_config(raw)
            paths = resolve_paths(cfg, {})
            with Store.open(paths.db) as store:
                plan = build_plan(cfg, snapshot(cfg, paths, store, NOW))
                shown = {i.path: ("archive", i.rule, i.reason, i.p_need) for i in plan.archive}
                shown.update({i.path: ("keep", i.rule, i.reason, i.p_need) for i in plan.keep})
                for rel in LISTED:
                    d = planned_decision_of(cfg, snapshot(cfg, paths, store, NOW), rel)
                    got = (d.action, d.rule, d.reason, d.numbers.get("p_need"))
                    assert got == shown[rel], (rel, raw.get("expire"), raw.get("score"))


WINDOWS = [0.0, 0.5, 7.0, 14.0, 30.0, 60.0, 400.0, -1.0]  # days; hits at each edge


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=_workspace)
def test_recent_queries_are_those_the_code_before_counted(
    old_code: dict[str, OldCode], tmp_path_factory: pytest.TempPathFactory, spec: dict
) -> None:
    """The score's recent queries by SQL, under either of its query plans, are what the
    pass over every hit gave: hits at a window's very edge and at the skew horizon, the
    same query in another case or with spaces, NULL and empty queries, another
    workspace's agent (left out), a deleted note's calls."""
    state = tmp_path_factory.mktemp("ws") / "oc"
    _write(state, spec)
    raw = {"openclaw": {"state_dir": str(state)}}
    for worker in old_code.values():
        before = worker.recent_queries(state, raw, WINDOWS)
        for share in (0.0, 1.0):  # the window's rows by the ts index / by the calls' key
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("MEMORYD_FS_TRAITS", worker.traits)
                mp.setattr(signals_module, "RECENT_BY_TS_MAX", share)
                cfg = parse_config(raw)
                paths = resolve_paths(cfg, {})
                with Store.open(paths.db) as store:
                    snap = snapshot(cfg, paths, store, NOW)
                    now = [snap.recent_queries(days) for days in WINDOWS]
            assert now == before, (worker.commit, share)
