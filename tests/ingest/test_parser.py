"""The line parser: every transcript variant OpenClaw's own readers accept, and bad input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.ingest.events import GET, SEARCH, ToolCall, ToolResult
from memoryd.ingest.parser import parse_line
from memoryd.ingest.tool_names import memory_tool
from memoryd.workspace import classify_result_path
from support import transcripts as tx


def events(line: bytes):
    parsed = parse_line(line.rstrip(b"\n"))
    assert not parsed.malformed
    return parsed.events


def only_result(line: bytes) -> ToolResult:
    (ev,) = events(line)
    assert isinstance(ev, ToolResult)
    return ev


@pytest.mark.parametrize(
    "block_type", ["toolCall", "toolUse", "functionCall", "tool_use", "tool_call", "TOOLCALL"]
)
@pytest.mark.parametrize("args_key", ["arguments", "input"])
def test_call_block_variants(block_type, args_key):
    (ev,) = events(tx.call("c1", block_type=block_type, args_key=args_key, query="espresso"))
    assert ev == ToolCall("c1", SEARCH, "espresso", ev.ts, ev.made)
    assert ev.ts == pytest.approx(tx.T0, abs=0.01)


@pytest.mark.parametrize("id_key", ["id", "toolCallId", "toolUseId", "tool_call_id", "tool_use_id"])
def test_call_id_key_variants(id_key):
    (ev,) = events(tx.call("c9", id_key=id_key))
    assert ev.call_id == "c9"


@pytest.mark.parametrize(
    "name,tool",
    [
        ("memory_search", SEARCH),
        ("memory_get", GET),
        ("mcp__openclaw__memory_search", SEARCH),
        ("mcp_openclaw_memory_get", GET),
        ("Memory_Search", SEARCH),
        ("memory_recall", None),
        ("notmemory_search", None),
        ("exec", None),
        (None, None),
        (42, None),
    ],
)
def test_tool_names(name, tool):
    assert memory_tool(name) == tool
    assert memory_tool(name) == tool  # read again: the name is known now


def test_a_flood_of_made_up_tool_names_is_read_right_and_not_all_remembered():
    """Tool names read once are remembered (a line names one of a handful), up to a bound:
    a transcript of made-up names neither grows memory without end nor changes an answer."""
    from memoryd.ingest import tool_names

    for i in range(tool_names._TOOL_OF_MAX + 500):
        assert memory_tool(f"tool_{i}") is None
        assert memory_tool(f"srv{i}__memory_get") == GET
    assert len(tool_names._TOOL_OF) <= tool_names._TOOL_OF_MAX
    for name in ("tool_999999", " x.memory_search ", "memory_get", "MEMORY_GET!"):
        assert memory_tool(name) == tool_names._memory_tool(name)
    assert memory_tool(["memory_get"]) is None  # not a name at all (and not a key)


def test_long_made_up_tool_names_are_not_kept_after_their_line():
    """The bound on remembered names is also a bound on bytes: a transcript whose calls name
    long made-up tools (a line may be up to ``ingest.max_line_bytes``, 64 MiB) must not leave
    their names in the daemon's memory. 300 names of 200 kB each held 60 MB for good."""
    import tracemalloc

    from memoryd.ingest import tool_names

    saved = dict(tool_names._TOOL_OF)
    tool_names._TOOL_OF.clear()
    tool_names._TOOL_OF.update({"memory_search": SEARCH, "memory_get": GET})  # room to remember
    try:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for i in range(300):
            name = f"srv{i}_" + "x" * 200_000
            assert memory_tool(name + "__memory_get") == GET
            assert memory_tool(name) is None
            del name
        kept = tracemalloc.get_traced_memory()[0] - before
        assert kept < 1 << 20, kept
        assert memory_tool("srv1__memory_search") == SEARCH  # short names still remembered
        assert "srv1__memory_search" in tool_names._TOOL_OF
    finally:
        tracemalloc.stop()
        tool_names._TOOL_OF.clear()
        tool_names._TOOL_OF.update(saved)


