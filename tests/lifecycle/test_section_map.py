"""The section mapper: a file's sections, and a hit credited to the sections its text covered,
wherever edits moved those lines since (properties over generated files, and the cases a
user meets: a moved section, a rewritten one, repeated lines, a whole-file read)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.section_map import (
    TOP,
    WHOLE_FILE,
    FileIndex,
    chunk_anchor,
    parse_sections,
    place,
    utf16_len,
    without_annotations,
)

pytestmark = pytest.mark.unit

WORDS = st.text(alphabet="abcdefghij klmnop😀é", min_size=0, max_size=30)
LINE = st.one_of(
    WORDS,
    WORDS.map(lambda w: f"- {w}"),
    st.integers(1, 6).flatmap(lambda n: WORDS.map(lambda w: "#" * n + " " + w)),
    st.just("```"),
    st.just(""),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(LINE, max_size=40))
def test_sections_are_disjoint_in_order_and_cover_the_file_from_the_first_one(lines):
    text = "\n".join(lines)
    secs = parse_sections(text)
    total = utf16_len(text)
    if not secs:  # no heading and nothing but blanks
        assert not text.strip()
        return
    assert secs[-1].end == total
    for a, b in itertools.pairwise(secs):
        assert a.end == b.start and a.last + 1 == b.first
    # only blank lines come before the first section
    assert not text[: secs[0].start].strip() if secs[0].start else True
    assert sum(s.chars for s in secs) == total - secs[0].start
    for s in secs:
        first_line = text.split("\n")[s.first - 1]
        if s.level:
            assert first_line.lstrip(" ").startswith("#" * s.level)
        else:
            assert s.heading == TOP


def test_a_heading_inside_fenced_code_is_no_section():
    text = "# Notes\n```\n# not a heading\n```\n## Real\nbody"
    assert [s.title for s in parse_sections(text)] == ["# Notes", "## Real"]


def test_a_longer_fence_is_closed_only_by_one_as_long_with_nothing_after_it():
    # (CommonMark: a fence closes at the same character, at least as many, no info string)
    text = (
        "# Notes\n````md\n```\n# inside the example\n```\n````\n"
        "~~~\n```python\n# still code\n~~~\n## Real\nbody"
    )
    assert [s.title for s in parse_sections(text)] == ["# Notes", "## Real"]


def test_crlf_lines_and_a_bom_give_the_sections_of_the_same_file_saved_plainly():
    plain = "## Wombat ##\n- a\n#\n- b\n## Okapi\n- c\n"
    for text in (plain.replace("\n", "\r\n"), "\ufeff" + plain):
        got = parse_sections(text)
        assert [(s.title, s.first, s.last) for s in got] == [
            (s.title, s.first, s.last) for s in parse_sections(plain)
        ]
        assert got[-1].end == utf16_len(text)  # (the \r and the BOM are counted, as OpenClaw does)


def _memory(sections: list[tuple[str, list[str]]]) -> str:
    out: list[str] = []
    for heading, body in sections:
        out += [f"## {heading}", *body, ""]
    return "\n".join(out)


def _snippet(text: str, first: int, last: int, path: str = "MEMORY.md") -> str:
    """A search result's snippet as OpenClaw 2026.9.6 writes it: the chunk's lines, then
    (citations "auto") a blank line and where it came from."""
    lines = text.split("\n")[first - 1 : last]
    return "\n".join(lines) + f"\n\nSource: {path}#L{first}-L{last}"


# Section bodies with lines unique across the file (as entries of a MEMORY.md are).
SECTION_SPEC = st.lists(
    st.integers(1, 6), min_size=2, max_size=14
).map(lambda sizes: [
    (f"Topic {i}", [f"- entry {i}.{j} about thing {i * 31 + j}" for j in range(n)])
    for i, n in enumerate(sizes)
])


@settings(max_examples=150, deadline=None)
@given(SECTION_SPEC, st.data())
def test_a_hit_keeps_its_section_when_edits_move_the_lines(spec, data):
    """The credit follows the text: sections reordered, lines added above, a dreaming-style
    append at the end, and the hit still lands on the section whose lines it returned."""
    text = _memory(spec)
    before = FileIndex(text)
    k = data.draw(st.integers(0, len(spec) - 1), label="section hit")
    sec = before.sections[k]
    first = data.draw(st.integers(sec.first, sec.last), label="first line")
    last = data.draw(st.integers(first, sec.last), label="last line")
    anchor = chunk_anchor(first, last, _snippet(text, first, last))
    assert place(before, anchor, first, last).sections == {k}
    order = data.draw(st.permutations(range(len(spec))), label="new order")
    moved = "\n".join(["- a new first entry", "", _memory([spec[i] for i in order])])
    moved += "\n## Light Sleep\n- promoted by dreaming\n"
    after = FileIndex(moved)
    got = place(after, anchor, first, last)
    if any(len(line.strip()) >= 3 for line in text.split("\n")[first - 1 : last]):
        assert {after.sections[i].heading for i in got.sections} == {f"Topic {k}"}
        assert not got.by_lines


def test_a_hit_whose_text_is_gone_is_unplaced_not_guessed_by_its_lines():
    text = _memory([("Wireguard", ["- port 51820", "- keys in pass"]), ("Boat", ["- trip"])])
    anchor = chunk_anchor(1, 3, _snippet(text, 1, 3))
    rewritten = _memory([("Network", ["- something else now"]), ("Boat", ["- trip"])])
    got = place(FileIndex(rewritten), anchor, 1, 3)
    assert got.sections == frozenset() and not got.whole_file


def test_the_heading_alone_still_places_a_hit_whose_entries_were_rewritten():
    text = _memory([("Wireguard", ["- port 51820", "- keys in pass"]), ("Boat", ["- trip"])])
    anchor = chunk_anchor(1, 3, _snippet(text, 1, 3))
    edited = _memory([("Boat", ["- trip"]), ("Wireguard", ["- port 443 now"])])
    index = FileIndex(edited)
    got = place(index, anchor, 1, 3)
    assert [index.sections[i].heading for i in got.sections] == ["Wireguard"]


def test_a_promoted_entry_is_found_as_the_search_snippet_shows_it():
    """OpenClaw 2026.9.6 cuts a promoted entry's recall annotations out of the snippet
    (``stripMemoryAnnotationCarriers``); the entry's line in the file still has them."""
    entry = "- okapi moved house Source: memory/2026-12-02.md#L1-L2"
    line = f"{entry} <!-- trigger: okapi, moved --> <!-- importance: 6 -->"
    text = _memory([("Okapi", ["- fact one"]), ("Consolidated Memory (2026-12-02)", [
        "<!-- openclaw-memory-promotion:memory:memory/2026-12-02.md:1:2 -->", line])])
    index = FileIndex(text)
    got = place(index, chunk_anchor(6, 6, entry), 6, 6)
    assert [index.sections[i].heading for i in got.sections] == [
        "Consolidated Memory (2026-12-02)"]
    assert without_annotations(line).rstrip() == entry
    # only trigger / importance / project comments closed on the line are cut, as OpenClaw does
    assert without_annotations("a <!-- note: keep --> b") == "a <!-- note: keep --> b"
    assert without_annotations("a <!-- Trigger: x --> b") == "a  b"
    assert without_annotations("a <!-- importance: 3") == "a <!-- importance: 3"


