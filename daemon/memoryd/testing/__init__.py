"""Test data for memoryd's tests, benchmarks and ``memoryd demo``, written on demand.

Nothing here runs in the daemon; ``memoryd demo`` imports :mod:`.corpus` when it runs.

- :mod:`memoryd.testing.corpus` writes an OpenClaw install as JSONL transcripts (every
  dialect, decoys, a workspace of notes) with its reference counts, computed from the
  generator's own decisions; its small preset is what ``memoryd demo`` shows;
- :mod:`memoryd.testing.openclaw_store` writes an install's conversations in the layout of
  OpenClaw's SQLite transcript store (schemas 13, 22 and 24) and replays what OpenClaw does to
  it while memoryd is not running (deletes, cold storage, in-place rewrites);
- :mod:`memoryd.testing.histories` generates year-long hit histories with a known need behind
  every search, for replaying expire policies.
"""