def test_several_calls_in_one_message():
    line = tx.dump(
        {
            "type": "message",
            "timestamp": tx.iso(tx.T0),
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "let me look"},
                    {
                        "type": "toolCall",
                        "id": "a",
                        "name": "memory_search",
                        "arguments": {"query": "q1"},
                    },
                    {"type": "toolCall", "id": "b", "name": "exec", "arguments": {"cmd": "x"}},
                    {
                        "type": "toolCall",
                        "id": "c",
                        "name": "memory_get",
                        "arguments": {"path": "memory/x.md"},
                    },
                ],
            },
        }
    )
    evs = events(line)
    assert [(e.call_id, e.tool, e.query) for e in evs] == [
        ("a", SEARCH, "q1"),
        ("c", GET, "memory/x.md"),
    ]


def test_result_from_content_text_when_details_truncated():
    r = only_result(tx.result("c1", tx.search_payload(["memory/2026-02-20.md", "MEMORY.md"])))
    assert r.tool == SEARCH
    assert [p.path for p in r.paths] == ["memory/2026-02-20.md", "MEMORY.md"]
    assert r.paths[0].start_line == 1 and r.paths[0].score == 0.5


def test_result_prefers_intact_details():
    payload = tx.search_payload(["memory/a.md"])
    line = tx.result("c1", "not json at all", details=payload)
    assert [p.path for p in only_result(line).paths] == ["memory/a.md"]


def test_chunks_of_one_file_are_one_entry_with_best_score_and_widest_range():
    payload = tx.search_payload(
        [
            {"path": "memory/a.md", "startLine": 10, "endLine": 12, "score": 0.4},
            {"path": "memory/a.md", "startLine": 2, "endLine": 4, "score": "0.9"},
            {"path": "memory/b.md", "startLine": 1, "endLine": 1, "score": 0.3},
        ]
    )
    r = only_result(tx.result("c1", payload))
    a = r.paths[0]
    assert (a.path, a.score, a.start_line, a.end_line) == ("memory/a.md", 0.9, 2, 12)
    assert len(r.paths) == 2


def test_sessions_results_are_not_memory_files():
    payload = tx.search_payload(
        [
            {"path": "sessions/abc.jsonl", "source": "sessions"},
            {"path": "memory/a.md", "source": "memory"},
        ]
    )
    assert [p.path for p in only_result(tx.result("c1", payload)).paths] == ["memory/a.md"]


def test_disabled_search_is_an_answer_without_hits():
    r = only_result(tx.result("c1", {"results": [], "disabled": True, "error": "no provider"}))
    assert r.tool == SEARCH and r.paths == ()


def test_transport_error_has_no_hits():
    r = only_result(tx.result("c1", tx.search_payload(["memory/a.md"]), is_error=True))
    assert r.paths == ()


def test_cut_text_recovers_paths():
    full = json.dumps(tx.search_payload(["memory/a.md", 'memory/b"q.md', "memory/c.md"]), indent=2)
    cut = full[: full.index("memory/c.md") + 5] + "\n[Content truncated: 2000 more characters]"
    r = only_result(tx.result("c1", cut))
    assert r.recovered
    assert [p.path for p in r.paths] == ["memory/a.md", 'memory/b"q.md']


_SNIPPETS = st.sampled_from(
    ["plain", '{"corpus": "wiki"}', "}, {", '"path": "memory/x.md"', "\\", "[", "a\u00e9\n"]
)


@st.composite
def corpus_results(draw: st.DrawFn) -> list[dict]:
    """memory_search corpus=all results: keys in any order, a corpus or none, snippets holding
    braces, quotes and key-like text."""
    items = []
    for i in range(draw(st.integers(1, 5))):
        fields = {"path": f"memory/{i}.md", "snippet": draw(_SNIPPETS), "score": 0.5}
        corpus = draw(st.sampled_from([None, "memory", "wiki", "Memory", 3, None, ["wiki"]]))
        if corpus is not None:
            fields["corpus"] = corpus
        if draw(st.booleans()):
            fields["meta"] = {"corpus": "wiki", "tags": ["wiki"]}
        keys = draw(st.permutations(sorted(fields)))
        items.append({k: fields[k] for k in keys})
    return items