def test_a_chunk_that_starts_on_a_repeated_line_credits_its_section_beside_a_unique_heading():
    """A chunk starting on a line the file has several times (a fence, a stock entry) and
    covering a unique heading after it credited only the heading's section: the section it
    started in lost its hit. The repeated line is the occurrence nearest the unique one."""
    text = _memory([
        ("Shell", ["- run it so:", "```", "make all", "```"]),
        ("Boat", ["- trip", "```", "sail", "```"]),
        ("Tea", ["- green"]),
    ])
    lines = text.split("\n")
    first = lines.index("make all") + 2  # the closing fence of Shell's block
    last = lines.index("- trip") + 1
    anchor = chunk_anchor(first, last, _snippet(text, first, last))
    moved = "- a new first entry\n\n" + text  # (so the recorded range says nothing exact)
    index = FileIndex(moved)
    got = place(index, anchor, first, last)
    assert {index.sections[i].heading for i in got.sections} == {"Shell", "Boat"}


def test_a_repeated_heading_after_a_chunks_unique_first_line_is_the_one_after_it():
    """A chunk starting on a unique line of `## Boat` and running into its `### Notes`
    (a heading the file also has just before `## Boat`, under `## Shell`): the repeated
    heading was taken at the occurrence nearest the unique line, the one before it, and the
    hit credited to Shell's `### Notes`, which the chunk never covered."""
    text = "\n".join([
        "## Shell", "- shell entry", "### Notes", "- shell note",
        "## Boat", "- boat trip first", "- boat two", "- boat three", "- boat four",
        "### Notes", "- boat note", "",
    ])  # fmt: skip
    lines = text.split("\n")
    first = lines.index("- boat trip first") + 1
    last = lines.index("- boat note") + 1
    anchor = chunk_anchor(first, last, _snippet(text, first, last))
    index = FileIndex(text)
    got = place(index, anchor, first, last)
    assert sorted(index.sections[i].first for i in got.sections) == [5, 10]


