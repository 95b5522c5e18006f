"""Test data only tests and benchmarks use, written on demand; the runtime never imports it.

- :mod:`memoryd.testing.openclaw_store` writes an install's conversations in the layout of
  OpenClaw's SQLite transcript store (schemas 13, 22 and 24) and replays what OpenClaw does to
  it while memoryd is not running (deletes, cold storage, in-place rewrites);
- :mod:`memoryd.testing.histories` generates year-long hit histories with a known need behind
  every search, for replaying expire policies.

The JSONL install generator they build on, with its reference counts, is :mod:`memoryd.corpus`:
it ships with the runtime because ``memoryd demo`` runs its small preset.
"""
