"""likely's chance calibrated on the user's own history, and the cut chosen on it (issue 24):
the calibration must follow what followed, never use what had not happened yet at a run,
and the cut must keep the target or reach the floor as the rule says."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace

from memoryd.policy import calibration as cb
from memoryd.policy import candidates as pc
from memoryd.policy import replay as rp
from support.histories import replay_inputs
from support.histories_b import FamilyBParams, generate_b

DAY = 86400.0
H = 60 * DAY
SMALL = FamilyBParams(days=330, projects=4, rituals=2, synonym_refs=5, memoryless=10, hubs=3,
                      scratch=30)  # fmt: skip


def _samples(n: int, runs: int, truth, seed: int = 1, files: int = 100) -> list[cb.Sample]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        p = rng.uniform(0.01, 0.99)
        out.append(cb.Sample(float(i % runs) * 30 * DAY, p, rng.random() < truth(p), False,
                             True, files))  # fmt: skip
    return out


def test_below_the_minimum_nothing_is_calibrated():
    assert cb.fit(_samples(cb.MIN_VERDICTS - 1, 5, lambda p: p)) is None
    assert cb.fit(_samples(5000, cb.MIN_RUNS - 1, lambda p: p)) is None
    assert cb.fit(_samples(cb.MIN_VERDICTS, cb.MIN_RUNS, lambda p: p)) is not None


def test_the_calibrated_chance_follows_what_followed_not_the_generic_one():
    # the generic model says p; the truth is far higher at the bottom (a quarter of the
    # "5 %" files are needed), as on the held-out family of issue 24
    def truth(p: float) -> float:
        return 0.2 + 0.6 * p

    cal = cb.fit(_samples(cb.MAX_SAMPLES, 6, truth))
    assert cal is not None and cal.verdicts == cb.MAX_SAMPLES and cal.runs == 6
    for p in (0.05, 0.3, 0.6, 0.9):
        assert abs(cal.apply(p) - truth(p)) < 0.05, (p, cal.apply(p))
    # and keeps the generic model's order of the files
    assert cal.apply(0.05) < cal.apply(0.3) < cal.apply(0.9)


def test_a_folder_whose_notes_come_back_gets_a_chance_of_its_own():
    # the generic model cannot tell a people note from a clipping; the user's history can:
    # people's notes were read again far more often than their generic chance said
    rng = random.Random(3)
    samples = []
    for i in range(3000):
        p = rng.uniform(0.05, 0.6)
        group = ("memory/people", "memory/clips", "memory")[i % 3] if i < 2990 else "memory/rare"
        truth = {"memory/people": min(p + 0.4, 0.95), "memory/clips": p / 4}.get(group, p)
        samples.append(cb.Sample(float(i % 5) * 30 * DAY, p, rng.random() < truth, False,
                                 True, 100, group=group))  # fmt: skip
    cal = cb.fit(samples)
    assert cal is not None
    # a group of fewer than GROUP_MIN_VERDICTS verdicts (memory/rare: 10) shares the base
    assert set(cal.groups) == {"memory/people", "memory/clips", "memory"}
    assert cal.apply(0.2, group="memory/rare") == cal.apply(0.2)
    people, clips, base = (cal.apply(0.2, group=g) for g in ("memory/people", "memory/clips",
                                                             "memory"))  # fmt: skip
    assert people > base + 0.2 and clips < base - 0.05, (people, base, clips)
    assert cal.apply(0.2, group="memory/never-seen") == cal.apply(0.2)  # unknown: the base
    # the policy reads the note's folder from its path, daily notes apart
    v_people = pc.FileView("memory/people/ada.md", "topic", 0.0, 100 * DAY, (), ())
    v_daily = pc.FileView("memory/people/2026-01-02.md", "daily", 0.0, 100 * DAY, (), ())
    assert cb.group_of(v_people.path, v_people.kind) == "memory/people"
    assert cb.group_of(v_daily.path, v_daily.kind) == cb.DAILY_GROUP
    assert cb.group_of("notes.md", "topic") == ""
    learned = pc.Likely().calibrated(cal)
    generic = pc.Likely().probability(v_people)
    assert learned.decide(v_people).p_need == cal.apply(generic, group="memory/people")


def test_a_sample_is_usable_only_once_its_horizon_has_passed():
    s = [cb.Sample(0.0, 0.5, True), cb.Sample(30 * DAY, 0.5, False)]
    assert cb.usable(s, H - 1, H) == []
    assert cb.usable(s, H, H) == [s[0]]
    assert cb.usable(s, 30 * DAY + H, H) == s


def test_a_verdict_two_short_months_back_is_learned_from_with_what_had_happened_by_then():
    # Jan 1 to Mar 1 is 59 days: the January run's verdicts are learned from on March 1,
    # labelled with the strong hits that had come by then, never with later ones
    jan, mar = 0.0, 59 * DAY
    later = cb.Sample(jan, 0.5, True, strong_at=mar + DAY)  # its strong hit came after Mar 1
    sooner = cb.Sample(jan, 0.5, True, strong_at=10 * DAY)
    unknown = cb.Sample(jan, 0.5, True)  # no time of its first strong hit: wait the 60 days
    got = cb.usable([later, sooner, unknown], mar, H)
    assert [(s.strong, s.strong_at) for s in got] == [(False, mar + DAY), (True, 10 * DAY)]
    assert cb.usable([later], mar - 2 * DAY - 1, H) == []  # more than SHORT_BY before
    assert [s.strong for s in cb.usable([later, unknown], jan + H, H)] == [True, True]


def test_the_cut_keeps_the_target_when_it_can_and_reaches_the_floor_when_it_cannot():
    # 100 files at 0.02 of which 2 were hit strongly, 100 at 0.30 of which 30
    scored = [(0.02, i < 2) for i in range(100)] + [(0.30, i < 30) for i in range(100)]
    cut, rule, rate, cov = cb.choose_cut(scored, target=0.05, floor=0.5)
    # cuts above 0.30 archive both groups: 32/200 = 16 % > 5 %; so the largest cut within
    # the target archives the 0.02 group only (2 %), which covers 98 of 168 quiet (58 %)
    assert (rule, rate) == ("target", 0.02) and 0.02 < cut <= 0.30
    assert math.isclose(cov, 98 / 168)
    # a floor the target cannot reach: the smallest cut that archives 80 % of the quiet
    cut, rule, rate, cov = cb.choose_cut(scored, target=0.05, floor=0.8)
    assert rule == "floor" and cut == 0.31 and math.isclose(rate, 32 / 200) and cov == 1.0
    # never above one half: a floor out of reach below it stops at 0.5
    high = [(0.02, False)] * 10 + [(0.7, False)] * 90
    cut, rule, _rate, cov = cb.choose_cut(high, target=0.05, floor=0.5)
    assert (cut, rule, cov) == (0.5, "floor", 0.1)


def test_the_policy_decides_on_the_calibrated_chance_and_the_chosen_cut():
    cal = cb.fit(_samples(3000, 5, lambda p: 0.2 + 0.6 * p))
    assert cal is not None
    v = pc.FileView("memory/x.md", "topic", 0.0, 200 * DAY, (), ())
    generic = pc.Likely(learn=False)
    p = generic.probability(v)
    learned = pc.Likely().calibrated(cal)
    verdict = learned.decide(v)
    assert verdict.p_need == cal.apply(p) != p
    assert verdict.archive == (cal.apply(p) < cal.cut)
    # learn=False never takes a calibration
    assert pc.Likely(learn=False).calibrated(cal).decide(v).p_need == p


def test_no_replayed_run_is_calibrated_on_its_own_future():
    """Replaying the history cut at a run gives that run (and every earlier one) the same
    calibration and the same decisions as the whole history: nothing after a run's time
    reaches it. A calibration fitted on all verdicts (or on verdicts whose 60 days had not
    passed) would differ."""
    h = generate_b(11, SMALL)
    inp = replay_inputs(h)
    runs = inp["runs"]
    assert len(runs) >= 7
    (full,) = rp.replay(inp["files"], inp["hits"], runs, [pc.Likely()])
    calibrated = [t for t, c in full.calibrations if c is not None]
    assert calibrated, "the history is long enough to calibrate at its later runs"
    k = runs.index(calibrated[1]) if len(calibrated) > 1 else runs.index(calibrated[0])
    cut_at = runs[k]
    past_hits = [x for x in inp["hits"] if x.ts <= cut_at]
    (cut,) = rp.replay(inp["files"], past_hits, runs[: k + 1], [pc.Likely()])
    assert cut.decisions == full.decisions[: k + 1]
    assert [c for _, c in cut.calibrations] == [c for _, c in full.calibrations[: k + 1]]
    # and the calibration at that run is the one fitted on the verdicts whose horizon had
    # passed by then, not on all of them
    cal = full.calibrations[k][1]
    assert cal is not None
    known = cb.usable(full.samples, cut_at, H)
    assert cal.verdicts == len(known) < len([s for s in full.samples if s.t <= cut_at])


def test_what_a_59_day_old_run_teaches_is_the_same_whatever_happens_after():
    """March 1 learns from the January 1 run's verdicts (59 days) with what had happened by
    then; a strong hit an hour later (a get), or a read an hour later of a note that came
    along second on Feb 28, must change nothing learned on March 1."""
    from datetime import UTC, datetime

    def ts(y: int, m: int, d: int, h: int = 4) -> float:
        return datetime(y, m, d, h, tzinfo=UTC).timestamp()

    jan, mar = ts(2026, 1, 1), ts(2026, 3, 1)
    files = [rp.ReplayFile(f"memory/n{i}.md", ts(2025, 10, 1), 100) for i in range(4)]
    past = [rp.ReplayHit(f"memory/n{i}.md", ts(2025, 12, 1 + i), "get") for i in range(4)]
    after = [
        rp.ReplayHit("memory/n0.md", mar + 3600, "get"),
        rp.ReplayHit("memory/n1.md", ts(2026, 2, 28), "search", 2, mar + 3600),
    ]
    policy = [pc.Likely()]
    (full,) = rp.replay(files, past + after, [jan, mar], policy)
    known_hits = [rp.ReplayHit(h.path, h.ts, h.kind, h.rank, h.read_at if (h.read_at or 0) <= mar
                               else None) for h in past + after if h.ts <= mar]  # fmt: skip
    (cut,) = rp.replay(files, known_hits, [jan, mar], policy)

    def learned(res: rp.PolicyResult) -> list[tuple[float, str, bool]]:
        return [(s.t, s.group, s.strong) for s in cb.usable(res.samples, mar, H)]

    assert [x for x in learned(full) if x[0] == jan] == [(jan, "memory", False)] * 4
    assert learned(full) == learned(cut)
    # with the whole horizon (Mar 2, 04:00) the get counts; the read came at Mar 1 05:00
    whole = cb.usable(full.samples, jan + H, H)
    assert [s.strong for s in whole if s.t == jan] == [True, True, False, False]


def test_the_sparse_fit_is_the_plain_logistic_regression():
    # rows with a one-hot group among zeros: the same weights as a dense Newton fit
    rng = random.Random(5)
    rows = []
    for _ in range(400):
        g = rng.randrange(3)
        x = [1.0, rng.gauss(0, 1), 0.0, rng.gauss(0, 1), 0.0] + [float(g == j) for j in range(3)]
        z = -0.5 + 1.2 * x[1] - 0.4 * x[3] + (0.8, 0.0, -0.6)[g]
        rows.append((x, float(rng.random() < 1 / (1 + math.exp(-z)))))
    w = cb.logistic(rows, ridge=1.0)
    # the dense gradient at w (the ridge on all but the intercept) is zero
    grad = [0.0] + [-1.0 * v for v in w[1:]]
    for x, y in rows:
        p = 1 / (1 + math.exp(-sum(a * b for a, b in zip(w, x, strict=True))))
        for i, xi in enumerate(x):
            grad[i] += (y - p) * xi
    assert max(abs(v) for v in grad) < 1e-6, grad
    assert w[1] > 0.8 and w[3] < -0.1 and w[5] > w[6] > w[7]


def test_status_shows_what_the_last_expire_run_decided_with():
    from memoryd.commands.status import _chance_status
    from memoryd.config import Config
    from memoryd.own_history import calibration_record

    cfg = Config()
    assert cfg.expire.policy == "likely"
    never = _chance_status(cfg, None)
    assert never is not None and not never["calibrated"] and "generic" in never["text"]
    assert _chance_status(cfg, "{damaged") == never
    cal = cb.fit(_samples(3000, 5, lambda p: 0.2 + 0.6 * p))
    assert cal is not None
    shown = _chance_status(cfg, calibration_record(pc.Likely().calibrated(cal), 1e9))
    assert shown is not None and shown["calibrated"]
    assert (shown["verdicts"], shown["runs"], shown["cut"]) == (3000, 5, cal.cut)
    assert shown["target"] == cfg.expire.later_needed_target
    generic = _chance_status(cfg, calibration_record(pc.Likely(), 1e9))
    assert generic is not None and not generic["calibrated"]
    assert _chance_status(cfg._replace(expire=cfg.expire._replace(policy="seed")), None) is None


def test_a_recorded_calibration_is_reused_until_a_run_has_had_its_60_days(tmp_path):
    """The expire job learns (a replay of the whole history) and records what it learned;
    a dry run or explain reuses it while learning again would give the same, and not once a
    run of the schedule has had its 60 days pass (a new verdict's outcome is known)."""
    from datetime import UTC, datetime

    from memoryd.config import Config
    from memoryd.own_history import calibration_record, stored_calibration
    from memoryd.store import Store

    cfg = Config()._replace(schedule=Config().schedule._replace(timezone="UTC"))
    samples = [replace(s, group=("memory/people", "memory")[i % 2])
               for i, s in enumerate(_samples(1000, 5, lambda p: 0.2 + 0.6 * p))]  # fmt: skip
    fitted = cb.fit(samples)
    assert fitted is not None and set(fitted.groups) == {"memory/people", "memory"}
    cal = replace(fitted, track=(5, 6))  # its past chances: 5 of 6 bins within 0.10
    policy = pc.Likely()
    at = datetime(2026, 3, 10, tzinfo=UTC).timestamp()  # 0 4 1 * *: March 1 was a run
    with Store.open(tmp_path / "state.db") as store:
        assert stored_calibration(cfg, store, at, policy) is False  # nothing recorded
        with store.transaction():
            store.set_meta("expire.calibration", calibration_record(policy.calibrated(cal), at))
        same = stored_calibration(cfg, store, at + 5 * DAY, policy)
        assert same is not False and same.coef == cal.coef and same.cut == cal.cut
        assert same.apply(0.3) == cal.apply(0.3)
        # each group's offset survives the record
        assert (same.groups, same.group_coef) == (cal.groups, cal.group_coef)
        assert same.track == (5, 6) and same.describe().endswith("in 5 of 6 chance bins")
        assert same.apply(0.3, group="memory/people") == cal.apply(0.3, group="memory/people")
        # the Jan 1 run's 60 days ended Mar 2, before the record; the Feb 1 run (04:00) is
        # learned from SHORT_BY before its 60 days end, on Mar 31 at 04:00: from then on,
        # learning again would know more
        assert stored_calibration(cfg, store, datetime(2026, 3, 31, 3, tzinfo=UTC).timestamp(),
                                  policy) is not False  # fmt: skip
        assert stored_calibration(cfg, store, datetime(2026, 3, 31, 5, tzinfo=UTC).timestamp(),
                                  policy) is False  # fmt: skip
        feb1 = datetime(2026, 2, 1, 4, tzinfo=UTC).timestamp()
        mar31 = datetime(2026, 3, 31, 5, tzinfo=UTC).timestamp()
        assert cb.usable([cb.Sample(feb1, 0.5, False, strong_at=math.inf)], mar31, H)
        # another target or floor: learn again
        other = pc.Likely(target=0.1)
        assert stored_calibration(cfg, store, at + DAY, other) is False
        with store.transaction():
            store.set_meta("expire.calibration", "{damaged")
        assert stored_calibration(cfg, store, at + DAY, policy) is False
        # a record of another shape: learned again, never a crash of the command reading it
        good = json.loads(calibration_record(policy.calibrated(cal), at))
        for model in ({"coef": [0.1, 1.0, 0.2]}, {"knots_x": [0.1, 0.5], "knots_y": [0.2]},
                      {"groups": ["memory/people"], "group_coef": []}):
            with store.transaction():
                store.set_meta("expire.calibration", json.dumps(
                    {**good, "model": {**good["model"], **model}}))  # fmt: skip
            assert stored_calibration(cfg, store, at + DAY, policy) is False


def test_a_recorded_track_record_is_not_reused_once_a_run_it_left_out_has_had_its_60_days(
    tmp_path,
):
    """The expire job on March 1 learns from the January 1 run (59 days old, SHORT_BY) but
    its track record leaves that run out (its 60 days are not over). From March 2, 04:00
    learning again counts it in the track (as simulate's table does): the record made on
    March 1 is no longer what learning would give."""
    from datetime import UTC, datetime

    from memoryd.config import Config
    from memoryd.own_history import calibration_record, stored_calibration
    from memoryd.store import Store

    cfg = Config()._replace(schedule=Config().schedule._replace(timezone="UTC"))
    fitted = cb.fit(_samples(1000, 5, lambda p: 0.2 + 0.6 * p))
    assert fitted is not None
    cal = replace(fitted, track=(3, 3))
    policy = pc.Likely()
    mar1 = datetime(2026, 3, 1, 4, 0, 5, tzinfo=UTC).timestamp()  # the job, at its fire time
    with Store.open(tmp_path / "state.db") as store:
        with store.transaction():
            store.set_meta("expire.calibration", calibration_record(policy.calibrated(cal), mar1))
        before = datetime(2026, 3, 2, 3, tzinfo=UTC).timestamp()
        after = datetime(2026, 3, 3, tzinfo=UTC).timestamp()
        assert stored_calibration(cfg, store, before, policy) is not False
        jan1 = datetime(2026, 1, 1, 4, tzinfo=UTC).timestamp()
        assert jan1 + H > mar1 and jan1 + H <= after  # left out of the record's track, not now
        assert stored_calibration(cfg, store, after, policy) is False


def test_a_malformed_track_in_the_record_is_learned_again_never_a_crash(tmp_path):
    from datetime import UTC, datetime

    from memoryd.config import Config
    from memoryd.own_history import calibration_record, stored_calibration
    from memoryd.store import Store

    cfg = Config()._replace(schedule=Config().schedule._replace(timezone="UTC"))
    fitted = cb.fit(_samples(1000, 5, lambda p: 0.2 + 0.6 * p))
    assert fitted is not None
    policy = pc.Likely()
    at = datetime(2026, 3, 10, tzinfo=UTC).timestamp()
    good = json.loads(calibration_record(policy.calibrated(replace(fitted, track=(5, 6))), at))
    with Store.open(tmp_path / "state.db") as store:
        for track in (["x"], 5, [7], [5, 6, 7], "56", [9, 6], [-1, 6], [None, 6], {"a": 1},
                      [float("inf"), 6]):  # fmt: skip
            with store.transaction():
                store.set_meta("expire.calibration", json.dumps({**good, "track": track}))
            got = stored_calibration(cfg, store, at + DAY, policy)
            assert got is False, (track, got)
        # an older memoryd's record (no track): reused, said without one
        old = {k: v for k, v in good.items() if k != "track"}
        with store.transaction():
            store.set_meta("expire.calibration", json.dumps(old))
        got = stored_calibration(cfg, store, at + DAY, policy)
        assert got is not False and got.track == ()
        assert got.describe().endswith(f"archive below {got.cut:.0%}")
    # a Calibration built with a short track never breaks what prints it
    assert "chance bins" not in replace(fitted, track=(7,)).describe()
