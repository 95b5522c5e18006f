"""Replay expire policies on generated histories with a known need: the table behind the default.

    .venv/bin/python bench/bench_policies.py [--seeds N] [--grid] [--restore] [--offset K]

For each of N seeds, two histories: one with the generator's default parameters and
one with parameters drawn by ``sample_params`` (a different kind of user). Every
policy is replayed on each (monthly runs, 60-day horizon), and the table shows,
as mean ± standard deviation over the histories:

* need FA: share of archives whose note was *needed* within 60 days (the generator
  knows why each search happened), and need cov: share of notes not needed in
  those 60 days that are archived (cold coverage on need);
* hit FA / hit cov: the same counted on hits, as ``memoryd simulate`` must on a
  real install (a note that merely came along with a search is a hit too);
* whether the policy met the target on that history: need FA at most half the
  seed rule's, need coverage at least two thirds of the seed rule's.

``--grid`` adds parameter variants (what the default was chosen from);
``--restore`` calibrates the restore threshold (precision/recall of
``best_match`` for queries written for an archived note). ``--offset`` shifts
the seeds (held-out histories: the test uses seeds the bench never printed).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "daemon"))
# tests/: its support/ and live/ packages are test-only code, not in the wheel
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from memoryd.policy import candidates as pc
from memoryd.policy import replay as rp
from support import research_policies as rpol
from support.histories import (
    GenParams,
    History,
    generate,
    generated_need_events,
    replay_inputs,
    sample_params,
)
from support.histories_b import FamilyBParams, generate_b, sample_params_b
from support.histories_c import FamilyCParams, generate_c, sample_params_c
from support.histories_d import FamilyDParams, generate_d, sample_params_d
from support.histories_e import FamilyEParams, generate_e, sample_params_e


def histories(seeds: int, offset: int, family: str = "a") -> list[tuple[str, int, object]]:
    """(label, seed, parameters) of the histories of one family: default and sampled."""
    out: list[tuple[str, int, object]] = []
    for s in range(offset, offset + seeds):
        if family == "b":
            out.append(("default", s, FamilyBParams()))
            out.append(("sampled", s, sample_params_b(random.Random(30_000 + s))))
        elif family == "c":
            out.append(("default", s, FamilyCParams()))
            out.append(("sampled", s, sample_params_c(random.Random(50_000 + s))))
        elif family == "d":
            out.append(("default", s, FamilyDParams()))
            out.append(("sampled", s, sample_params_d(random.Random(70_000 + s))))
        elif family == "e":
            out.append(("default", s, FamilyEParams()))
            out.append(("sampled", s, sample_params_e(random.Random(90_000 + s))))
        else:
            out.append(("default", s, GenParams()))
            out.append(("sampled", s, sample_params(random.Random(10_000 + s))))
    return out


def make(family: str, seed: int, params: object) -> History:
    """One history of ``family`` ("a": support.histories, "b": histories_b, "c":
    histories_c, "d": histories_d, "e": histories_e)."""
    if family == "b":
        return generate_b(seed, params)  # type: ignore[arg-type]
    if family == "c":
        return generate_c(seed, params)  # type: ignore[arg-type]
    if family == "d":
        return generate_d(seed, params)  # type: ignore[arg-type]
    if family == "e":
        return generate_e(seed, params)  # type: ignore[arg-type]
    return generate(seed, params)  # type: ignore[arg-type]


def grid() -> list[pc.Policy]:
    out: list[pc.Policy] = []
    for base in (30, 45, 60):
        for factor in (1.0, 1.5, 2.0):
            for strong in (False, True):
                name = f"rhythm{'-strong' if strong else ''}:{base}/{factor:g}"
                out.append(rpol.Rhythm(base, factor, strong_only=strong, name=name))
    for th in (-3.0, -2.5, -2.0, -1.5):
        p = rpol.Activation(th)
        p.name = f"actr:{th:g}"
        out.append(p)
    for th in (0.05, 0.08, 0.15, 0.2, 0.3):
        p = pc.Likely(th)
        p.name = f"likely:{th:g}"
        out.append(p)
    for th in (0.1, 0.2, 0.3):
        for dead in (0.3, 0.5, 0.7):
            p = rpol.Renewal(th, dead=dead)
            p.name = f"renewal:{th:g}/{dead:g}"
            out.append(p)
    for found_cut in (0.04, 0.05):
        for floor in (0.35, 0.4):
            out.append(rpol.FoundCut(found_cut, floor, name=f"found-cut:{found_cut:g}/{floor:g}"))
    for strong in (False, True):
        for base in (45, 60):
            p = rpol.KindAware(pc.Seed(), rpol.Rhythm(base, 1.5, strong_only=strong))
            p.name = f"kind:{base}{'-strong' if strong else ''}"
            out.append(p)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--grid", action="store_true")
    ap.add_argument("--restore", action="store_true")
    ap.add_argument("--fit", action="store_true", help="refit LIKELY_WEIGHTS (seeds 0-11)")
    ap.add_argument("--family", choices=("a", "b", "c", "d", "e"), default="a",
                    help="the generator: a (support.histories), b (histories_b), "
                    "c (histories_c), d (histories_d) or e (histories_e)")
    ap.add_argument("--fit-family", choices=("a", "b", "c", "d", "ab"), default="a",
                    help="the family the generic weights are fitted on (a: the shipped "
                    "LIKELY_WEIGHTS; b, c, d or ab (a and b pooled): refit here on seeds 0-11)")
    ap.add_argument("--harm", action="store_true",
                    help="what the archives later needed cost the agent (issue 28): reached "
                    "in the same call, a later call, not at all; by restore matcher")
    ap.add_argument("--index", action="store_true",
                    help="the archive in OpenClaw's own index (memory.search.extraPaths): "
                    "what it would reach, at most, and the result slots it would take")
    ap.add_argument("--minimum", action="store_true",
                    help="calibration error by MIN_VERDICTS (100, 200, 400)")
    ap.add_argument("--lag", action="store_true",
                    help="per-history calibration error by how recent the outcomes known are "
                    "(what no calibrator learning from the past can do better than)")
    args = ap.parse_args()
    if args.fit:
        print("LIKELY_WEIGHTS =", tuple(round(a, 4) for a in fit(12, args.family)))
        return
    if args.restore:
        restore_table(args.seeds, args.offset)
        return
    if args.harm:
        harm_table(args.seeds, args.offset, args.family)
        return
    if args.index:
        index_table(args.seeds, args.offset, args.family)
        return
    weights = pc.LIKELY_WEIGHTS if args.fit_family == "a" else tuple(fit(12, args.fit_family))
    if args.minimum:
        minimum_table(args, weights)
        return
    if args.lag:
        lag_table(args, weights)
        return
    evaluate(args, weights)


def evaluate(args: argparse.Namespace, weights: tuple[float, ...]) -> None:
    """The held-out table: every policy on the histories of ``--family``, the default
    (learning) likely on generic weights fitted on ``--fit-family``."""
    from support.reference_rules import restore_index

    named = {**pc.named_policies(), **rpol.research_policies()}
    named["likely"] = pc.Likely(weights=weights)
    named["likely-generic"] = pc.Likely(weights=weights, learn=False, name="likely-generic")
    policies = list(named.values()) + (grid() if args.grid else [])
    rows: dict[str, dict[str, list[float]]] = {}
    own: list[tuple[float, bool, bool, bool | None]] = []
    generic: list[tuple[float, bool, bool, bool | None]] = []
    per_history_misses = per_history_bins = 0
    restores = {"best-archived": [0] * 6, "beats-workspace": [0] * 6}
    t0 = time.perf_counter()
    hs = histories(args.seeds, args.offset, args.family)
    for _label, seed, params in hs:
        h = make(args.family, seed, params)
        inp = replay_inputs(h)
        res = rp.replay(inp["files"], inp["hits"], inp["runs"], policies, needs=inp["needs"])
        seed_res = next(r for r in res if r.name == "seed")
        default = next(r for r in res if r.name == pc.DEFAULT_POLICY)
        flags = default.calibrated_flags
        mine = [c for c, f in zip(default.calibration, flags, strict=True) if f]
        own += mine
        generic += [c for c, f in zip(default.calibration, flags, strict=True) if not f]
        for b in rp.calibration_bins(mine):
            if int(b["n"]) >= 50:
                per_history_bins += 1
                per_history_misses += abs(float(b["predicted"]) - float(b["observed_strong"])) > 0.1
        cands = restore_index(inp["calls"], inp["texts"])
        for rule, acc in restores.items():
            (r,) = rp.replay(inp["files"], inp["hits"], inp["runs"], [named["likely"]],
                             calls=inp["calls"], restore_candidates=cands.__getitem__,
                             restore_rule=rule, needs=inp["needs"])  # fmt: skip
            for i, v in enumerate((r.restores, r.restores_caught, r.restores_needless,
                                   r.restores_right, r.restores_wanted,
                                   r.restores_unneeded)):  # fmt: skip
                acc[i] += v
        assert seed_res.need is not None
        for r in res:
            assert r.need is not None
            d = rows.setdefault(r.name, {})
            ok = (
                r.need_false_archive_rate <= 0.5 * seed_res.need_false_archive_rate
                and r.need.cold_coverage >= (2 / 3) * seed_res.need.cold_coverage
            )
            for k, v in (
                ("need_fa", r.need_false_archive_rate),
                ("need_cov", r.need.cold_coverage),
                ("hit_fa", r.false_archive_rate),
                ("hit_cov", r.hits.cold_coverage),
                ("strong_fa", r.strong_false_archive_rate),
                ("archived", r.archived),
                ("need_false", r.need.false_archives),
                ("need_cold", (r.need.cold_archived, r.need.cold_total)),
                ("met", float(ok)),
            ):
                d.setdefault(k, []).append(v)  # type: ignore[arg-type]
    took = time.perf_counter() - t0
    print(
        f"{len(hs)} family-{args.family} histories (seeds {args.offset}.."
        f"{args.offset + args.seeds - 1}, default and sampled parameters), generic weights "
        f"fitted on family {args.fit_family}, {len(policies)} policies, {took:.1f} s\n"
    )
    print(
        f"| {'policy':24} | {'need FA':>13} | {'need cov':>13} | {'pooled FA':>9} | "
        f"{'pooled cov':>10} | {'strong FA':>9} | {'hit FA':>13} | {'met':>5} |"
    )
    widths = (26, 15, 15, 11, 12, 11, 15, 7)
    print("|" + "|".join("-" * w for w in widths) + "|")

    def ms(xs: list[float]) -> str:
        return f"{statistics.mean(xs):.3f} ± {statistics.pstdev(xs):.3f}"

    for name, d in rows.items():
        pooled_fa = sum(d["need_false"]) / max(sum(d["archived"]), 1)
        cold_a = sum(a for a, _ in d["need_cold"])  # type: ignore[misc]
        cold_n = sum(n for _, n in d["need_cold"])  # type: ignore[misc]
        print(
            f"| {name:24} | {ms(d['need_fa']):>13} | {ms(d['need_cov']):>13} | "
            f"{pooled_fa:9.3f} | {cold_a / max(cold_n, 1):10.3f} | "
            f"{statistics.mean(d['strong_fa']):9.3f} | {ms(d['hit_fa']):>13} | "
            f"{sum(d['met']):2.0f}/{len(d['met']):<2} |"
        )
    for title, pairs in (
        ("calibrated on each history's own past verdicts (runs with enough of them)", own),
        ("the generic chance (runs before enough verdicts)", generic),
    ):
        print(f"\n{pc.DEFAULT_POLICY}'s printed chance, {title}:\n")
        print("| printed | verdicts | mean | strong hit | any hit | needed |")
        print("|---------|----------|------|------------|---------|--------|")
        worst = 0.0
        for b in rp.calibration_bins(pairs):
            if int(b["n"]) >= 50:
                worst = max(worst, abs(float(b["predicted"]) - float(b["observed_strong"])))
            print(
                f"| {b['bin']:>7} | {b['n']:>8} | {b['predicted']:.2f} "
                f"| {b['observed_strong']:>10.2f} | {b['observed_any']:>7.2f} "
                f"| {b['observed_need']:>6.2f} |"
            )
        print(f"\nlargest |printed - strong| in a bin of >= 50 verdicts: {worst:.3f}")
    print(
        f"per history: {per_history_misses} of {per_history_bins} calibrated bins of >= 50 "
        "verdicts off by more than 0.10"
    )
    print(f"\nrestore on demand under {pc.DEFAULT_POLICY} (right = the note the search was for):\n")
    print("| rule | restores | caught | needless (no hit in 60 d) | not needed in 60 d "
          "| right | archived notes searched for |")
    print("|------|----------|--------|----------|----------|-------|-----------------------------|")
    for rule, (n, caught, needless, right, wanted, unneeded) in restores.items():
        print(f"| {rule} | {n} | {caught} | {needless} ({needless / max(n, 1):.1%}) | "
              f"{unneeded} ({unneeded / max(n, 1):.1%}) | "
              f"{right} ({right / max(n, 1):.1%}) | "
              f"{wanted} (restored {right / max(wanted, 1):.0%}) |")  # fmt: skip


def harm_table(seeds: int, offset: int, family: str) -> None:
    """Issue 28's measure, per policy and restore matcher: of the archives needed within 60
    days, how many the agent reached in the same call (a path read, with the plugin), a
    later call (restore on demand after a search, recall, a later need) or not at all;
    and restore on demand's restores, needless ones among them."""
    import re
    from collections import Counter

    from memoryd.policy import harm as hm
    from support.reference_rules import archive_recall_picks, restore_index

    def stemmed(text: str) -> str:
        return re.sub(r"\w+", lambda m: _stem(m.group(0).casefold()), text)

    policies = [pc.policy_named("seed"), pc.policy_named(pc.DEFAULT_POLICY)]
    matchers = ("keyword", "learned", "learned-2", "stem")
    acc: dict[tuple[str, str], Counter[str]] = {}
    t0 = time.perf_counter()
    hs = histories(seeds, offset, family)
    for _label, seed, params in hs:
        inp = replay_inputs(make(family, seed, params))
        events = generated_need_events(inp["needs"], inp["calls"], inp["hits"])
        cands = {
            "keyword": restore_index(inp["calls"], inp["texts"]),
            "learned": learned_restore_index(inp["calls"], inp["texts"], inp["hits"], 1),
            "stem": restore_index(
                [rp.Call(c.ts, stemmed(c.query), c.needed) for c in inp["calls"]],
                {p: stemmed(t) for p, t in inp["texts"].items()},
            ),
        }
        cands["learned-2"] = learned_restore_index(inp["calls"], inp["texts"], inp["hits"], 2)
        for m in matchers:
            res = rp.replay(inp["files"], inp["hits"], inp["runs"], policies,
                            needs=inp["needs"], calls=inp["calls"],
                            restore_candidates=cands[m].__getitem__)  # fmt: skip
            for r in res:
                assert r.need is not None
                # the plugin's search hook hands a restored note over in that call (issue 28)
                h = hm.harm(r.decisions, inp["hits"], events, inp["calls"],
                            candidates=cands[m].__getitem__, recall=archive_recall_picks,
                            texts=inp["texts"])  # fmt: skip
                # what it was before the search hook: a search's restore reached the next one
                h_before = hm.harm(r.decisions, inp["hits"], events, inp["calls"],
                                   candidates=cands[m].__getitem__, recall=archive_recall_picks,
                                   texts=inp["texts"], search_same_call=False)  # fmt: skip
                c = acc.setdefault((r.name, m), Counter())
                c["same_before"] += h_before.same_call
                c.update(archived=r.archived, need_false=r.need.false_archives,
                         needed=h.needed, same=h.same_call, later=h.later_call,
                         never=h.not_reached, restores=r.restores,
                         needless=r.restores_needless, right=r.restores_right,
                         same_no_plugin=h.without_plugin().same_call,
                         **{f"{w}_{how}": n for (w, how), n in h.ways.items()})  # fmt: skip
    took = time.perf_counter() - t0
    print(f"{len(hs)} family-{family} histories (seeds {offset}..{offset + seeds - 1}, default "
          f"and sampled parameters), {took:.0f} s (loaded machine)\n")  # fmt: skip
    print("| policy | matcher | archived | needed in 60 d | same call | later call | not at all "
          "| same call, no plugin | same call, before the search hook | restores | needless "
          "| right |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (name, m), c in acc.items():
        n = max(c["needed"], 1)
        print(f"| {name} | {m} | {c['archived']} | {c['needed']} "
              f"({c['needed'] / max(c['archived'], 1):.1%}) | {c['same']} ({c['same'] / n:.0%}) "
              f"| {c['later']} ({c['later'] / n:.0%}) | {c['never']} ({c['never'] / n:.0%}) "
              f"| {c['same_no_plugin'] / n:.0%} | {c['same_before'] / n:.0%} "
              f"| {c['restores']} | {c['needless']} "
              f"({c['needless'] / max(c['restores'], 1):.0%}) "
              f"| {c['right'] / max(c['restores'], 1):.0%} |")  # fmt: skip
    print("\nhow the later calls reached it (later_read: a later path read; later_search: "
          "restore on demand; later_recall: memoryd_recall with the search's words):")
    for (name, m), c in acc.items():
        ways = {k: v for k, v in sorted(c.items()) if k.startswith(("same_", "later_"))
                and k not in ("same_no_plugin", "same_before")}  # fmt: skip
        print(f"  {name} / {m}: {ways}")


def index_table(seeds: int, offset: int, family: str) -> None:
    """What the archive in OpenClaw's own index (``memory.search.extraPaths``) gives,
    beside what memoryd reaches today (docs/decisions.md), by :func:`memoryd.policy.harm.
    harm` with and without ``archive_indexed``.

    The generators rank every note a query reaches, whatever a policy archived: their
    results are those of an index that holds the archive, ranked as the live notes. So a
    search that missed a note (a synonym the engine did not understand) would have missed
    it kept in the workspace too: the "as if kept" columns count only the archives whose
    first need (same call) or some need (not at all) would have found the kept note. The
    cost, which no replay of these results can rank away: the result slots archived notes
    take, counted while a note is archived as the replay has it (back at its first hit)
    and, in the index, until its first read (a search's result leaves it in the archive):
    a range."""
    from collections import Counter

    from memoryd.policy import harm as hm
    from support.reference_rules import archive_recall_picks, restore_index

    policies = [pc.policy_named("seed"), pc.policy_named(pc.DEFAULT_POLICY)]
    acc: dict[str, Counter[str]] = {}
    rates: dict[str, dict[str, list[float]]] = {}
    hs = histories(seeds, offset, family)
    for _label, seed, params in hs:
        inp = replay_inputs(make(family, seed, params))
        events = generated_need_events(inp["needs"], inp["calls"], inp["hits"])
        cands = restore_index(inp["calls"], inp["texts"])
        results: dict[float, list[str]] = {}  # a search's time → the notes it returned
        gets: dict[str, list[float]] = {}  # a note → the times it was read by its path
        for h in inp["hits"]:
            if h.kind == "search":
                results.setdefault(h.ts, []).append(h.path)
            elif h.kind == "get":
                gets.setdefault(h.path, []).append(h.ts)
        index = hm.harm_index(inp["hits"], events)
        res = rp.replay(inp["files"], inp["hits"], inp["runs"], policies, needs=inp["needs"],
                        calls=inp["calls"], restore_candidates=cands.__getitem__)  # fmt: skip
        for r in res:
            c = acc.setdefault(r.name, Counter())
            got = {}
            for indexed in (False, True):
                got[indexed] = h = hm.harm(
                    r.decisions, inp["hits"], events, inp["calls"],
                    candidates=cands.__getitem__, recall=archive_recall_picks,
                    texts=inp["texts"], index=index, archive_indexed=indexed)  # fmt: skip
                tag = "indexed_" if indexed else ""
                kept_same = h.same_call_as_kept_rate * h.kept_first
                c.update({f"{tag}needed": h.needed, f"{tag}same": h.same_call,
                          f"{tag}never": h.not_reached, f"{tag}kept_first": h.kept_first,
                          f"{tag}kept_same": round(kept_same), f"{tag}kept_any": h.kept_any,
                          f"{tag}kept_never": h.kept_not_reached})  # fmt: skip
            archive = hm._Archive(r.decisions, index.hit_times)
            # an episode here ends at the note's first hit (a search that returns it too, as
            # memoryd restores it today); in the index, a search's result leaves the note in
            # the archive: until its first read, the slots it takes (a range for the cost)
            until_read: dict[str, list[tuple[float, float]]] = {}
            for t, chosen in r.decisions:
                for path in chosen:
                    later = [g for g in gets.get(path, ()) if g > t]
                    until_read.setdefault(path, []).append((t, min(later, default=math.inf)))
            first_run = min((t for t, _ in r.decisions), default=math.inf)
            for ts, paths in results.items():
                if ts <= first_run:
                    continue
                held = sum(archive.archived_at(p, ts) for p in paths)
                kept = sum(any(a < ts <= b for a, b in until_read.get(p, ())) for p in paths)
                c.update(slots=len(paths), archived_slots=held, searches=1,
                         searches_with_archived=held > 0, slots_until_read=kept,
                         searches_until_read=kept > 0)  # fmt: skip
            per = rates.setdefault(r.name, {"same": [], "never": []})
            h = got[True]  # (a history with no such archive has no rate to count)
            if h.kept_first:
                per["same"].append(h.same_call_as_kept_rate)
            if h.kept_any:
                per["never"].append(h.not_reached_as_kept_rate)
    print(f"{len(hs)} family-{family} histories (seeds {offset}..{offset + seeds - 1})\n")
    print("| policy | needed in 60 d | same call today | not at all today "
          "| as if kept: same call … not at all, today "
          "| same call, archive indexed | not at all, archive indexed "
          "| as if kept: same call, indexed | as if kept: not at all, indexed "
          "| worst history, indexed as if kept: same call … not at all "
          "| result slots archived notes take: to a first hit … to a first read "
          "| searches with one: to a first hit … to a first read |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, c in acc.items():
        n, m = max(c["needed"], 1), max(c["indexed_needed"], 1)
        kf, ka = max(c["indexed_kept_first"], 1), max(c["indexed_kept_any"], 1)
        slots, searches = max(c["slots"], 1), max(c["searches"], 1)
        worst_same = min(rates[name]["same"], default=math.nan)
        worst_never = max(rates[name]["never"], default=math.nan)
        print(f"| {name} | {c['needed']} | {c['same'] / n:.0%} | {c['never'] / n:.0%} "
              f"| {c['kept_same'] / max(c['kept_first'], 1):.0%} … "
              f"{c['kept_never'] / max(c['kept_any'], 1):.0%} "
              f"| {c['indexed_same'] / m:.0%} | {c['indexed_never'] / m:.0%} "
              f"| {c['indexed_kept_same'] / kf:.0%} ({c['indexed_kept_first']}) "
              f"| {c['indexed_kept_never'] / ka:.0%} ({c['indexed_kept_any']}) "
              f"| {worst_same:.0%} … {worst_never:.0%} "
              f"| {c['archived_slots'] / slots:.1%} … {c['slots_until_read'] / slots:.1%} "
              f"| {c['searches_with_archived'] / searches:.1%} … "
              f"{c['searches_until_read'] / searches:.1%} |")


def learned_restore_index(
    calls: list[rp.Call], texts: dict[str, str], hits: list[rp.ReplayHit], min_searches: int
) -> list[list[tuple[str, float, bool]]]:
    """``restore_index`` with each note's words extended by the words of the earlier
    searches that found it (its first result, or read after it): a vocabulary learned from
    past queries, in time order, a word learned by at most 3 notes and ``min_searches``
    searches. Measured here only (docs/decisions.md: not chosen)."""
    from collections import Counter

    from memoryd.policy.restore_match import (
        DISTINCTIVE_NOTES,
        RESTORE_THRESHOLD,
        _document,
        _words,
        document_frequency,
    )

    df = document_frequency(texts.values())
    index: dict[str, set[str]] = {}
    for path, text in texts.items():
        doc = _document(text)
        for w in (*doc.words, *doc.tags):
            index.setdefault(w, set()).add(path)
    strong: dict[float, list[str]] = {}
    for h in hits:
        if h.kind == "search" and h.strong and h.path in texts:
            strong.setdefault(h.ts, []).append(h.path)
    by_note: dict[str, Counter[str]] = {}
    notes_of: dict[str, set[str]] = {}

    def learned(path: str) -> set[str]:
        return {w for w, n in by_note.get(path, Counter()).items()
                if n >= min_searches and len(notes_of[w]) <= DISTINCTIVE_NOTES}  # fmt: skip

    out: list[list[tuple[str, float, bool]]] = [[] for _ in calls]
    for i in sorted(range(len(calls)), key=lambda i: calls[i].ts):
        words = _words(calls[i].query)
        near: set[str] = set()
        for w in words:
            near |= index.get(w, set()) | notes_of.get(w, set())
        row = []
        for p in near:
            doc, extra = _document(texts[p]), learned(p)
            own = set(doc.words) | set(doc.tags)
            score = sum(1 for w in words if w in own or w in extra) / max(len(words), 1)
            if score >= RESTORE_THRESHOLD:
                named = any((w in own or w in extra) and df.get(w, 0) <= DISTINCTIVE_NOTES
                            for w in words)  # fmt: skip
                row.append((p, score, named))
        out[i] = sorted(row, key=lambda ps: (-ps[1], ps[0]))
        for p in strong.get(calls[i].ts, ()):  # learned once the call is over
            for w in words:
                by_note.setdefault(p, Counter())[w] += 1
                notes_of.setdefault(w, set()).add(p)
    return out


def _stem(word: str) -> str:
    """A light English suffix stripper (what a local stemmer could add; measured only)."""
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""),
                         ("ly", "")):  # fmt: skip
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)] + repl
    return word


