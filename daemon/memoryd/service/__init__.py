"""The daemon (``memoryd run``), one module per job; importing this package imports nothing.

* :mod:`.schedule` — pure: which jobs are due, what the clocks say after a gap (the rules of
  time themselves are :mod:`memoryd.timerules`, the ``flock`` helper :mod:`memoryd.locks`:
  ``memoryd status`` reads both without importing anything of this package);
* :mod:`.cron_trigger` — the daemon's APScheduler triggers, fired as ``timerules`` reads them;
* :mod:`.systemd` — sd_notify readiness, watchdog pings, the ``STATUS=`` line;
* :mod:`.ingest_worker` — the work queue, the ingest worker, restore on demand after a pass;
* :mod:`.job_runner` — runs organize / reflect / expire one at a time, when due;
* :mod:`.main` — the process: threads, observers, scheduler, signals, reload, shutdown,
  and :func:`~memoryd.service.main.run_daemon`, what ``memoryd run`` calls.
"""
