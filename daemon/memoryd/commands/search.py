"""``memoryd search``: rank the memory files by relevance score to a query (read-only)."""

from __future__ import annotations

import argparse

from ..results import counted
from .common import add_output_options, emit, ready_to_decide
from .context import Context, UsageError
from .formats import positive_int


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
    docs = [(sig, sp.Document.of(snap.text(sig.path))) for sig in snap.signals]
    scores = [sp.score(sig, d, queries, ctx.cfg.score) for sig, d in docs]
    # Only files the words are in (as text, or as one of the file's tags: a file without
    # tags scores a neutral 0.5 there): a file that matches nothing is no result, however
    # recent or used (its time and access parts would rank it anyway).
    matched = [
        s
        for s, (_, d) in zip(scores, docs, strict=True)
        if (s.keyword or 0) > 0 or (d.tags and (s.tag or 0) > 0)
    ]
    ranked = sorted(matched, key=lambda s: (-s.total, s.path))[: args.top]
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
    if not ranked:
        files = counted(len(scores), "memory file")
        emit(ctx, args, doc, [f"nothing matched {query!r} in {files}"])
        return 0
    text = [f"{'score':>6} {'keyword':>8} {'time':>6} {'access':>7} {'tag':>5}  file"]
    for s in ranked:
        text.append(
            f"{s.total:6.3f} {s.keyword or 0:8.2f} {s.time:6.2f} {s.access:7.2f} "
            f"{s.tag or 0:5.2f}  {s.path}"
        )
    emit(ctx, args, doc, text)
    return 0
