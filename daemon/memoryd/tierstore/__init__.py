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
_BY_MODULE = {
    "graveyard": "BuriedFile bury expired_archives graveyard_archive graveyard_dir",
    "layout": (
        "DAY HOUR KEY_PREFIX Placement STAGING SUMMARY_SUFFIX TIERS TierFile ensure_layout"
        " hit_key is_summary_name key_of_tier_path note_of note_of_key original_rel"
        " placement_of scan_store scan_tier summary_name summary_rel tiers_lock"
    ),
    "plan": "Action TierPolicy plan_note plan_store rotation",
    "records": (
        "NoteRecord last_retrievals load_records mark_rescued notes_with_mark promote_inputs"
        " reconcile refcount_document refcount_path save_records tier_of write_refcount"
    ),
}
_WHERE = {name: module for module, names in _BY_MODULE.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = sorted(_WHERE)