def test_a_line_the_file_has_twice_is_taken_nearest_the_recorded_range():
    body = ["- see the runbook", "- (details below)"]
    text = _memory([("A", ["- alpha only", *body]), ("B", ["- beta only", *body])])
    index = FileIndex(text)
    b = index.sections[1]
    anchor = chunk_anchor(b.first + 2, b.first + 3, "- see the runbook\n- (details below)")
    assert place(index, anchor, b.first + 2, b.first + 3).sections == {1}


def test_a_whole_file_read_and_an_old_hit_without_text():
    text = _memory([("A", ["- one"]), ("B", ["- two"])])
    index = FileIndex(text)
    assert place(index, WHOLE_FILE, None, None).whole_file
    old = place(index, None, 4, 5)  # counted before anchors: its line range is all there is
    assert old.by_lines and old.sections == {1}
    assert place(index, None, 400, 405).sections == frozenset()


def test_several_chunks_of_one_file_in_one_result_each_credit_their_section():
    text = _memory([(f"T{i}", [f"- fact number {i}"]) for i in range(5)])
    index = FileIndex(text)
    a = chunk_anchor(1, 2, _snippet(text, 1, 2))
    b = chunk_anchor(13, 14, _snippet(text, 13, 14))
    assert place(index, f"{a};{b}", 1, 14).sections == {0, 4}


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=400), st.integers(-3, 50), st.integers(-3, 50))
def test_any_anchor_text_and_range_places_without_error(text, start, end):
    index = FileIndex(text)
    junk = random.Random(len(text)).choice(["", ";", "::", "a:b:c", "1:2:zz.", text[:20]])
    for anchor in (chunk_anchor(start, end, text), junk, None):
        got = place(index, anchor, start, end)
        assert all(0 <= i < len(index.sections) for i in got.sections)


def _report_one_hit_at_a_time(text, rows, now, cut, skew=86400.0):
    """``sections_report`` as it was before hits were grouped (issue 33 item 5): each row placed
    on its own by :func:`place`, its counts added one by one. The reference the fast one
    must equal."""
    from memoryd.section_report import DAY

    index = FileIndex(text)
    n = len(index.sections)
    d30, d90, total, last = [0] * n, [0] * n, [0] * n, [None] * n
    hits = un = un30 = un90 = whole = by_lines = 0
    last_un = None
    for ts, start, end, anchor in rows:
        if ts > now + skew:
            continue
        hits += 1
        p = place(index, anchor, start, end)
        by_lines += p.by_lines
        if p.whole_file:
            whole += 1
            continue
        if not p.sections:
            un += 1
            un30 += ts >= now - 30 * DAY
            un90 += ts >= now - 90 * DAY
            last_un = ts if last_un is None or ts > last_un else last_un
            continue
        for i in p.sections:
            total[i] += 1
            d30[i] += ts >= now - 30 * DAY
            d90[i] += ts >= now - 90 * DAY
            last[i] = ts if last[i] is None or ts > last[i] else last[i]
    return (d30, d90, total, last), (hits, un, un30, un90, whole, by_lines, last_un)


