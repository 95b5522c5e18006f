"""The demo-sized preset: the corpus at the size and span of ``memoryd demo``'s install.

``memoryd demo`` writes its own install (:mod:`memoryd.demo_install`, the everyday line
shape only, no reference counts); tests and benchmarks that want an install of that size
*with* every dialect, decoy and the reference counts take this one. It is the install the
demo built before it had its own, byte for byte, so figures measured on it still hold.
:func:`generate_demo` is :func:`.sessions.generate` with :data:`DEMO`.
"""

from __future__ import annotations

from pathlib import Path

from .sessions import generate
from .truth import CorpusTruth

# Eight months of sessions, a memory call every 4 KB of transcript: `simulate` needs 30 days
# of hits before a replayed monthly run and 60 after it, so this span gives it four runs to
# replay (90 days gave none), and enough hits that its tables say something.
DEMO = {
    "seed": 7,
    "sessions": 12,
    "target_bytes": 400_000,
    "span_days": 240,
    "call_every_bytes": 4_000,
}


def generate_demo(root: Path, *, now: float, size_mb: int | None = None) -> CorpusTruth:
    """The demo-sized preset: 12 sessions, about 400 KB, over eight months (long enough for
    ``memoryd simulate`` to replay several runs).

    ``size_mb`` (as ``memoryd demo --size N``): a heavy user's year instead, about N MB of
    transcripts in 6 sessions per 10 MB (the shape of the 1 GB, 600-transcript install
    issue 32 measured), as memory-heavy as the small one.
    """
    if size_mb is None:
        return generate(
            root,
            now=now,
            seed=DEMO["seed"],
            sessions=DEMO["sessions"],
            target_bytes=DEMO["target_bytes"],
            span_days=DEMO["span_days"],
            call_every_bytes=DEMO["call_every_bytes"],
        )
    return generate(
        root,
        now=now,
        seed=DEMO["seed"],
        sessions=max(12, size_mb * 6 // 10),
        target_bytes=size_mb << 20,
        span_days=365,
        call_every_bytes=DEMO["call_every_bytes"],
    )
