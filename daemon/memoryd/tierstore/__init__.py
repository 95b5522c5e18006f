"""The tier store of seed 004: hot/ → warm/ → gist/ → forgotten/, in one house.

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

from .graveyard import BuriedFile, bury, expired_archives, graveyard_archive, graveyard_dir
from .layout import (
    DAY,
    HOUR,
    KEY_PREFIX,
    STAGING,
    SUMMARY_SUFFIX,
    TIERS,
    Placement,
    TierFile,
    ensure_layout,
    hit_key,
    is_summary_name,
    key_of_tier_path,
    note_of,
    note_of_key,
    original_rel,
    placement_of,
    scan_store,
    scan_tier,
    summary_name,
    summary_rel,
    tiers_lock,
)
from .plan import Action, TierPolicy, plan_note, plan_store, rotation
from .records import (
    NoteRecord,
    last_retrievals,
    load_records,
    mark_rescued,
    notes_with_mark,
    promote_inputs,
    reconcile,
    refcount_document,
    refcount_path,
    save_records,
    tier_of,
    write_refcount,
)

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