@settings(max_examples=150, deadline=None)
@given(items=corpus_results(), indent=st.sampled_from([None, 2]))
def test_a_text_cut_at_its_end_recovers_the_memory_corpus_paths_of_the_whole_text(items, indent):
    """The paths recovered from a cut text, each with the corpus its own result names, are
    the paths the whole text gives: another corpus's result stays out either way."""
    payload = {"results": items, "corpora": [{"corpus": "wiki", "outcome": "ok"}]}
    full = json.dumps(payload, indent=indent)
    whole = only_result(tx.result("c1", full))
    cut = only_result(tx.result("c1", full[:-1] + "\n[Content truncated]"))
    assert cut.recovered and not whole.recovered
    assert [p.path for p in cut.paths] == [p.path for p in whole.paths]


@pytest.mark.parametrize("corpus,hit", [("wiki", False), ("memory", True), (None, True)])
def test_a_cut_memory_get_of_another_corpus_is_no_hit(corpus, hit):
    page = {"path": "memory/a.md", "text": "x" * 5000, "from": 1}
    if corpus is not None:
        page = {"corpus": corpus, **page}
    cut = json.dumps(page)[:300] + "\n[Content truncated]"
    r = only_result(tx.result("g1", cut, tool="memory_get"))
    assert r.recovered
    assert [p.path for p in r.paths] == (["memory/a.md"] if hit else [])


@pytest.mark.parametrize(
    "payload,hit",
    [
        ({"path": "memory/a.md", "text": "## Boat\n- Saturday"}, True),
        ({"text": "x", "path": "memory/a.md", "from": 3, "lines": 4, "truncated": False}, True),
        ({"path": "memory/a.md", "text": ""}, False),
        ({"path": "memory/a.md", "text": "", "disabled": True}, False),
        ({"path": "memory/a.md", "text": "x", "disabled": True}, False),
    ],
)
def test_memory_get(payload, hit):
    r = only_result(tx.result("g1", payload, tool="memory_get"))
    assert r.tool == GET
    assert [p.path for p in r.paths] == (["memory/a.md"] if hit else [])


def test_get_range_is_kept():
    r = only_result(
        tx.result(
            "g1", {"path": "memory/a.md", "text": "x", "from": 3, "lines": 4}, tool="memory_get"
        )
    )
    assert (r.paths[0].start_line, r.paths[0].end_line) == (3, 6)


def test_bare_records_and_crlf():
    line = tx.result("c1", tx.search_payload(["memory/a.md"]), wrapped=False, crlf=True)
    assert line.endswith(b"\r\n")
    r = only_result(line)
    assert [p.path for p in r.paths] == ["memory/a.md"]
    assert r.ts == pytest.approx(tx.T0 + 1, abs=0.01)


def test_claude_code_tool_result_block_without_name():
    (c,) = events(tx.claude_call("toolu_9", "mcp__openclaw__memory_search", {"query": "espresso"}))
    assert c.tool == SEARCH and c.query == "espresso"
    r = only_result(tx.claude_result("toolu_9", tx.search_payload(["memory/espresso.md"])))
    assert r.tool is None and r.shape == SEARCH
    assert [p.path for p in r.paths] == ["memory/espresso.md"]


def test_other_tools_results_are_ignored():
    assert events(tx.decoy_result(1)) == ()
    assert events(tx.chatter(1)) == ()


def test_numbers_as_strings_and_snake_case_keys():
    payload = {
        "results": [{"path": "memory/a.md", "start_line": "3", "end_line": "9", "score": "0.25"}]
    }
    p = only_result(tx.result("c1", payload)).paths[0]
    assert (p.start_line, p.end_line, p.score) == (3, 9, 0.25)


