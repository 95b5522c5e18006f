"""Test data only tests and benchmarks use, written on demand; not part of the wheel.

Imported as ``support`` (pytest puts tests/ on ``sys.path``; the bench scripts add it), so
an installed memoryd has none of it, and nothing in ``daemon/`` may import it
(``tests/test_layers.py`` checks).

- :mod:`support.openclaw_store` writes an install's conversations in the layout of
  OpenClaw's SQLite transcript store (schemas 13, 22 and 24) and replays what OpenClaw does to
  it while memoryd is not running (deletes, cold storage, in-place rewrites);
- :mod:`support.histories` (family A) and :mod:`support.histories_b`, ``_c``, ``_d`` generate
  year-long hit histories with a known need behind every search, for replaying expire policies.

The JSONL install generator they build on, with its reference counts, is :mod:`support.corpus`
(``memoryd demo`` writes its own small install: :mod:`memoryd.demo_install`).
"""
