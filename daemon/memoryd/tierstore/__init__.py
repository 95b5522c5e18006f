"""The tier store: hot/ → warm/ → gist/ → forgotten/, in one house.

- :mod:`.layout`: the folders, how a file name maps to a note, what is on disk.
- :mod:`.records`: each note's row in ``tier_files``, its marks (from the ``marks``
  table only), and ``refcount.json``.
- :mod:`.plan`: the pure plan of organize, one function per step of the seed.
- :mod:`.graveyard`: the monthly archive a deleted note's last copy goes to.
- :mod:`.gist`: summaries (extractive, or a configured command).
- :mod:`.organize`: the plan carried out through the journaled mover.
- :mod:`.recall`: layered search, the reverse rotation on a hit, session injection.

The names below are the pure core and the records; import :mod:`.organize`,
:mod:`.recall` and :mod:`.gist` where they are needed (they are what moves files).
"""

from __future__ import annotations

import importlib
from typing import Any

# Names are imported on first use (PEP 562): ``inject`` at a session's start needs only hot/,
# not the graveyard's zip and hashing modules nor the gist extractor.
_WHERE = {
    "Action": "plan",
    "BuriedFile": "graveyard",
    "DAY": "layout",
    "HOUR": "layout",
    "KEY_PREFIX": "layout",
    "NoteRecord": "records",
    "Placement": "layout",
    "STAGING": "layout",
    "SUMMARY_SUFFIX": "layout",
    "TIERS": "layout",
    "TierFile": "layout",
    "TierPolicy": "plan",
    "bury": "graveyard",
    "ensure_layout": "layout",
    "expired_archives": "graveyard",
    "graveyard_archive": "graveyard",
    "graveyard_dir": "graveyard",
    "hit_key": "layout",
    "is_summary_name": "layout",
    "key_of_tier_path": "layout",
    "last_retrievals": "records",
    "load_records": "records",
    "mark_rescued": "records",
    "note_of": "layout",
    "note_of_key": "layout",
    "notes_with_mark": "records",
    "original_rel": "layout",
    "placement_of": "layout",
    "plan_note": "plan",
    "plan_store": "plan",
    "promote_inputs": "records",
    "reconcile": "records",
    "refcount_document": "records",
    "refcount_path": "records",
    "rotation": "plan",
    "save_records": "records",
    "scan_store": "layout",
    "scan_tier": "layout",
    "summary_name": "layout",
    "summary_rel": "layout",
    "tier_of": "records",
    "tiers_lock": "layout",
    "write_refcount": "records",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "DAY",
    "HOUR",
    "KEY_PREFIX",
    "STAGING",
    "SUMMARY_SUFFIX",
    "TIERS",
    "Action",
    "BuriedFile",
    "NoteRecord",
    "Placement",
    "TierFile",
    "TierPolicy",
    "bury",
    "ensure_layout",
    "expired_archives",
    "graveyard_archive",
    "graveyard_dir",
    "hit_key",
    "is_summary_name",
    "key_of_tier_path",
    "last_retrievals",
    "load_records",
    "mark_rescued",
    "note_of",
    "note_of_key",
    "notes_with_mark",
    "original_rel",
    "placement_of",
    "plan_note",
    "plan_store",
    "promote_inputs",
    "reconcile",
    "refcount_document",
    "refcount_path",
    "rotation",
    "save_records",
    "scan_store",
    "scan_tier",
    "summary_name",
    "summary_rel",
    "tier_of",
    "tiers_lock",
    "write_refcount",
]