def minimum_table(args: argparse.Namespace, weights: tuple[float, ...]) -> None:
    """How far the calibrated chance is from what followed, by the minimum of verdicts."""
    from memoryd.policy import calibration as cb

    print("| minimum verdicts | calibrated verdicts | largest bin error (>= 50) | need FA |")
    print("|---|---|---|---|")
    for minimum in (50, 100, 200, 400):
        cb.MIN_VERDICTS = minimum
        pairs: list[tuple[float, bool, bool, bool | None]] = []
        need_false = archived = 0
        for _label, seed, params in histories(args.seeds, args.offset, args.family):
            inp = replay_inputs(make(args.family, seed, params))
            (r,) = rp.replay(inp["files"], inp["hits"], inp["runs"], [pc.Likely(weights=weights)],
                             needs=inp["needs"])  # fmt: skip
            pairs += [c for c, f in zip(r.calibration, r.calibrated_flags, strict=True) if f]
            assert r.need is not None
            need_false += r.need.false_archives
            archived += r.archived
        worst = max(
            (abs(float(b["predicted"]) - float(b["observed_strong"]))
             for b in rp.calibration_bins(pairs) if int(b["n"]) >= 50),
            default=0.0,
        )  # fmt: skip
        print(f"| {minimum} | {len(pairs)} | {worst:.3f} | {need_false / max(archived, 1):.3f} |")


