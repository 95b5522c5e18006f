"""The scan's own costs, cut without changing what it writes.

- Rows inserted several a statement are the rows ``executemany`` inserts: the same, in
  the same order (row ids), the first of two with one key kept, wherever chunks split.
- Answers that do not name their tool, looked for near their call first (a window per
  id), then the ids still waiting found together by one pass over the rest of the
  region: forced each way on a generated corpus, the state databases are equal row for
  row and count what the generator wrote.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.config import load_config, resolve_paths
from memoryd.ingest import ledger_rows, region_apply
from memoryd.ingest import scan as scan_module
from memoryd.store import Store
from support.corpus import CorpusTruth, generate
from support.scan_runs import NOW, ONE_PROCESS, state_rows, write_config

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> CorpusTruth:
    root = tmp_path_factory.mktemp("writepath-corpus")
    # A memory-heavy corpus: many calls in flight per region, Claude Code answers among them.
    return generate(
        root / "c", seed=5150, sessions=20, target_bytes=2_500_000, now=NOW, call_every_bytes=5600
    )


def test_unnamed_answers_looked_for_near_their_call_first_give_the_rows_of_one_pass(
    corpus: CorpusTruth, tmp_path: Path
) -> None:
    """Ids waiting in a region: each is looked for within a window after its call, then
    the ids still waiting (calls never answered, mostly) in one pass per shared prefix over
    the rest. Whatever the window (none, a few hundred bytes so that most fall through,
    the default) and whether or not there is a pass, the rows are those of a search per id
    and of the pattern pass."""
    ways = {
        "one_by_one": [
            (region_apply, "_DIRECT_ID_SEARCH_MAX", 10**9),
            (region_apply, "_GROUP_PASS_MIN", 10**9),
        ],
        "one_pass_only": [(region_apply, "_GROUP_PASS_MIN", 2), (region_apply, "_NEAR_BYTES", 0)],
        "tiny_window": [(region_apply, "_GROUP_PASS_MIN", 2), (region_apply, "_NEAR_BYTES", 300)],
        "default_window": [(region_apply, "_GROUP_PASS_MIN", 2)],
        "by_pattern": [(region_apply, "_DIRECT_ID_SEARCH_MAX", 0)],
        "as_shipped": [],
    }
    rows = {}
    passes: dict[str, int] = {}
    real_pass = region_apply._id_occurrences
    for name, patches in ways.items():
        cfg = write_config(tmp_path, corpus, name, ONE_PROCESS)
        paths = resolve_paths(load_config(cfg), {})
        passes[name] = 0

        def one_pass(*args: object, _name: str = name) -> object:
            passes[_name] += 1
            return real_pass(*args)  # type: ignore[arg-type]

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(region_apply, "_id_occurrences", one_pass)
            for target, attr, value in patches:
                mp.setattr(target, attr, value)
            with Store.open(paths.db) as store:
                stats = scan_module.Scanner(load_config(cfg), paths, store).scan()
        assert stats.errors == 0
        assert stats.new_hits == corpus.total_hits, name
        rows[name] = state_rows(tmp_path / name)
    first = rows["one_by_one"]
    assert all(r == first for r in rows.values())
    # Each way took its own path: the pass over the region is what the window spares.
    assert passes["one_by_one"] == passes["by_pattern"] == 0
    assert passes["one_pass_only"] > passes["tiny_window"] > 0
    assert passes["default_window"] < passes["one_pass_only"]


# A hit row as the applier builds it (its source id is the batch's): few call ids and
# paths, so that keys repeat.
HIT_ROWS = st.lists(
    st.tuples(
        st.sampled_from(["main", "work"]),
        st.sampled_from(["c1", "c2", "toolu_01A", "call_9"]),
        st.sampled_from(["MEMORY.md", "memory/a.md", "memory/b.md"]),
        st.sampled_from(["search", "get"]),
        st.floats(0, 2e9, allow_nan=False),
        st.one_of(st.none(), st.text(max_size=5)),
        st.one_of(st.none(), st.floats(0, 1)),
        st.one_of(st.none(), st.integers(0, 500)),
        st.one_of(st.none(), st.integers(0, 500)),
        st.sampled_from(["s1", "s2"]),
    ),
    max_size=300,
)


@settings(max_examples=60, deadline=None)
@given(
    rows=HIT_ROWS,
    source_id=st.integers(1, 3),
    split=st.sampled_from([(64, 16, 4), (4,), (1,), ()]),
)
def test_rows_inserted_several_a_statement_are_the_rows_executemany_inserts(
    rows: list[tuple[object, ...]], source_id: int, split: tuple[int, ...]
) -> None:
    tables = []
    for way in ("executemany", "several"):
        store = Store.memory()
        conn = store.conn
        conn.execute(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts) "
            "VALUES ('main', 'c1', 'memory/a.md', 'get', 1.0)"
        )  # one known already
        before = conn.total_changes
        if way == "executemany":
            conn.executemany(
                "INSERT OR IGNORE INTO hits(agent, call_id, memory_path, kind, ts, query, score, "
                "start_line, end_line, session, source_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                [(*row, source_id) for row in rows],
            )
        else:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(ledger_rows, "_ROWS_PER_STATEMENT", split)
                values = [value for row in rows for value in row]
                ledger_rows.insert_rows(
                    conn, ledger_rows._INSERT_HITS, 10, values, (source_id,)
                )
        new = conn.total_changes - before
        tables.append((new, conn.execute("SELECT * FROM hits ORDER BY id").fetchall()))
        store.close()
    assert tables[0] == tables[1]
