"""The deciding commands at the speed of reading (issue 32, item 2), with the same decisions.

What the replay builds for every file at every run (its view of the hits and their
strength as known then, the bursts of hits) is held to a plain step-by-step reference on
generated histories; the calibration a dry run learns is saved, reused by the next
command with the same plan, and learned again once new verdicts are due. Real SQLite,
real files; the commands run as ``python -m memoryd`` would (:mod:`support.inprocess`).
"""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path

import pytest

from memoryd.own_history import LEARNED_FILE
from memoryd.policy import candidates as pc
from memoryd.policy import replay as rp
from support.histories import GenParams, generate, replay_inputs, write_history
from support.inprocess import memoryd as run_memoryd

pytestmark = pytest.mark.unit
DAY = 86400.0


def _naive_episodes(times: list[float], gap: float = DAY) -> list[float]:
    out: list[float] = []
    last = -math.inf
    for ts in times:
        if ts - last >= gap:
            out.append(ts)
        last = ts
    return out


def test_bursts_are_those_of_a_step_by_step_walk() -> None:
    rng = random.Random(5)
    for _ in range(300):
        t, times = rng.uniform(-5, 5) * DAY, []
        for _ in range(rng.randint(0, 40)):
            t += rng.choice((0.0, DAY, DAY - 1e-6, DAY + 1e-6, rng.uniform(0, 3 * DAY)))
            times.append(t)
        for gap in (DAY, 0.0, 2.5 * DAY):
            assert pc.episodes(times, gap) == _naive_episodes(times, gap)
            assert pc.episodes(tuple(times), gap) == _naive_episodes(times, gap)


def _naive_views(
    files: list[rp.ReplayFile], hits: list[rp.ReplayHit], t: float
) -> dict[str, pc.FileView]:
    """What a policy sees at ``t``, written from the protocol (docs/simulate.md)."""
    out = {}
    for f in files:
        if f.created > t:
            continue
        seen = sorted((h for h in hits if h.path == f.path and h.ts <= t), key=lambda h: h.ts)
        out[f.path] = pc.FileView(
            f.path, f.kind, f.created, t, tuple(h.ts for h in seen),
            tuple(h.ts for h in seen if h.strong_at(t)),
        )  # fmt: skip
    return out


@pytest.mark.parametrize("seed", [3, 11])
def test_each_run_sees_each_hit_as_strong_as_it_was_known_then(seed: int) -> None:
    h = generate(seed, GenParams(days=150, one_offs=30, references=8, projects=5))
    inp = replay_inputs(h)
    files, hits = inp["files"], inp["hits"]
    assert any(x.read_at is not None and x.read_at > x.ts for x in hits)  # reads come later
    by_path: dict[str, list[rp.ReplayHit]] = {}
    for x in hits:
        by_path.setdefault(x.path, []).append(x)
    for lst in by_path.values():
        lst.sort(key=lambda x: x.ts)
    prepared = {p: rp.PathHits(lst) for p, lst in by_path.items()}
    # every run, and the moments a read turns a hit strong (at, and just before)
    moments = [*inp["runs"], *(x.read_at for x in hits[::40] if x.read_at is not None)]
    moments += [m - 1e-3 for m in moments[-20:]]
    sliced = 0
    for t in moments:
        views = rp._views(files, prepared, t)
        assert views == _naive_views(files, hits, t)
        for v in views.values():  # the bursts the replay hands in: those of the times seen
            assert v.bursts is not None and list(v.bursts) == _naive_episodes(list(v.times))
            if v.strong_bursts is not None:  # (a prefix of the strong ones: taken as a slice)
                assert list(v.strong_bursts) == _naive_episodes(list(v.strong))
                sliced += 1
            assert pc.likely_features(v) == pc.likely_features(
                pc.FileView(v.path, v.kind, v.created, v.t, v.times, v.strong))  # fmt: skip
    assert sliced > len(moments)
    # and a read pending at a run (a hit seen, read later) is picked one by one
    pending = [x for x in hits if x.read_at is not None and x.read_at > x.ts
               and not x.strong_at(x.ts)]  # fmt: skip
    assert pending
    x = pending[0]
    f = next(f for f in files if f.path == x.path)
    t = (x.ts + x.read_at) / 2
    v = prepared[x.path].view(f, t)
    assert v.strong_bursts is None and x.ts in v.times and not x.strong_at(t)
    assert v == _naive_views([f], hits, t)[f.path]