def test_arguments_as_json_string():
    line = tx.dump(
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "functionCall",
                        "id": "f1",
                        "name": "memory_search",
                        "arguments": '{"query": "q"}',
                    }
                ],
            },
        }
    )
    (ev,) = events(line)
    assert ev.query == "q"


def test_invalid_utf8_inside_a_good_line_is_still_read():
    line = tx.result("c1", tx.search_payload(["memory/a.md"])).rstrip(b"\n")
    broken = line.replace(b'"provider"', b'"prov\xff\xfeider"')
    r = only_result(broken)
    assert [p.path for p in r.paths] == ["memory/a.md"]


@pytest.mark.parametrize(
    "line",
    [
        b"garbage",
        b"{not json",
        b"[1,2,3]",
        b'"a string"',
        b"\x00\x01\x02\xff",
        b"null",
        b"{" * 5000,
    ],
)
def test_malformed_lines_are_reported_not_raised(line):
    assert parse_line(line).malformed


def test_blank_line_is_not_malformed():
    assert not parse_line(b"   ").malformed


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400))
def test_parser_never_raises_on_random_bytes(data):
    parse_line(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_parser_never_raises_on_wrong_types(value):
    """Valid JSON with wrong types in every position: no exception, ever."""
    for shell in (
        {
            "type": "message",
            "message": {
                "role": "toolResult",
                "toolCallId": "x",
                "toolName": "memory_search",
                "content": value,
                "details": value,
            },
        },
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": value, "name": "memory_search", "arguments": value}
                ],
            },
        },
        {
            "type": "message",
            "message": {
                "role": "toolResult",
                "toolCallId": "x",
                "toolName": "memory_get",
                "content": [{"type": "text", "text": json.dumps(value)}],
            },
        },
        {"type": "message", "message": value, "timestamp": value},
    ):
        parse_line(json.dumps(shell).encode())


WS = "/home/alice/.openclaw/workspace"
TIERS = "/home/alice/.openclaw/memory_fs"


@pytest.mark.parametrize(
    "raw,key",
    [
        ("MEMORY.md", "MEMORY.md"),
        ("memory.md", "memory.md"),
        ("memory/2026-02-25.md", "memory/2026-02-25.md"),
        ("./memory/2026-02-25.md", "memory/2026-02-25.md"),
        ("memory\\imports\\x.md", "memory/imports/x.md"),
        ("memory//dreaming/deep/2026-04-20.md", "memory/dreaming/deep/2026-04-20.md"),
        (WS + "/memory/a.md", "memory/a.md"),
        ("../memory_fs/warm/note.md", "tiers/note.md"),
        (TIERS + "/gist/note.md", "tiers/note.md"),
        ("../../etc/passwd", None),
        ("/etc/passwd", None),
        ("memory/../../x.md", None),
        ("memory/../MEMORY.md", "MEMORY.md"),
        ("memory/notes.txt", None),
        ("sessions/abc.jsonl", None),
        ("C:\\Users\\a\\memory\\x.md", None),
        ("memory/a.md\x00.png", None),
        ("", None),
        ("../workspace-evil/memory/a.md", None),
        (WS + "-evil/memory/a.md", None),
        ("../memory_fs/../secrets/x.md", None),
        ("../memory_fs/warm/sub/x.md", None),
    ],
)
def test_result_paths_are_data_not_places(raw, key):
    assert classify_result_path(raw, WS, TIERS) == key


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="./\\amemoryMEORY-_x0", max_size=40))
def test_no_classified_path_escapes_the_workspace(raw):
    import posixpath

    key = classify_result_path(raw, WS, TIERS)
    if key is not None and not key.startswith("tiers/"):
        full = posixpath.normpath(posixpath.join(WS, key))
        assert full.startswith(WS + "/")
        assert ".." not in key.split("/")