def lag_table(args: argparse.Namespace, weights: tuple[float, ...]) -> None:
    """How close a calibrated chance can come to what followed, per history, by what is known.

    At every run the shipped ``likely`` calibrated, the same calibration (``cb.fit``) is
    fitted on the verdicts of the runs up to that one with their *whole* outcome, including
    outcomes still in the future at that run: up to the run itself (in-sample), up to the
    run a month before, and up to two runs before (about what the shipped calibrator
    knows, whose verdicts need their 60 days behind them); and on the run's own verdicts
    alone (the sampling floor). Each prints a chance for the run's verdicts, and
    ``simulate``'s table is made per history. A row that may look into the future shows what
    the lag of the outcome, not the model, costs.
    """
    from memoryd.policy import calibration as cb

    rows: dict[str, list[tuple[float, bool, bool, bool | None]]] = {}
    per_history: dict[str, list[float]] = {}
    names = ("this run only (future)", "runs up to this one (future)",
             "runs up to a month before (future)", "runs up to two before",
             "shipped (60 days passed)")  # fmt: skip
    for _label, seed, params in histories(args.seeds, args.offset, args.family):
        inp = replay_inputs(make(args.family, seed, params))
        (res,) = rp.replay(inp["files"], inp["hits"], inp["runs"], [pc.Likely(weights=weights)],
                           needs=inp["needs"])  # fmt: skip
        runs = [t for t, _ in res.calibrations]
        by_run: dict[float, list[int]] = {}
        for i, s in enumerate(res.samples):
            by_run.setdefault(s.t, []).append(i)
        pairs: dict[str, list[tuple[float, bool, bool, bool | None]]] = {n: [] for n in names}
        for k, (t, cal) in enumerate(res.calibrations):
            if cal is None:
                continue
            here = by_run.get(t, [])
            known_by = {names[0]: [t], names[1]: runs[: k + 1], names[2]: runs[:k],
                        names[3]: runs[: max(k - 1, 0)]}  # fmt: skip
            for name, known in known_by.items():
                sel = [s for r in known for s in (res.samples[i] for i in by_run.get(r, []))]
                c = cb.fit(sel, min_verdicts=1, min_runs=1, size=res.samples[here[0]].files) \
                    if sel and here else None
                for i in here:
                    s, shipped = res.samples[i], res.calibration[i]
                    printed = c.apply(s.p, group=s.group) if c is not None else shipped[0]
                    pairs[name].append((printed, *shipped[1:]))
            pairs[names[4]] += [res.calibration[i] for i in here]
        for name, ps in pairs.items():
            rows.setdefault(name, []).extend(ps)
            per_history.setdefault(name, []).extend(
                abs(float(b["predicted"]) - float(b["observed_strong"]))
                for b in rp.calibration_bins(ps) if int(b["n"]) >= 50
            )  # fmt: skip
    last = args.offset + args.seeds - 1
    print(f"family {args.family}, seeds {args.offset}..{last} (default and sampled), "
          f"generic weights fitted on family {args.fit_family}\n")  # fmt: skip
    print("| fitted on the outcomes of | bins of >= 50 per history | off by > 0.10 | "
          "mean error | pooled largest |")  # fmt: skip
    print("|---|---|---|---|---|")
    for name in names:
        errs = per_history[name]
        worst = max((abs(float(b["predicted"]) - float(b["observed_strong"]))
                     for b in rp.calibration_bins(rows[name]) if int(b["n"]) >= 50),
                    default=0.0)  # fmt: skip
        off = sum(e > 0.1 for e in errs)
        print(f"| {name} | {len(errs)} | {off} ({off / max(len(errs), 1):.0%}) | "
              f"{statistics.mean(errs):.3f} | {worst:.3f} |")  # fmt: skip


