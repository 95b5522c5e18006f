"""The daemon (``memoryd run``), one module per job; importing this package imports nothing.

* :mod:`.schedule` — pure: the zone, cron reading, triggers, fire times, which jobs are due
  (``memoryd status`` imports this and :mod:`.lock` only, never the daemon's threads);
* :mod:`.lock` — the one ``flock`` helper: the daemon's single-instance lock, the mover's
  and the tier store's locks;
* :mod:`.systemd` — sd_notify readiness, watchdog pings, the ``STATUS=`` line;
* :mod:`.ingest_worker` — the work queue, the ingest worker, restore on demand after a pass;
* :mod:`.job_runner` — runs organize / reflect / expire one at a time, when due;
* :mod:`.main` — the process: threads, observers, scheduler, signals, reload, shutdown,
  and :func:`~memoryd.service.main.run_daemon`, what ``memoryd run`` calls.
"""
