"""The organize job: layer by mtime, forget, clean up.

A thin action over :mod:`memoryd.tierstore`, which holds the layout, the pure
plan and the carrying out (:func:`memoryd.tierstore.organize`); this module is
what the scheduler and ``memoryd organize`` call.
"""

from __future__ import annotations

from ..config import Config, Paths
from ..store import Store
from ..tierstore.organize import OrganizeResult, organize


def run(
    cfg: Config, paths: Paths, store: Store, now: float, *, dry_run: bool = False
) -> OrganizeResult:
    """Organize the tier store once; with ``dry_run`` only the plan, nothing touched."""
    return organize(cfg, paths, store, now, dry_run=dry_run)