def fit(seeds: int, family: str = "a") -> list[float]:
    """Logistic regression (Newton steps) of "needed within 60 days" on likely_features,
    on ``family``'s seeds 0..seeds-1 (default and sampled parameters)."""
    import bisect
    import math

    xs: list[list[float]] = []
    ys: list[float] = []

    class Record(pc.Policy):
        name = "record"

        def decide(self, v: pc.FileView) -> pc.Verdict:
            seen.append(v)
            return pc.Verdict(False, "record", "")

    for fam, _label, seed, params in [(f, *h) for f in family for h in histories(seeds, 0, f)]:
        h = make(fam, seed, params)
        inp = replay_inputs(h)
        seen: list[pc.FileView] = []
        rp.replay(inp["files"], inp["hits"], inp["runs"], [Record()])
        needs = inp["needs"]
        for v in seen:
            ts = needs.get(v.path, [])
            i = bisect.bisect_right(ts, v.t)
            xs.append(pc.likely_features(v))
            ys.append(1.0 if i < len(ts) and ts[i] <= v.t + pc.HORIZON_DAYS * pc.DAY else 0.0)
    d = len(xs[0])
    w = [0.0] * d
    for _ in range(12):
        hess = [[0.0] * d for _ in range(d)]
        grad = [0.0] * d
        for x, y in zip(xs, ys, strict=True):
            z = sum(a * b for a, b in zip(w, x, strict=True))
            p = 1 / (1 + math.exp(-max(min(z, 30), -30)))
            r = p * (1 - p)
            for i in range(d):
                grad[i] += (y - p) * x[i]
                xi = x[i] * r
                row = hess[i]
                for j in range(d):
                    row[j] += xi * x[j]
        for i in range(d):
            hess[i][i] += 1e-3
        w = [a + b for a, b in zip(w, _solve(hess, grad), strict=True)]
    print(f"fitted on {len(xs)} family-{family} verdicts, "
          f"{sum(ys) / len(ys):.3f} needed within 60 days", file=sys.stderr)  # fmt: skip
    return w


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    n = len(b)
    m = [[*row[:], b[i]] for i, row in enumerate(a)]
    for c in range(n):
        piv = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[piv] = m[piv], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                for k in range(c, n + 1):
                    m[r][k] -= f * m[c][k]
    return [m[i][n] / m[i][i] for i in range(n)]