# --------------------------------------------------------------------------- the saved calibration


def _install(tmp_path: Path) -> tuple[dict[str, str], Path, float]:
    h = generate(7)  # a year the calibration learns on (test_simulate)
    state = tmp_path / "oc"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    write_history(h, state / "workspace", state / "memoryd" / "state.db")
    cfg = tmp_path / "memoryd.toml"
    cfg.write_text('[expire]\nprotect = []\n[schedule]\ntimezone = "UTC"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(HOME=str(tmp_path), OPENCLAW_STATE_DIR=str(state), MEMORYD_CONFIG=str(cfg))
    return env, state / "memoryd" / LEARNED_FILE, h.end


def _dry_run(env: dict[str, str], now: float) -> dict[str, object]:
    out = run_memoryd(["expire", "--dry-run", "--no-scan", "--json"],
                      env={**env, "MEMORYD_NOW": str(now)})  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.subprocess
def test_a_dry_run_saves_what_it_learned_and_the_next_command_reuses_it(tmp_path: Path) -> None:
    env, saved, now = _install(tmp_path)
    first = _dry_run(env, now)
    assert "calibrated on" in json.dumps(first)  # it learned from the user's verdicts
    doc = json.loads(saved.read_text())
    assert doc["at"] == now and doc["calibrated"]
    # the next command decides with the saved calibration: the same plan…
    again = _dry_run(env, now)
    assert again == first
    assert json.loads(saved.read_text())["at"] == now  # … not learned again
    # … and it is the saved one that decides (a cut edited into it shows in the plan)
    saved.write_text(json.dumps({**doc, "cut": 0.999}))
    edited = _dry_run(env, now)
    assert len(edited["archive"]) > len(first["archive"])  # type: ignore[arg-type]
    # explain reads it too (its chance is the plan's)
    path = first["archive"][0]["path"]  # type: ignore[index]
    out = run_memoryd(["explain", path, "--no-scan", "--json"],
                      env={**env, "MEMORYD_NOW": str(now)})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["expire"]["action"] == "archive"
    # damaged (a time that is no time, or none a clock reads): learned again, never a crash
    for at in (float("nan"), -1e12, -1e300, -1.0):
        saved.write_text(json.dumps({**doc, "at": at}))
        assert _dry_run(env, now) == first and json.loads(saved.read_text())["at"] == now
    # removed: learned again, the same plan as the first time
    saved.unlink()
    assert _dry_run(env, now) == first and json.loads(saved.read_text())["at"] == now


@pytest.mark.subprocess
def test_status_before_any_run_says_what_the_dry_run_decides_with(tmp_path: Path) -> None:
    """A first install on a year of transcripts: ``expire`` printed "calibrated on 1365 of
    your own past verdicts", ``status`` beside it "the generic model's chance until 200 past
    verdicts over 3 runs are known" and "not calibrated on your history yet". Before any
    run, status says what the last dry run learned, and knows nothing it was not told."""
    env, _saved, now = _install(tmp_path)
    at = {**env, "MEMORYD_NOW": str(now)}
    before = run_memoryd(["status", "--json"], env=at)
    assert before.returncode == 0, before.stderr
    chance = json.loads(before.stdout)["expire"]["chance"]
    assert "until 200 past verdicts" not in chance["text"]
    assert "not calibrated" not in chance["shown_as"]
    plan = _dry_run(env, now)
    out = run_memoryd(["status"], env=at)
    assert out.returncode == 0, out.stderr
    [line] = [x for x in out.stdout.splitlines() if x.startswith("chance:")]
    source = str(plan["chance_source"])
    assert source.startswith("calibrated on ") and line.startswith("chance:      calibrated on")
    verdicts = source.split()[2]
    assert f"calibrated on {verdicts} of your past verdicts" in line
    assert "a dry run" in line and "no expire run has decided yet" in line
    shown = out.stdout.splitlines()[out.stdout.splitlines().index(line) + 1].strip()
    assert shown.startswith("chances ") and shown.removeprefix("chances ") in source


@pytest.mark.subprocess
def test_the_saved_calibration_is_learned_again_once_new_verdicts_are_due(tmp_path: Path) -> None:
    env, saved, now = _install(tmp_path)
    _dry_run(env, now)
    doc = json.loads(saved.read_text())
    saved.write_text(json.dumps({**doc, "cut": 0.999}))  # marks the saved one
    # 40 days on, a monthly run (04:00 on the 1st) has come within SHORT_BY of its 60 days:
    # learning now knows more, so the saved calibration is not reused
    later = now + 40 * DAY
    plan = _dry_run(env, later)
    redone = json.loads(saved.read_text())
    assert redone["at"] == later and redone["cut"] != 0.999
    saved.unlink()
    assert _dry_run(env, later) == plan  # what learning from scratch gives
    # another schedule (or target, floor, protection): learned again too
    cfg = Path(env["MEMORYD_CONFIG"])
    saved.write_text(json.dumps({**redone, "cut": 0.999}))
    cfg.write_text(cfg.read_text().replace('"UTC"', '"UTC"\nexpire = "0 4 * * 1"'))
    _dry_run(env, later)
    assert json.loads(saved.read_text())["cut"] != 0.999


@pytest.mark.subprocess
def test_a_dry_run_on_a_new_install_saves_nothing(tmp_path: Path) -> None:
    env, saved, now = _install(tmp_path)
    (tmp_path / "oc" / "memoryd" / "state.db").unlink()
    _dry_run(env, now)
    assert not saved.exists() and not (tmp_path / "oc" / "memoryd" / "state.db").exists()


@pytest.mark.subprocess
def test_simulate_reuses_the_saved_calibration_for_its_now_line_with_the_same_table(
    tmp_path: Path,
) -> None:
    env, saved, now = _install(tmp_path)
    run = {**env, "MEMORYD_NOW": str(now)}
    learned = run_memoryd(["simulate", "--no-scan", "--json"], env=run)
    assert learned.returncode == 0, learned.stderr
    assert json.loads(saved.read_text())["at"] == now  # it saved what it learned
    reused = run_memoryd(["simulate", "--no-scan", "--json"], env=run)
    assert reused.stdout == learned.stdout
    assert json.loads(learned.stdout)["chance_now"]["calibrated"]
    # the dry run after it decides with what simulate learned: the plan learning gives
    plan = _dry_run(env, now)
    saved.unlink()
    assert _dry_run(env, now) == plan


def _restore_index_scoring_every_note(calls: list, texts: dict[str, str]) -> list[list]:
    """simulate's restore candidates as the protocol says them: every note scored against
    every query (docs/simulate.md), the ones at or above the threshold, best first."""
    from memoryd.policy.restore_match import (
        RESTORE_THRESHOLD,
        document_frequency,
        match_score,
        names_it,
    )

    df = document_frequency(texts.values())
    out = []
    for call in calls:
        scored = [(p, match_score(call.query, t)) for p, t in texts.items()]
        out.append(sorted(((p, s, names_it(call.query, texts[p], df)) for p, s in scored
                           if s >= RESTORE_THRESHOLD), key=lambda ps: (-ps[1], ps[0])))  # fmt: skip
    return out


@pytest.mark.parametrize("seed", [2, 9])
def test_simulate_finds_the_same_restore_candidates_as_scoring_every_note(seed: int) -> None:
    """Only the notes holding enough of a query's words are scored; the candidates (and
    so every restore simulate replays) are those of scoring every note, on the generated
    queries and on made-up ones: a tag lifting a note, a query of one word, of none."""
    from types import SimpleNamespace

    from support.reference_rules import restore_index

    inp = replay_inputs(generate(seed, GenParams(days=120)))
    texts = dict(inp["texts"])
    texts["memory/tagged.md"] = "---\ntags: [kubernetes, rollout]\n---\nnotes about kubernetes\n"
    # tags a query word matches only as a part (a tag in the word, the word in a tag), tags
    # too long for their parts to be listed, a word far longer than any tag, CJK tags: each
    # query below reaches the threshold only by its tag share (half its words in the note)
    texts["memory/parts.md"] = "tags: kube, deployments, zebraherd, x, 部署\nkube deploy notes\n"
    texts["memory/long-tag.md"] = (
        "tags: " + "observability" * 3 + ", " + "pipeline" * 4 + "\npipeline notes\n"
    )
    rng = random.Random(seed)
    vocab = sorted({w for t in texts.values() for w in t.split() if w.isalpha()})
    made = ["kubernetes rollout plan", "kubernetes", "", "the and of", "rollout zzz yyy xxx"]
    made += [" ".join(rng.sample(vocab, rng.randint(1, 7))) for _ in range(300)]
    parts = ["deploy zebra", "kubelet deploy", "deploy " + "k" * 120 + "kube", "部署 zebra",
             "observ pipeline", "observabilityobservability pipeline"]  # fmt: skip
    made += parts
    calls = [*inp["calls"][:400], *(SimpleNamespace(query=q) for q in made)]
    got = restore_index(calls, texts)
    assert got == _restore_index_scoring_every_note(calls, texts)
    assert sum(1 for c in got if c) > 50  # (the comparison is about candidates that exist)
    assert any(p == "memory/tagged.md" for p, _s, _n in got[len(calls) - len(made)])
    by_query = {c.query: [p for p, _s, _n in found] for c, found in zip(calls, got, strict=True)}
    for q in parts:
        assert "memory/parts.md" in by_query[q] or "memory/long-tag.md" in by_query[q], q


def _expected_strong_from(rows: list[tuple]) -> list[float | None]:
    """strong_from as the one rule says it (memoryd.strength.strength_pairs): a get, a
    result ranked first or of unknown rank at its own time, else at its first read."""
    from memoryd.strength import strength_pairs

    return [r[4] if r[3] != "search" or rank in (None, 1) else read
            for r, (rank, read) in zip(rows, strength_pairs(rows), strict=True)]  # fmt: skip


_COLS = "agent, call_id, memory_path, kind, ts, score, session"


@pytest.mark.parametrize("seed", [4, 8])
def test_each_hit_keeps_the_strength_the_rule_gives_whatever_the_order_of_writes(
    tmp_path: Path, seed: int
) -> None:
    """Hits written in any order (a read before its search, a call's results one by one,
    in other transactions), some taken back (a call, a read), a session of '' or none,
    a score missing: the strength kept with each hit (migration 10's triggers) is what
    ranking every call and matching every read again gives."""
    from memoryd.store import Store
    from memoryd.strength import HitRow, file_summary, hit_strengths, strength_summary

    h = generate(seed, GenParams(days=60))
    rng = random.Random(seed)
    rows = [(x.agent, x.call_id, x.path, x.kind, x.ts, x.score, x.session) for x in h.hits]
    some = rng.sample(range(len(rows)), 40)
    for i in some[:10]:  # a score missing: its whole call's ranks unknown
        rows[i] = (*rows[i][:5], None, rows[i][6])
    for i in some[10:20]:  # no session, or an empty one: never read
        rows[i] = (*rows[i][:6], rng.choice((None, "")))
    rng.shuffle(rows)
    with Store.open(tmp_path / "state.db") as store:
        for at in range(0, len(rows), 97):
            with store.transaction():
                store.conn.executemany(
                    f"INSERT OR IGNORE INTO hits({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    rows[at : at + 97],
                )
        calls = sorted({(r[0], r[1]) for r in rows})
        gets = [r for r in rows if r[3] != "search" and r[6]]
        with store.transaction():
            store.conn.executemany(
                "DELETE FROM hits WHERE agent = ? AND call_id = ?", rng.sample(calls, 25)
            )
            store.conn.executemany(
                "DELETE FROM hits WHERE agent = ? AND call_id = ? AND memory_path = ?",
                [g[:3] for g in rng.sample(gets, 25)],
            )
        kept = store.conn.execute(f"SELECT {_COLS}, strong_from FROM hits").fetchall()
        assert len(kept) > 1000
        assert [r[7] for r in kept] == _expected_strong_from([r[:7] for r in kept])
        for path in sorted({r[2] for r in kept}):  # explain's strength line, from the column
            calls = {(r[0], r[1]) for r in kept if r[2] == path}
            mine = [HitRow._make(r[:7]) for r in kept if (r[0], r[1]) in calls]
            assert file_summary(store.conn, path) == strength_summary(
                mine, hit_strengths(mine), path
            )
    assert sum(r[7] is None for r in kept) > 100  # (came along, never read: not strong)
    assert sum(r[7] is not None and r[7] > r[4] for r in kept) > 20  # (strong once read)


def test_a_database_of_before_the_kept_strength_gets_it_when_migrated(tmp_path: Path) -> None:
    """A state database of schema 9 with a history in it: opening it migrates, and every
    hit then keeps the strength the rule gives; a read-only open of such a database is
    told to read every row instead (the kept strength is not there to read)."""
    import sqlite3

    from memoryd import store as st
    from memoryd import store_schema
    from memoryd.strength import load_strong_times

    db = tmp_path / "state.db"
    with sqlite3.connect(db) as conn:
        for version in range(1, 10):
            for statement in store_schema.split_sql(store_schema.MIGRATIONS[version]):
                conn.execute(statement)
        conn.execute("PRAGMA user_version = 9")
        h = generate(6, GenParams(days=45))
        conn.executemany(
            f"INSERT INTO hits({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(x.agent, x.call_id, x.path, x.kind, x.ts, x.score, x.session) for x in h.hits],
        )
    old = st.Store.open(db, readonly=True)
    assert load_strong_times(old.conn, h.end, h.end + DAY) is None
    old.close()
    with st.Store.open(db) as store:
        kept = store.conn.execute(f"SELECT {_COLS}, strong_from FROM hits").fetchall()
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == st.SCHEMA_VERSION
    assert [r[7] for r in kept] == _expected_strong_from([r[:7] for r in kept])


@pytest.mark.parametrize("seed", [3, 12])
def test_the_plan_reads_the_kept_strength_with_the_same_verdicts(tmp_path: Path, seed: int) -> None:
    """On a generated install, the times and strong times the expire plan reads from the
    kept strength are those of ranking every call again, at the end of the history and
    a month before it (a hit from the future within the clock-skew allowance counts as
    now, one beyond it not yet); and so is every verdict."""
    from memoryd.config import Config, resolve_paths
    from memoryd.policy import expire_plan as ep
    from memoryd.signals import snapshot
    from memoryd.store import Store
    from memoryd.strength import hit_strengths, strength_summary

    h = generate(seed, GenParams(days=150))
    env = {"OPENCLAW_STATE_DIR": str(tmp_path / "oc"), "HOME": str(tmp_path / "home")}
    write_history(h, tmp_path / "oc" / "workspace", tmp_path / "oc" / "memoryd" / "state.db")
    (tmp_path / "home").mkdir()
    cfg = Config()
    paths = resolve_paths(cfg, env)
    for now in (h.end, h.end - 30 * DAY):
        with Store.open(paths.db) as store:
            snap = snapshot(cfg, paths, store, now)
            kept = ep._hit_times(snap)
            again = ep.hit_times_by_file(snap.hit_rows(), snap.now)
            assert snap.strong_times() is not None
            assert {p: sorted(v) for p, v in kept[0].items()} == {
                p: sorted(v) for p, v in again[0].items()}  # fmt: skip
            assert {p: sorted(v) for p, v in kept[1].items()} == {
                p: sorted(v) for p, v in again[1].items()}  # fmt: skip
            busiest = max(kept[0], key=lambda p: len(kept[0][p]))
            one = ep._hit_times(snap, busiest)
            assert sorted(one[0][busiest]) == sorted(again[0][busiest])
            assert sorted(one[1].get(busiest, [])) == sorted(again[1].get(busiest, []))
            for path in sorted(kept[0], key=lambda p: -len(kept[0][p]))[:8]:
                rows = snap.hit_rows([path], raw=False)
                assert snap.strength_summary(path) == strength_summary(
                    rows, hit_strengths(rows), path
                )


def test_a_calibration_goes_stale_exactly_when_the_rule_of_reuse_says() -> None:
    """The moment the daemon looks again (``calibration_stale_at``), and the reuse that
    commands decide by, against the rule said plainly: a calibration made at ``at`` is
    learned again once a run of the expire schedule after it has come within ``SHORT_BY``
    of its 60 days, or had them all pass; for monthly, weekly and daily schedules in two
    zones, and the default one when expire is off."""
    from memoryd.config import parse_config, schedule_timezone
    from memoryd.own_history import (
        calibration_stale_at,
        configured_policy,
        fire_times,
        reusable_calibration,
    )
    from memoryd.policy.calibration import SHORT_BY

    def stale_by_the_rule(cfg: object, at: float, now: float) -> bool:
        tz = schedule_timezone(cfg)
        expr = cfg.schedule.expire  # type: ignore[attr-defined]
        return any(fire_times(expr, tz, at - lag + 1, now - lag)
                   for lag in (60 * DAY - SHORT_BY, 60 * DAY))  # fmt: skip

    rng = random.Random(8)
    for expire, zone in [("0 4 1 * *", "UTC"), ("0 4 * * 1", "Europe/Berlin"),
                         ("30 2 * * *", "Europe/Berlin"), ("off", "UTC")]:  # fmt: skip
        cfg = parse_config({"schedule": {"expire": expire, "timezone": zone}})
        policy = configured_policy(cfg)
        for _ in range(25):
            at = 1.77e9 + rng.uniform(0, 400) * DAY
            stale = calibration_stale_at(cfg, at)
            assert at < stale < at + 61 * DAY
            doc = {"at": at, "target": policy.target, "floor": policy.floor, "calibrated": False}
            for now in (at, rng.uniform(at, stale - 1), stale - 1):
                assert not stale_by_the_rule(cfg, at, now)
                assert reusable_calibration(cfg, doc, now, policy) is None  # reused
            assert stale_by_the_rule(cfg, at, stale)
            assert reusable_calibration(cfg, doc, stale, policy) is False  # learned again


def test_the_daemon_tries_again_within_the_hour_when_it_could_keep_nothing(
    tmp_path: Path,
) -> None:
    """What the daemon learns must be kept for the commands to reuse: when it cannot be
    written (here memoryd's folder for it is a file), the daemon says it kept nothing and
    looks again in an hour, not at the next verdicts a month on; once it can be written,
    it is learned, kept, and next looked at when new verdicts are due."""
    from memoryd.config import load_config, resolve_paths
    from memoryd.own_history import LEARN_AGAIN_AFTER_FAILURE, calibration_stale_at, keep_learned
    from memoryd.store import Store

    env, saved, now = _install(tmp_path)
    cfg = load_config(env["MEMORYD_CONFIG"])
    paths = resolve_paths(cfg, env)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    with Store.open(paths.db) as store:
        assert keep_learned(cfg, paths._replace(memoryd_dir=blocked), store, now) == (
            False, now + LEARN_AGAIN_AFTER_FAILURE)  # fmt: skip
        assert not saved.exists()
        assert keep_learned(cfg, paths, store, now) == (True, calibration_stale_at(cfg, now))
        assert json.loads(saved.read_text())["at"] == now
        assert keep_learned(cfg, paths, store, now + 60) == (False, calibration_stale_at(cfg, now))
