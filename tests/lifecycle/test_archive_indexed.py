"""The archive in OpenClaw's own index (issue 28, item 2): with ``memory.search.extraPaths``
naming the archive (or an archive inside ``memory/``), OpenClaw's search returns an archived
copy under its archive path, and a ``memory_get`` of that path returns its text
(tests/live/OBSERVED.md). A hit there is the note's own: counted under its name, so its
history stays one; a read of the copy brings the note home, journaled, once the read is over.

Real files, a real state database, the real scanner and restore check.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from support import transcripts as tx
from support.archived_boat import BOAT, daemon_passes, force_archived, live_search, write_note
from support.daemon_harness import Install, append, make_install, run_cli

DENTIST = "# Orthodontist appointments\nDr. Okonkwo, retainer check every eight weeks.\n"


def _archived(tmp_path: Path, archive_dir: str | None) -> tuple[Install, dict[str, str]]:
    """The boat and dentist notes archived by `expire --force`; OpenClaw's config names the
    archive as an extra path (``archive_dir`` None: the default archive, outside memory/)."""
    conf = '[schedule]\ntimezone = "UTC"\n'
    if archive_dir is not None:
        conf += f'[archive]\ndir = "{archive_dir}"\n'
    inst = make_install(tmp_path, conf, memory_files=0)
    # (OpenClaw's config names the workspace, as on a user's machine: memoryd's own
    # `openclaw.workspace` would stand for every agent and leave openclaw.json unread)
    oc = {
        "agents": {"defaults": {"workspace": str(inst.workspace)}},
        "memory": {"search": {"extraPaths": ["memory-archive"]}},
    }
    (inst.root / "state" / "openclaw.json").write_text(json.dumps(oc), encoding="utf-8")
    inst.base_config = inst.base_config.replace(f'workspace = "{inst.workspace}"\n', "")
    inst.write_config(conf)
    notes = {"memory/lofoten-trip.md": BOAT, "memory/orthodontist.md": DENTIST}
    return inst, force_archived(inst, notes)


def _get(inst: Install, path: str, text: str) -> None:
    cid = f"toolu_{time.monotonic_ns()}"
    t = math.floor(time.time() * 1000 + 2) / 1000
    append(
        inst.transcript("live"),
        tx.call(cid, tool="memory_get", path=path, ts=t)
        + tx.result(cid, {"path": path, "text": text}, ts=t + 0.2, tool="memory_get"),
    )


def _hits(inst: Install) -> dict[str, int]:
    shown = run_cli(inst, "hits", "--all", "--json")
    assert shown.returncode == 0, shown.stderr
    return {f["path"]: f["hits"] for f in json.loads(shown.stdout)["files"] if f["hits"]}


def test_hits_on_an_archived_copy_count_under_the_note_and_a_read_brings_it_home(
    tmp_path: Path,
) -> None:
    inst, archived = _archived(tmp_path, None)
    copy = archived["memory/lofoten-trip.md"]
    assert copy.startswith("memory-archive/")
    a_pass, _ = daemon_passes(inst)
    assert a_pass() == []  # the first check: history
    # OpenClaw's search found the copy in the archive (in words no keyword match takes for
    # the note): a hit of the note, and no move: a search's result is not yet a need
    live_search(inst, "the norwegian holiday", [copy])
    assert a_pass() == []
    assert _hits(inst) == {"memory/lofoten-trip.md": 1}
    assert (inst.workspace / copy).exists()
    # the agent reads the copy: its text came back from the archive, the note goes home
    _get(inst, copy, BOAT)
    [event] = a_pass()
    assert event["outcome"] == "restored" and event["trigger"] == "read"
    assert event["path"] == "memory/lofoten-trip.md" and event["archived"] == copy
    assert (inst.workspace / "memory/lofoten-trip.md").read_text(encoding="utf-8") == BOAT
    assert not (inst.workspace / copy).exists()
    assert _hits(inst) == {"memory/lofoten-trip.md": 2}  # one history, not two
    assert a_pass() == []  # looked at once
    # the dentist note is still archived, and the hits list shows no copy as a note
    assert (inst.workspace / archived["memory/orthodontist.md"]).exists()
    listed = json.loads(run_cli(inst, "hits", "--all", "--json").stdout)["files"]
    assert not [f for f in listed if f["path"].startswith("memory-archive/")]
    # journaled: `restore` names the read as what brought the note back
    again = run_cli(inst, "restore", "memory/lofoten-trip.md")
    assert "a search or a read asked for it" in again.stdout + again.stderr


def test_an_archive_inside_memory_is_the_same_and_a_users_own_file_there_stays_itself(
    tmp_path: Path,
) -> None:
    inst, archived = _archived(tmp_path, "memory/archive-{month}")
    copy = archived["memory/orthodontist.md"]
    assert copy.startswith("memory/archive-")
    own = copy.rsplit("/", 1)[0] + "/my-own-list.md"  # a user's file in the archive folder
    write_note(inst, own, "# Packing list\n", time.time())
    a_pass, _ = daemon_passes(inst)
    assert a_pass() == []
    live_search(inst, "braces", [copy, own])
    _get(inst, own, "# Packing list")
    assert a_pass() == []  # a user's own file is not an archived note: nothing moves
    assert (inst.workspace / own).exists()
    counted = run_cli(inst, "hits", "--all", "--json")
    rows = {f["path"]: f["hits"] for f in json.loads(counted.stdout)["files"]}
    assert rows.get("memory/orthodontist.md") == 1
    assert not any(p.startswith("memory/archive-") for p, n in rows.items() if n)
    _get(inst, copy, DENTIST)
    [event] = a_pass()
    assert event["outcome"] == "restored" and event["path"] == "memory/orthodontist.md"
    assert (inst.workspace / "memory/orthodontist.md").exists()


def test_a_read_of_a_copy_whose_name_is_taken_moves_nothing(tmp_path: Path) -> None:
    inst, archived = _archived(tmp_path, None)
    copy = archived["memory/lofoten-trip.md"]
    a_pass, _ = daemon_passes(inst)
    assert a_pass() == []
    write_note(inst, "memory/lofoten-trip.md", "# A new trip, other notes\n", time.time())
    _get(inst, copy, BOAT)
    a_pass()
    assert (inst.workspace / copy).read_text(encoding="utf-8") == BOAT  # both stay
    assert (inst.workspace / "memory/lofoten-trip.md").read_text(encoding="utf-8").startswith(
        "# A new trip"
    )
