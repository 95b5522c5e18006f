"""Test data and helpers only tests and benchmarks use, written on demand; not part of the wheel.

Imported as ``support`` (pytest puts tests/ on ``sys.path``; the bench scripts add it), so
an installed memoryd has none of it, and nothing in ``daemon/`` may import it
(``tests/project/test_layers.py`` checks).

- :mod:`support.openclaw_store` writes an install's conversations in the layout of
  OpenClaw's SQLite transcript store (schemas 13, 22 and 24) and replays what OpenClaw does to
  it while memoryd is not running (deletes, cold storage, in-place rewrites);
- :mod:`support.histories` (family A) and :mod:`support.histories_b`, ``_c``, ``_d``, ``_e``
  generate year-long hit histories with a known need behind every search, for replaying expire
  policies; :mod:`support.history_checks` the checks each family's tests run on them;
- everything two test modules share, since no test module imports another
  (``tests/project/test_layers.py`` checks): :mod:`support.transcripts` (OpenClaw's transcript
  lines),
  :mod:`support.inprocess` (the command in the pytest process), :mod:`support.daemon_harness`
  (the daemon as a child), the installs :mod:`support.scanner_install`,
  :mod:`support.agent_rows`, :mod:`support.scan_runs`, :mod:`support.fidelity_install`,
  :mod:`support.explain_state`, :mod:`support.archived_boat`, :mod:`support.plugin_inprocess`
  and :mod:`support.outside_transcripts` build, and stand-ins (:mod:`support.telegram_bot`,
  :mod:`support.systemd`) and readers of records (:mod:`support.plugin_record`,
  :mod:`support.report_counts`, :mod:`support.schedule_helpers`,
  :mod:`support.tool_search_lines`).

The JSONL install generator they build on, with its reference counts, is :mod:`support.corpus`
(``memoryd demo`` writes its own small install: :mod:`memoryd.demo_install`).
"""
