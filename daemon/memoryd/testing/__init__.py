"""Test data for memoryd and for tools built on it: OpenClaw installs written on demand.

:mod:`memoryd.corpus` writes an install in the JSONL layout with its reference counts;
:mod:`memoryd.testing.openclaw_store` writes the same conversations in the layout of
OpenClaw's SQLite transcript store (schemas 13, 22 and 24) and replays what OpenClaw
does to it while memoryd is not running (deletes, cold storage, in-place rewrites).
Nothing here is imported by memoryd itself.
"""
