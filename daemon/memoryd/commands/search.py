"""``memoryd search``: rank the memory files by relevance score to a query (read-only)."""

from __future__ import annotations

import argparse

from ..cli import Context, UsageError, positive_int
from .common import add_output_options, emit, ready_to_decide


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="rank memory files by relevance score to a query")
    p.add_argument("query", nargs="+", metavar="WORD", help="the words to look for")
    p.add_argument(
        "--top", type=positive_int, default=10, metavar="N", help="how many files (default 10)"
    )
    add_output_options(p)
    p.set_defaults(func=cmd_search)


def cmd_search(args: argparse.Namespace, ctx: Context) -> int:
    from ..policy import score as sp
    from ..reports import score_row
    from ..signals import snapshot

    now = ready_to_decide(args, ctx)
    snap = snapshot(ctx.cfg, ctx.paths, ctx.read_store(), now)
    query = " ".join(args.query)
    queries = sp.prepare_queries([query])
    if not queries:
        raise UsageError(f"{query!r}: no words to search for")
    scores = [
        sp.score(sig, sp.Document.of(snap.text(sig.path)), queries, ctx.cfg.score)
        for sig in snap.signals
    ]
    ranked = sorted(scores, key=lambda s: (-s.total, s.path))[: args.top]
    w = ctx.cfg.score
    doc = {
        "query": query,
        "words": queries[0][1],
        "weights": {
            "keyword": w.keyword_weight,
            "time": w.time_weight,
            "access": w.access_weight,
            "tag": w.tag_weight,
        },
        "results": [score_row(s) for s in ranked],
    }
    text = [f"{'score':>6} {'keyword':>8} {'time':>6} {'access':>7} {'tag':>5}  file"]
    for s in ranked:
        text.append(
            f"{s.total:6.3f} {s.keyword or 0:8.2f} {s.time:6.2f} {s.access:7.2f} "
            f"{s.tag or 0:5.2f}  {s.path}"
        )
    emit(ctx, args, doc, text)
    return 0