@settings(max_examples=150, deadline=None)
@given(st.lists(LINE, min_size=1, max_size=30), st.data())
def test_grouped_hits_give_the_counts_of_one_hit_at_a_time(lines, data):
    """The grouping and the Placer's memory change no count: repeated chunks, repeated lines
    (placed nearest their range), gone text, whole-file reads, hits with no anchor, in and
    out of the windows and after ``now``."""
    from memoryd.section_report import sections_report

    text = "\n".join(lines)
    now = 1_796_000_000.0
    other = data.draw(st.lists(LINE, max_size=10))
    rows = []
    for _ in range(data.draw(st.integers(0, 25))):
        src = data.draw(st.sampled_from([lines, lines, other or lines]))
        a = data.draw(st.integers(1, len(src)))
        b = data.draw(st.integers(a, len(src)))
        kind = data.draw(st.sampled_from(["chunk", "chunk", "two", "whole", "none"]))
        chunk = chunk_anchor(a, b, "\n".join(src[a - 1 : b]))
        anchor = {"chunk": chunk, "two": f"{chunk};{chunk_anchor(1, 1, src[0])}",
                  "whole": WHOLE_FILE, "none": None}[kind]  # fmt: skip
        age = data.draw(st.sampled_from([-2.0, -0.5, 0.0, 10.0, 30.0, 45.0, 90.0, 200.0]))
        row = (now - age * 86400.0, a, b, anchor)
        rows += [row] * data.draw(st.integers(1, 3))
    rep = sections_report(text, rows, now)
    (d30, d90, total, last), tally = _report_one_hit_at_a_time(text, rows, now, None)
    assert [u.hits_30d for u in rep.sections] == d30
    assert [u.hits_90d for u in rep.sections] == d90
    assert [u.hits_total for u in rep.sections] == total
    assert [u.last_hit for u in rep.sections] == last
    assert tuple(rep.tally) == tally


@given(st.text(alphabet=" \t\n\r\v\f\u00a0\u1680\u2000\u200a\u200b\u2028\u202f\u3000\ufeff"
               "\x1c\x85ab", max_size=30))
def test_js_trim_end_strips_what_javascript_strips(text):
    import re

    from memoryd.bootstrap_cut import js_trim_end

    # JavaScript's WhiteSpace and LineTerminator (U+200B, U+001C and U+0085 are not blanks)
    js = re.compile(
        "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+\\Z"
    )
    m = js.search(text)
    assert js_trim_end(text) == (text[: m.start()] if m else text)


def test_sqlite_groups_and_counts_the_hits_as_python_does() -> None:
    """``memoryd sections`` has SQLite group and count a file's hits (migration 13's index):
    the same groups as :func:`count_groups` of the rows, any agent filter, anchors or none."""
    from memoryd.section_report import count_groups, load_section_groups, load_section_rows
    from memoryd.store import Store

    rng = random.Random(14)
    now = 1_796_000_000.0
    store = Store.memory()
    anchors = [None, WHOLE_FILE, "1:3:ab12", "1:3:ab12;9:9:cd", "2:4:", "5:9:ff"]
    rows = []
    for i in range(400):
        ts = now + rng.choice([-200, -91, -89.5, -30, -29.99, -1, 0, 0.5, 1.5]) * 86400.0
        start = rng.choice([None, 1, 2, 5])
        rows.append((f"c{i}", rng.choice(["main", "ops"]), rng.choice(["MEMORY.md", "x.md"]), ts,
                     start, None if start is None else start + rng.randint(0, 3),
                     rng.choice(anchors)))  # fmt: skip
    with store.transaction():
        store.conn.executemany(
            "INSERT INTO hits (call_id, agent, memory_path, kind, ts, start_line, end_line, "
            "anchor) VALUES (?, ?, ?, 'search', ?, ?, ?, ?)", rows,
        )
    plan = " ".join(str(r) for r in store.conn.execute(
        "EXPLAIN QUERY PLAN SELECT anchor, start_line, end_line, COUNT(*) FROM hits "
        "WHERE memory_path = ? AND ts <= ? GROUP BY anchor, start_line, end_line",
        ("MEMORY.md", now)))  # fmt: skip
    assert "COVERING INDEX hits_by_path_anchor" in plan and "TEMP B-TREE" not in plan
    for agents in (None, ["main"], ["main", "ops"], ["nobody"]):
        got = sorted(load_section_groups(store.conn, "MEMORY.md", agents, now), key=repr)
        want = sorted(count_groups(load_section_rows(store.conn, "MEMORY.md", agents), now),
                      key=repr)  # fmt: skip
        assert got == want and (agents == ["nobody"] or got)
