"""A seeded generator of realistic OpenClaw installs, with the hits they must yield.

memoryd's counts are only as good as the tests that check them, and a test is only as
good as its input. This package writes what an OpenClaw install looks like after three
months of use (transcripts in every dialect listed in openclaw-formats.md §2–4, decoys
everywhere a careless reader would count, a workspace of notes) and returns the
independent reference: the hits the generator *decided* to write, computed from its
own decisions and never by reading the files back.

The counting contract the reference follows: one hit per (agent, call id, memory
file); the hit time is the time of the line that carries the result (the line's ISO
``timestamp`` or the message's millisecond ``timestamp``, which the generator keeps
within the same second); memory files are ``MEMORY.md``, ``memory.md`` and
``memory/**/*.md`` inside the workspace; dreaming queries (``__dreaming_…``) and cron
sessions (``cron:<jobId>`` in ``sessions.json``) do not count. A deleted session's
``.zst`` archive is a copy of a transcript that is still live: it adds no hit.

Same arguments, same bytes: everything random comes from one ``random.Random(seed)``
(:mod:`.draw`). The parts:

- :mod:`.workspace` builds the agent's workspace: memory notes and the files around them;
- :mod:`.dialects` and :mod:`.payloads` choose how each memory call is spelled and what
  the tool answers;
- :mod:`.openclaw_jsonl` writes OpenClaw JSONL transcript lines, :mod:`.claude_code` the
  Claude Code ``tool_result`` answers they may carry;
- :mod:`.sessions` plans the install (which transcripts, decoys, indexes) and writes it;
- :mod:`.truth` holds the reference counts (:class:`CorpusTruth`);
- :mod:`.demo` is the demo-sized preset (the size and span of ``memoryd demo``'s install).

Used by the ground-truth tests and ``bench/`` (imported as ``support.corpus``: tests/ is on
``sys.path``). It is not part of the wheel: ``memoryd demo`` writes its own small install
(:mod:`memoryd.demo_install`).
"""

from __future__ import annotations

from .demo import DEMO, generate_demo
from .dialects import DIMS
from .openclaw_jsonl import iso_ms
from .sessions import generate
from .truth import DAY, CorpusTruth, Transcript
from .workspace import SPAN_DAYS

__all__ = [
    "DAY",
    "DEMO",
    "DIMS",
    "SPAN_DAYS",
    "CorpusTruth",
    "Transcript",
    "generate",
    "generate_demo",
    "iso_ms",
]
