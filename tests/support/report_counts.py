"""``memoryd hits --json`` read back as hits per file, and differences that read well.

Shared by the tests that compare memoryd's counts with a corpus's reference counts.
"""

from __future__ import annotations

from typing import Any


def counts_of(doc: dict[str, Any]) -> dict[str, int]:
    """Hits per memory file from a ``hits --json`` document, the never-hit files as 0."""
    got = {f["path"]: f["hits"] for f in doc["files"]}
    got.update({p: 0 for p in doc["never_hit"]})
    return got


def diff(want: dict[str, int], got: dict[str, int]) -> dict[str, tuple[int | None, int | None]]:
    """Only the files that differ, as {path: (expected, got)}: readable failure messages."""
    return {
        p: (want.get(p), got.get(p))
        for p in sorted(set(want) | set(got))
        if want.get(p) != got.get(p)
    }