def restore_table(seeds: int, offset: int) -> None:
    """Precision and recall of best_match at several thresholds, on generated queries."""
    from memoryd.policy import restore_match as rm

    rows = []
    for s in range(offset, offset + seeds):
        h = generate(s, sample_params(random.Random(20_000 + s)))
        texts = {f.path: f.text for f in h.files}
        rng = random.Random(s)
        for _call, _ts, query, needed in h.calls:
            if rng.random() > 0.3:
                continue
            # the archive at that moment: the needed note plus notes older than 30 days
            pool = {p: t for p, t in texts.items() if p == needed or rng.random() < 0.5}
            scores = {p: rm.match_score(query, t) for p, t in pool.items()}
            rows.append((needed, scores))
    print(
        f"{len(rows)} queries for a note, against ~half the other notes as the archive: "
        "with the needed note archived (left) and not archived (right)\n"
    )
    print(
        "| threshold | restores the needed note | restores another note | restores nothing "
        "| not archived: restores a wrong note |"
    )
    print(
        "|-----------|--------------------------|-----------------------|------------------"
        "|-------------------------------------|"
    )
    for th in (0.34, 0.5, 0.6, 0.67, 0.75, 0.8, 0.9, 1.0):
        right = wrong = none = stray = 0
        for needed, scores in rows:
            best = max(sorted(scores), key=lambda p: scores[p])
            if scores[best] < th:
                none += 1
            elif best == needed:
                right += 1
            else:
                wrong += 1
            stray += any(s >= th for p, s in scores.items() if p != needed)
        n = len(rows)
        print(
            f"| {th:9.2f} | {right / n:24.3f} | {wrong / n:21.3f} | {none / n:16.3f} "
            f"| {stray / n:35.3f} |"
        )


if __name__ == "__main__":
    main()
