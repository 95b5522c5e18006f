"""Test data for memoryd's tests and benchmarks, written on demand (never used by the daemon).

- :mod:`memoryd.testing.openclaw_store` writes an install's conversations in the layout of
  OpenClaw's SQLite transcript store (schemas 13, 22 and 24) and replays what OpenClaw does to
  it while memoryd is not running (deletes, cold storage, in-place rewrites);
- :mod:`memoryd.testing.histories` generates year-long hit histories with a known need behind
  every search, for replaying expire policies.

:mod:`memoryd.corpus` writes the JSONL install with its reference counts.
"""
