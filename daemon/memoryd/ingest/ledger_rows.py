"""Rows inserted several a statement: the ledger's one way to write many rows of a table.

A multi-row ``INSERT`` built once per shape and applied to rows kept in one flat list costs
the ingest less than ``executemany``. Importing it also registers the adapter that binds
``None`` without the sqlite3 module's slow lookups (below).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence

# The sqlite3 module "adapts" any value but an int, float or str before binding it: for None,
# two failed attribute lookups (docs/benchmarks.md counts them). An adapter registered for
# None's type is found by one dictionary lookup, and this one (a C method) returns None,
# which binds as NULL.
sqlite3.register_adapter(type(None), {}.get)  # type: ignore[arg-type]  # (see above)

# Rows a multi-row INSERT carries, largest first; fewer than the smallest go by executemany
# (docs/benchmarks.md, "The scanner's constants"). 64 rows of 11 values stay under 999, the
# bound on a statement's parameters in SQLite builds before 3.32.
_ROWS_PER_STATEMENT = (64, 16, 4)
# The source id comes first: bound once a statement (``?1``), not once a row.
_INSERT_HITS = (
    "INSERT OR IGNORE INTO hits(source_id, agent, call_id, memory_path, kind, ts, query, "
    "score, start_line, end_line, session) VALUES "
)


@functools.cache
def _values(head: str, width: int, rows: int, shared: int = 0) -> str:
    """``head`` with ``rows`` groups of ``shared`` numbered (``?1``…) and ``width`` plain
    placeholders: a plain ``?`` takes the number after the largest one used before it."""
    one = "(" + ",".join([f"?{j}" for j in range(1, shared + 1)] + ["?"] * width) + ")"
    return head + ",".join([one] * rows)


def insert_rows(
    conn: sqlite3.Connection, head: str, width: int, values: Sequence[object],
    shared: Sequence[object] = (),
) -> int:  # fmt: skip
    """``head`` (an ``INSERT … VALUES``) for each row of ``values``, in order, several a
    statement; the ``shared`` values (the first columns of ``head``) are the same for every
    row. Returns how many rows it inserted (not those the strength triggers update).

    ``values`` holds the rows flat, ``width`` values each: a statement's parameters are one
    slice of it. SQLite applies a multi-row ``VALUES`` one row after the other, as
    ``executemany`` would: an ``OR IGNORE`` keeps the first of two rows with the same key.
    """
    i, n, k = 0, len(values) // width, len(shared)
    inserted = 0
    for size in _ROWS_PER_STATEMENT:
        if n - i < size:
            continue
        sql = _values(head, width, size, k)
        step = size * width
        while n - i >= size:
            at = i * width
            inserted += conn.execute(sql, [*shared, *values[at : at + step]]).rowcount
            i += size
    if i < n:
        inserted += conn.executemany(
            _values(head, width, 1, k),
            [(*shared, *values[j * width : (j + 1) * width]) for j in range(i, n)],
        ).rowcount
    return inserted
