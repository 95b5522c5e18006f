"""An install whose boat note ``expire --force`` archived, the daemon's restore-on-demand pass
run in process over it, and the live searches that may ask for the note back.

``test_restore_on_demand`` (what a search brings back) and ``test_restore_semantics`` (what
``restore`` then says about it) start from the same archived note.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support import transcripts as tx
from support.daemon_harness import Install, append, make_install, run_cli

DAY = 86400.0

BOAT = (
    "# Sailing to the Lofoten islands\n"
    "Chartered the ketch Albatross from Svolvaer harbour; skipper Ingrid Halvorsen.\n"
    "Harbour fees paid in kroner, tide tables for the Raftsundet strait.\n"
)


def write_note(inst: Install, rel: str, text: str, mtime: float) -> None:
    """A note at ``rel`` in the install's workspace, last changed at ``mtime``."""
    p = inst.workspace / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    os.utime(p, (mtime, mtime))


def force_archived(inst: Install, notes: dict[str, str], age_days: float = 90) -> dict[str, str]:
    """Each of ``notes`` (path → text) written ``age_days`` old, the live session begun, and
    ``expire --force`` run: where each went (path → archived path)."""
    now = time.time()
    for rel, text in notes.items():
        write_note(inst, rel, text, now - age_days * DAY)
    append(inst.transcript("live"), tx.header("live", ts=now - 60))
    forced = run_cli(inst, "expire", "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    return {a["path"]: a["to"] for a in json.loads(forced.stdout)["archive"]}


def live_search(inst: Install, query: str, returned: list[str]) -> float:
    """Append a memory_search call (and its answer) to the live transcript; its time."""
    cid = f"toolu_{time.monotonic_ns()}"
    # Transcripts stamp whole milliseconds: the next one but one is after every check made
    # so far (a check within the same millisecond would take the search for history).
    t = math.floor(time.time() * 1000 + 2) / 1000
    append(
        inst.transcript("live"),
        tx.call(cid, query=query, ts=t) + tx.result(cid, tx.search_payload(returned), ts=t + 0.2),
    )
    return t


def boat_archived(tmp_path: Path) -> tuple[Install, Callable[[], list[dict]]]:
    """An install whose boat note `expire --force` archived, and the daemon's pass in process:
    ``memoryd scan``, then the restore check (each call returns the check's outcomes)."""
    inst, a_pass, _restorer = boat_archived_watched(tmp_path)
    return inst, a_pass


def boat_archived_watched(tmp_path: Path) -> tuple[Install, Callable[[], list[dict]], Any]:
    """:func:`boat_archived`, and the daemon's watcher (``RestoreOnDemand``) its passes use."""
    now = time.time()
    inst = make_install(tmp_path, '[schedule]\ntimezone = "UTC"\n', memory_files=0)
    write_note(inst, "memory/lofoten-trip.md", BOAT, now - 90 * DAY)
    append(inst.transcript("live"), tx.header("live", ts=now - 60))
    forced = run_cli(inst, "expire", "--force")
    assert forced.returncode == 0, forced.stderr
    assert not (inst.workspace / "memory/lofoten-trip.md").exists()
    a_pass, restorer = daemon_passes(inst)
    return inst, a_pass, restorer


def daemon_passes(inst: Install) -> tuple[Callable[[], list[dict]], Any]:
    """The daemon's pass over ``inst``, in process: ``memoryd scan``, then the restore
    check (each call returns its outcomes); and the watcher (``RestoreOnDemand``) it uses."""
    from memoryd.config import load_config, resolve_paths
    from memoryd.ondemand import RestoreOnDemand
    from memoryd.store import Store

    cfg = load_config(str(inst.config))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    restorer = RestoreOnDemand(cfg, resolve_paths(cfg, env))

    def a_pass() -> list[dict]:
        assert run_cli(inst, "scan").returncode == 0
        with Store.open(inst.db) as store:
            return restorer.check(store)

    return a_pass, restorer
