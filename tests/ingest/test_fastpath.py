"""The parser's walk over OpenClaw's usual line shapes, on any line.

:func:`memoryd.ingest.parser.parse` reads every line a scan parses, by one walk that goes
straight to the fields that matter in the usual shapes (an assistant message with
``toolCall`` blocks, a ``toolResult`` message, a Claude Code ``user`` message's
``tool_result`` blocks) and reads the usual values inline. These tests hold it to:

- property tests: lines built from the shapes of openclaw-formats.md §3–4 (every key
  spelling, payload form, number and timestamp form), then mutated (keys dropped, values
  swapped for other JSON, bytes cut, inserted or flipped): the line read from its bytes,
  from a view into a region and by :func:`parse_line` gives the same events, and never an
  exception;
- search and get answers of every number form read as the rule, written out plainly here
  (``spec_search_paths``, ``spec_get_paths``), says;
- a line naming no memory tool costs no timestamp;
- a whole generated corpus scanned counts exactly what the generator wrote.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.config import load_config, resolve_paths
from memoryd.ingest import parser, region_apply, result_paths, timestamps
from memoryd.ingest import scan as scan_module
from memoryd.ingest.events import ResultPath
from memoryd.ingest.parser import parse, parse_line
from memoryd.ingest.timestamps import to_epoch
from memoryd.ingest.tool_names import memory_tool
from memoryd.section_map import WHOLE_FILE
from memoryd.store import Store
from support.corpus import CorpusTruth, generate
from support.scan_runs import NOW, ONE_PROCESS, counts, state_rows, write_config

# ------------------------------------------------------------------ lines of the real shapes

PATHS = st.sampled_from(
    [
        "MEMORY.md",
        "memory/2026-02-25.md",
        "./memory/a.md",
        "memory\\b.md",
        "sessions/x.jsonl",
        "../../etc/passwd",
        "",
        "memory/ünï.md",
    ]
)
NUMBER = st.one_of(
    st.integers(-5, 10**13),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["5", "0.5", "x", "", "1e400", "nan"]),
    st.none(),
    st.booleans(),
)
TIMESTAMP = st.one_of(
    st.just("2026-02-25T09:14:02.123Z"),
    st.just("2026-02-25T09:14:02"),  # no zone: no time
    st.just("9999-12-31T23:59:59-14:00"),
    st.integers(-1, 2 * 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["1772010842004", "soon", "", "2026-13-45T00:00:00Z"]),
    st.none(),
)
JSON_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
TOOL_NAMES = st.sampled_from(
    [
        "memory_search",
        "memory_get",
        "mcp__openclaw__memory_search",
        "mcp_openclaw_memory_get",
        "Memory_Search",
        "web_fetch",
        "exec",
        "",
    ]
)


@st.composite
def search_result(draw: st.DrawFn) -> dict[str, Any]:
    camel = draw(st.booleans())
    item: dict[str, Any] = {
        "path": draw(PATHS),
        ("startLine" if camel else "start_line"): draw(NUMBER),
        ("endLine" if camel else "end_line"): draw(NUMBER),
        "score": draw(NUMBER),
        "snippet": draw(st.text(max_size=30)),
        "source": draw(st.sampled_from(["memory", "sessions", "SESSIONS", None])),
    }
    if draw(st.booleans()):
        item["citation"] = "memory/a.md#L1-L2"
    if draw(st.booleans()):  # memory_search corpus=all: memory and wiki results side by side
        item["corpus"] = draw(st.sampled_from(["memory", "wiki", "Memory", "sessions", None, 7]))
    return item


@st.composite
def payload(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["search", "get", "disabled", "empty_get", "other"]))
    if kind == "search":
        return {"results": draw(st.lists(search_result(), max_size=4)), "provider": "openai"}
    if kind == "disabled":
        return {"results": [], "disabled": True, "error": "memory search is disabled"}
    if kind in ("get", "empty_get"):
        body: dict[str, Any] = {
            "path": draw(PATHS),
            "text": "" if kind == "empty_get" else draw(st.text(min_size=1, max_size=20)),
        }
        if draw(st.booleans()):
            body.update({"from": draw(NUMBER), "lines": draw(NUMBER)})
        if draw(st.booleans()):  # memory_get corpus=wiki answers with the page's corpus
            body["corpus"] = draw(st.sampled_from(["memory", "Memory", "wiki", "WIKI", None, 2]))
        return body
    return draw(st.dictionaries(st.text(max_size=6), JSON_VALUE, max_size=3))


@st.composite
def result_line(draw: st.DrawFn) -> dict[str, Any]:
    """A toolResult message (§3): text and details as OpenClaw writes them, or cut."""
    body = draw(payload())
    text = json.dumps(body, indent=2)
    form = draw(st.sampled_from(["full", "details_truncated", "content_only", "cut", "error"]))
    details: Any = body
    if form == "cut":
        text = text[: draw(st.integers(0, len(text)))] + "\n[Content truncated]"
    if form in ("details_truncated", "cut"):
        details = {"persistedDetailsTruncated": True, "originalDetailKeys": list(body)}
    if form == "error":
        text, details = "Error: embedding provider timed out", None
    msg: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": draw(
            st.sampled_from(["toolu_01abc", "call_9", "", "functions.memory_search:0"])
        ),
        "toolName": draw(TOOL_NAMES),
        "content": [{"type": "text", "text": text}],
    }
    if details is not None or draw(st.booleans()):
        msg["details"] = details
    msg["isError"] = draw(st.sampled_from([False, True, "true", None]))
    if draw(st.booleans()):
        msg["timestamp"] = draw(TIMESTAMP)
    return msg


@st.composite
def call_line(draw: st.DrawFn) -> dict[str, Any]:
    """An assistant message (§3) with text, thinking and tool-call blocks."""
    blocks: list[Any] = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["call", "call", "text", "thinking", "odd"]))
        if kind == "call":
            name = draw(TOOL_NAMES)
            args: Any = (
                {"query": draw(st.text(max_size=10)), "maxResults": draw(NUMBER)}
                if "search" in name.lower()
                else {"path": draw(PATHS)}
            )
            if draw(st.integers(0, 5)) == 0:
                args = draw(st.sampled_from([json.dumps(args), "{not json", None, 7]))
            blocks.append(
                {
                    "type": draw(st.sampled_from(["toolCall", "toolCall", "tool_use", "TOOLUSE"])),
                    draw(st.sampled_from(["id", "id", "toolCallId", "call_id"])): draw(
                        st.sampled_from(["toolu_01abc", "call_9", 42, "", "memory_search_0"])
                    ),
                    "name": name,
                    draw(st.sampled_from(["arguments", "arguments", "input", "args"])): args,
                }
            )
        elif kind == "text":
            blocks.append({"type": "text", "text": "Let me check my notes (memory_search)."})
        elif kind == "thinking":
            blocks.append({"type": "thinking", "thinking": "memory_get it"})
        else:
            blocks.append(draw(st.one_of(JSON_VALUE, st.just({"type": "toolResult"}))))
    msg: dict[str, Any] = {"role": "assistant", "content": blocks, "stopReason": "toolUse"}
    if draw(st.booleans()):
        msg["timestamp"] = draw(TIMESTAMP)
    return msg


@st.composite
def record(draw: st.DrawFn) -> dict[str, Any]:
    msg = draw(st.one_of(result_line(), call_line()))
    if draw(st.integers(0, 5)) == 0:
        return msg  # a bare record
    rec: dict[str, Any] = {"type": "message", "id": "197e2e04", "parentId": "3fb4817e"}
    if draw(st.booleans()):
        rec["timestamp"] = draw(TIMESTAMP)
    rec["message"] = msg
    return rec


@st.composite
def mutated(draw: st.DrawFn, obj: Any) -> Any:
    """``obj`` with one key dropped or one value replaced, anywhere in it."""
    if isinstance(obj, dict) and obj and draw(st.integers(0, 2)) == 0:
        key = draw(st.sampled_from(sorted(obj)))
        if draw(st.booleans()):
            return {k: v for k, v in obj.items() if k != key}
        return {**obj, key: draw(JSON_VALUE)}
    if isinstance(obj, dict) and obj:
        key = draw(st.sampled_from(sorted(obj)))
        return {**obj, key: draw(mutated(obj[key]))}
    if isinstance(obj, list) and obj:
        i = draw(st.integers(0, len(obj) - 1))
        return [*obj[:i], draw(mutated(obj[i])), *obj[i + 1 :]]
    return draw(st.one_of(st.just(obj), JSON_VALUE))


@st.composite
def line_bytes(draw: st.DrawFn) -> bytes:
    rec = draw(record())
    for _ in range(draw(st.integers(0, 2))):
        rec = draw(mutated(rec))
    data = json.dumps(rec, ensure_ascii=draw(st.booleans())).encode()
    edit = draw(st.sampled_from(["none", "none", "none", "cut", "insert", "flip", "crlf"]))
    if edit == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif edit == "insert":
        at = draw(st.integers(0, len(data)))
        data = (
            data[:at] + draw(st.sampled_from([b'"', b"\\", b"\xff", b"}", b",", b" "])) + data[at:]
        )
    elif edit == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    elif edit == "crlf":
        data += b"\r"
    return data


def same(a: object, b: object) -> bool:
    """Equal field for field and type for type (by repr: a NaN score equals itself there)."""
    return repr(a) == repr(b)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=line_bytes())
def test_bytes_a_view_and_parse_line_agree_on_any_line(line: bytes) -> None:
    want = parse_line(line)
    assert same(parse(line), want)
    region = b'{"a":1}\n' + line + b"\nmemory_\n"  # as the prescan hands it: a view, no copy
    assert same(parse(memoryview(region)[8 : 8 + len(line)]), want)


def test_a_line_without_a_memory_tool_gets_no_timestamp_computed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Timestamps are computed only for lines with a memory call or result."""
    seen: list[object] = []
    real = timestamps.line_time

    def counting(record: dict[str, Any], msg: dict[str, Any]) -> float | None:
        seen.append(record.get("timestamp"))
        return real(record, msg)

    monkeypatch.setattr(parser, "line_time", counting)
    other = {
        "type": "message",
        "timestamp": "2026-02-25T09:14:02.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "ex1",
            "toolName": "exec",
            "content": [{"type": "text", "text": "ls memory_search/"}],
        },
    }
    chat = {
        "type": "message",
        "timestamp": "2026-02-25T09:14:02.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "memory_get?"}]},
    }
    for rec in (other, chat):
        assert parse(json.dumps(rec).encode()) == ((), False)
    assert seen == []
    call = {
        "type": "message",
        "timestamp": "2026-02-25T09:14:02.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "t1", "name": "memory_search", "arguments": {}}],
        },
    }
    (event,), _ = parse(json.dumps(call).encode())
    assert event == ("t1", "search", None, 1772010842.0, None, None, None)  # (no message time)
    assert seen == ["2026-02-25T09:14:02.000Z"]


# ------------------------------------------------------------------ a whole corpus, row for row


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> CorpusTruth:
    root = tmp_path_factory.mktemp("fastpath-corpus")
    return generate(
        root / "c", seed=4242, sessions=24, target_bytes=3_000_000, now=NOW, call_every_bytes=5600
    )


def test_a_scan_of_every_dialect_counts_what_the_generator_wrote(
    corpus: CorpusTruth, tmp_path: Path
) -> None:
    """Every dialect of the generated corpus (§2–4), one process: the scan counts exactly
    the hits the generator wrote, file by file."""
    cfg = write_config(tmp_path, corpus, "one", ONE_PROCESS)
    paths = resolve_paths(load_config(cfg), {})
    with Store.open(paths.db) as store:
        stats = scan_module.Scanner(load_config(cfg), paths, store).scan()
    assert stats.errors == 0
    assert stats.new_hits == corpus.total_hits
    assert counts(cfg) == corpus.counts(None)


def test_unnamed_answers_found_by_shared_prefix_pattern_or_one_id_at_a_time_give_equal_rows(
    corpus: CorpusTruth, tmp_path: Path
) -> None:
    """Answers that do not name their tool are found by their call's id: one byte search
    per id, one search per shared prefix (many ids waiting), or one pattern pass over the
    id fields (ids of many kinds). Forced each way on the whole corpus, the rows are equal."""
    ways = {
        "one_by_one": [(region_apply, "_DIRECT_ID_SEARCH_MAX", 10**9)],
        "by_prefix": [(region_apply, "_DIRECT_ID_SEARCH_MAX", 0)],
        "by_pattern": [
            (region_apply, "_DIRECT_ID_SEARCH_MAX", 0),
            (region_apply, "_id_occurrences", lambda *_: None),
        ],
    }
    rows = {}
    for name, patches in ways.items():
        cfg = write_config(tmp_path, corpus, name, ONE_PROCESS)
        paths = resolve_paths(load_config(cfg), {})
        with pytest.MonkeyPatch.context() as mp:
            for target, attr, value in patches:
                mp.setattr(target, attr, value)
            with Store.open(paths.db) as store:
                stats = scan_module.Scanner(load_config(cfg), paths, store).scan()
        assert stats.errors == 0
        assert stats.new_hits == corpus.total_hits
        rows[name] = state_rows(tmp_path / name)
    assert rows["by_prefix"] == rows["one_by_one"] == rows["by_pattern"]


def test_ids_sharing_a_prefix_are_found_where_a_search_for_each_finds_them() -> None:
    data = (
        b'{"a":"toolu_01AAA"}\n{"b":"toolu_01AAB toolu_01AAA"}\n'
        b'{"c":"toolu_01AA"}\n{"d":"call_1 toolu_01AAB"}\n'
    )
    look = {"toolu_01AAA": 0, "toolu_01AAB": 25, "toolu_01AA": 0, "call_1": 0, "c1": 0}
    assert region_apply._id_occurrences(data, len(data), look) is None  # "c1": too short
    look.pop("c1")  # two groups: "toolu_01AA…" and "call_1"
    found = region_apply._id_occurrences(data, len(data), look)
    assert found is not None
    for call_id, at in look.items():
        want, i = [], data.find(call_id.encode(), at)
        while i >= 0:
            want.append(i)
            i = data.find(call_id.encode(), i + 1)
        assert found[call_id] == want, call_id


# ------------------------------------------------------------------ shapes aimed at the fast walk

ISO_TIMES = st.one_of(
    st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)).map(
        lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"
    ),
    st.text(alphabet="0123456789-:TZ.+ \u3000\u0663", min_size=23, max_size=25),
    st.sampled_from(
        [
            "2026-02-30T09:14:02.123Z",
            "2026-02-25T24:00:00.000Z",
            "2026-02-25T09:14:60.123Z",
            " 2026-02-25T09:14:02.12Z",
            "\u30002026-02-25T09:14:02.1Z",
            "0000-01-01T00:00:00.000Z",
            "2026-02-25T09:14:02+0100Z",
        ]
    ),
)


@settings(max_examples=150, deadline=None)
@given(value=ISO_TIMES, other=TIMESTAMP)
def test_the_fast_time_reader_is_to_epoch(value: str, other: Any) -> None:
    """OpenClaw's ``…T09:14:02.123Z`` goes straight to ``fromisoformat``: the very float
    (or None) that :func:`to_epoch` gives, for any string of that look; a line's time is
    the record's, else the message's, as the general parser takes it."""
    assert same(timestamps.line_epoch(value), to_epoch(value))
    want = to_epoch(value)
    want = to_epoch(other) if want is None else want
    assert same(timestamps.line_time({"timestamp": value}, {"timestamp": other}), want)
    assert same(
        timestamps.line_time({"timestamp": other}, {"timestamp": value}),
        (to_epoch(value) if to_epoch(other) is None else to_epoch(other)),
    )


# ------------------------------------------------------------------ the rule, written out plainly
#
# What a search's or a get's answer counts, read the slow and obvious way (the parser reads the
# usual values inline): the oracle of the number and merge tests below.


def spec_number(value: Any, whole: bool) -> Any:
    """A JSON number or a numeric string; nothing else (not a boolean). A whole number (a line)
    beyond ±10^12, or NaN, is none."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        f = float(value)
    elif isinstance(value, str):
        try:
            f = float(value)
        except ValueError:
            return None
    else:
        return None
    if not whole:
        return f
    return None if f != f or abs(f) > 10**12 else int(f)


def spec_search_paths(payload: Any) -> tuple[ResultPath, ...]:
    """Each memory file of ``results`` once: the best score, the first line and the last
    line any of its chunks names (of equal values the first met)."""
    if not isinstance(payload, dict) or payload.get("disabled") is True:
        return ()
    if not isinstance(payload.get("results"), list):
        return ()
    chunks: dict[str, list[tuple[Any, Any, Any]]] = {}
    for item in payload["results"]:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            continue
        source, corpus = item.get("source"), item.get("corpus")
        if not item["path"] or (isinstance(source, str) and source.lower() == "sessions"):
            continue
        if isinstance(corpus, str) and corpus.lower() != "memory":
            continue
        start = item["startLine"] if "startLine" in item else item.get("start_line")
        end = item["endLine"] if "endLine" in item else item.get("end_line")
        first, last = spec_number(start, whole=True), spec_number(end, whole=True)
        snippet = item.get("snippet")
        chunks.setdefault(item["path"], []).append(
            (
                spec_number(item.get("score"), whole=False),
                first,
                last,
                # each chunk's text, for the section mapper (issue 33)
                (first, last, snippet) if isinstance(snippet, str) else None,
            )
        )

    def best(values: list[Any], pick: Any) -> Any:
        known = [v for v in values if v is not None]
        return pick(known) if known else None

    return tuple(
        ResultPath(
            path,
            best([c[0] for c in found], max),
            best([c[1] for c in found], min),
            best([c[2] for c in found], max),
            tuple(c[3] for c in found if c[3] is not None) or None,
        )
        for path, found in chunks.items()
    )


def spec_get_paths(payload: Any) -> tuple[ResultPath, ...]:
    """The file a ``memory_get`` read, when its text is not empty (and from the memory)."""
    if not isinstance(payload, dict) or payload.get("disabled") is True:
        return ()
    text, corpus = payload.get("text"), payload.get("corpus")
    if not isinstance(text, str) or not text:
        return ()
    if isinstance(corpus, str) and corpus.lower() != "memory":
        return ()
    first = spec_number(payload.get("from"), whole=True)
    lines = spec_number(payload.get("lines"), whole=True)
    end = first + lines - 1 if first is not None and lines else None
    path = payload.get("path")
    anchor = WHOLE_FILE if first is None else ((first, end, text),)
    return (ResultPath(path if isinstance(path, str) else "", None, first, end, anchor),)


def payload_of(line: bytes) -> Any:
    """The answer a result line holds: its details when whole, else its text."""
    msg = json.loads(line)["message"]
    details = msg.get("details")
    if isinstance(details, dict) and not details.get("persistedDetailsTruncated"):
        return details
    return json.loads(msg["content"][0]["text"])


CHUNK_NUMBER = st.one_of(
    st.sampled_from([0.0, -0.0, 0.5, 0.5000001, 1, 7, -3, "nan", "-0", "12", None, True, 10**13]),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)


@st.composite
def chunks_of_one_file(draw: st.DrawFn) -> bytes:
    """A search whose results name a few files several times (chunks merge: best score,
    widest lines), with equal, signed-zero, missing and odd numbers."""
    results = []
    for _ in range(draw(st.integers(1, 8))):
        item: dict[str, Any] = {"path": draw(st.sampled_from(["MEMORY.md", "memory/a.md"]))}
        for key in ("startLine", "endLine", "score"):
            if draw(st.integers(0, 5)):
                item[key] = draw(CHUNK_NUMBER)
        item["snippet"] = "…"
        item["source"] = "memory"
        results.append(item)
    msg = {
        "role": "toolResult",
        "toolCallId": "toolu_01",
        "toolName": "memory_search",
        "content": [{"type": "text", "text": json.dumps({"results": results}, indent=2)}],
        "details": {"results": results}
        if draw(st.booleans())
        else {"persistedDetailsTruncated": True},
        "isError": False,
    }
    rec = {"type": "message", "timestamp": draw(ISO_TIMES), "message": msg}
    return json.dumps(rec).encode()


@settings(max_examples=150, deadline=None)
@given(line=chunks_of_one_file())
def test_chunks_of_one_file_merge_into_the_best_score_and_the_widest_lines(line: bytes) -> None:
    (result,), _ = parse(line)
    assert same(result.paths, spec_search_paths(payload_of(line)))


@st.composite
def claude_code_line(draw: st.DrawFn) -> bytes:
    """A Claude Code ``user`` message with ``tool_result`` blocks (§6), or a bare record."""
    blocks: list[Any] = []
    for _ in range(draw(st.integers(0, 3))):
        body = draw(payload())
        block: dict[str, Any] = {
            "type": draw(st.sampled_from(["tool_result", "toolResult", "TOOL_RESULT", "text"])),
            draw(st.sampled_from(["tool_use_id", "toolUseId", "toolCallId", "id"])): draw(
                st.sampled_from(["toolu_01abc", "", 42, "memory_get_0"])
            ),
            "content": draw(
                st.sampled_from(
                    [
                        json.dumps(body, indent=2),
                        [{"type": "text", "text": json.dumps(body, indent=2)}],
                        None,
                    ]
                )
            ),
        }
        if draw(st.booleans()):
            block[draw(st.sampled_from(["toolName", "tool_name", "name"]))] = draw(TOOL_NAMES)
        if draw(st.booleans()):
            block["is_error"] = draw(st.sampled_from([True, False, None]))
        blocks.append(block)
    msg: dict[str, Any] = {"role": draw(st.sampled_from(["user", "assistant"])), "content": blocks}
    if draw(st.booleans()):
        msg["timestamp"] = draw(TIMESTAMP)
    rec: dict[str, Any] = msg
    if draw(st.booleans()):
        rec = {"type": "user", "timestamp": draw(ISO_TIMES), "message": msg}
    for _ in range(draw(st.integers(0, 1))):
        rec = draw(mutated(rec))
    return json.dumps(rec).encode()


@settings(max_examples=200, deadline=None)
@given(line=claude_code_line())
def test_claude_code_results_and_bare_records_read_alike_from_bytes_or_by_parse_line(
    line: bytes,
) -> None:
    want = parse_line(line)
    assert same(parse(line), want)


# ------------------------------------------------------------------ OpenClaw's lines, edited bytes

# Raw JSON put in place of a value: odd numbers, values orjson refuses (out of a double's
# range, too deep), odd strings.
RAW_VALUES = st.sampled_from(
    [
        b"1e2",
        b"8.0",
        b"-0.0",
        b"-0",
        b"1e400",
        b"-1E400",
        b"1e-400",
        b"9" * 400,
        b"123456789012345678901234567890",
        b"18446744073709551616",
        b"9007199254740993",
        b"10000000000000",
        b"0.1000000000000000055511151231257827",
        b"true",
        b"null",
        b"[]",
        b'{"a":1e400}',
        b"[" * 1100 + b"]" * 1100,
        b"[" * 900 + b"]" * 900,
        b'"x\\ud800"',
        b'"\\ud83d\\ude00"',
        b'"\xff\xfe"',
        b'"\xed\xa0\x80"',
        b'"\\u0041"',
        b'"a\x01b"',
        b'"\\x"',
        b'"memory_search"',
        b'"sessions"',
        b'""',
    ]
)
# Bytes put inside a string the count does not read (a snippet, the content text).
STRING_INSERTS = st.sampled_from(
    [
        b"\x01",
        b"\t",
        b"\xff",
        b"\xc0\xaf",
        b"\xed\xa0\x80",
        b"\\ud800",
        b"\\u00fc",
        b"\\x",
        b'\\"path\\":\\"evil.md\\"',
        b'\\"}],\\"details\\":{\\"results\\":[',
        b"\\\\",
        b'"',
        b"\\",
    ]
)
SKIPPED_FIELDS = [b'"snippet":"', b'"text":"', b'"thinking":"']
PLACEHOLDER = "@@RAW@@"


@st.composite
def openclaw_line(draw: st.DrawFn) -> bytes:
    """A line as OpenClaw writes it (compact, keys in its order, §3–4 and §7), then edited:
    a value swapped for odd raw JSON, bytes put into a skipped string, a key repeated or
    spelled with an escape, keys reordered, the line cut."""
    rec = draw(record())
    if "message" not in rec and draw(st.booleans()):
        rec = {"type": "message", "id": "197e2e04", "parentId": "3fb4817e", "message": rec}
    msg = rec.get("message", rec)
    if isinstance(msg, dict) and msg.get("role") == "assistant":
        msg.update(
            api="anthropic-messages",
            provider="anthropic",
            model="claude-opus-4-6",
            usage={"input": 1791, "output": 1582, "cost": {"input": 0.005373, "total": 0.029}},
        )
    edit = draw(
        st.sampled_from(
            ["none", "raw", "raw", "insert", "insert", "dup", "escape", "path", "order", "cut"]
        )
    )
    if edit == "raw":  # a placeholder anywhere, replaced by raw JSON after dumping
        rec = draw(_with_placeholder(rec))
    if edit == "order" and isinstance(msg, dict):
        keys = draw(st.permutations(list(msg)))
        reordered = {k: msg[k] for k in keys}
        if msg is rec:
            rec = reordered
        else:
            rec["message"] = reordered
    data = json.dumps(rec, separators=(",", ":"), ensure_ascii=False).encode()
    if edit == "raw":
        data = data.replace(f'"{PLACEHOLDER}"'.encode(), draw(RAW_VALUES))
    elif edit == "insert":
        spots = [i + len(f) for f in SKIPPED_FIELDS for i in _find_all(data, f)]
        if spots:
            at = draw(st.sampled_from(spots))
            data = data[:at] + draw(STRING_INSERTS) + data[at:]
    elif edit == "dup":
        spots = [i + 1 for i in _find_all(data, b'{"')]
        if spots:
            at = draw(st.sampled_from(spots))
            key = draw(
                st.sampled_from(
                    [
                        "path",
                        "startLine",
                        "score",
                        "source",
                        "results",
                        "details",
                        "message",
                        "role",
                        "content",
                        "text",
                        "toolCallId",
                        "toolName",
                        "id",
                        "name",
                        "type",
                        "arguments",
                        "query",
                        "isError",
                        "timestamp",
                        "disabled",
                    ]
                )
            )
            data = data[:at] + f'"{key}":'.encode() + draw(RAW_VALUES) + b"," + data[at:]
    elif edit == "escape":
        name = draw(st.sampled_from([b"path", b"toolCallId", b"results", b"role", b"message"]))
        escaped = b'"' + name[:1] + b"\\u00" + f"{name[1]:02x}".encode() + name[2:] + b'":'
        data = data.replace(b'"' + name + b'":', escaped, 1)
    elif edit == "path":  # an escape at the start of a path (or a query)
        key = draw(st.sampled_from([b'"path":"', b'"query":"']))
        escape = draw(st.sampled_from([b"\\/", b"\\u00fc", b"\\\\", b"\\ud83d\\ude00"]))
        data = data.replace(key, key + escape, 1)
    elif edit == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    return data


@st.composite
def _with_placeholder(draw: st.DrawFn, obj: Any) -> Any:
    """``obj`` with one value (anywhere in it) replaced by the placeholder string."""
    if isinstance(obj, dict) and obj:
        key = draw(st.sampled_from(sorted(obj)))
        if draw(st.integers(0, 2)) == 0 or not isinstance(obj[key], dict | list) or not obj[key]:
            return {**obj, key: PLACEHOLDER}
        return {**obj, key: draw(_with_placeholder(obj[key]))}
    if isinstance(obj, list) and obj:
        i = draw(st.integers(0, len(obj) - 1))
        return [*obj[:i], draw(_with_placeholder(obj[i])), *obj[i + 1 :]]
    return PLACEHOLDER


def _find_all(data: bytes, needle: bytes) -> list[int]:
    out, i = [], data.find(needle)
    while i >= 0:
        out.append(i)
        i = data.find(needle, i + 1)
    return out


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=openclaw_line())
def test_edited_lines_read_alike_from_bytes_or_by_parse_line(line: bytes) -> None:
    """Whatever the edit (duplicate keys, escaped keys, numbers out of range or in odd
    forms, bad bytes in the strings, too deep, cut), the line decoded once gives what
    :func:`parse_line` gives (which keeps what invalid UTF-8 leaves readable), and no
    exception."""
    want = parse_line(line)
    assert same(parse(line), want)


# ------------------------------------------------------------------ the answer's text, at its edges

# What may stand before or after a result's JSON text: JSON's own whitespace, whitespace that
# only ``str.strip`` removes, a closing brace too many, a truncation marker, nothing.
TEXT_EDGES = st.sampled_from(
    ["", " ", "\n", "\t\r\n", "\u3000", "\x1c", "\x85", "\u00a0", "}", "x", "\n[Content truncated]"]
)


@st.composite
def text_answer_line(draw: st.DrawFn) -> bytes:
    """A result whose payload must come from its text (details cut, absent or odd): the
    text whole, cut anywhere, framed by whitespace of either kind, with a lone surrogate or
    a control character in it; as a toolResult message or a Claude Code block."""
    body = draw(payload())
    text = json.dumps(body, indent=draw(st.sampled_from([None, 2])))
    if draw(st.integers(0, 9)) == 0:  # deeper than orjson goes, or just not
        depth = draw(st.sampled_from([900, 1100]))
        text = '{"results":' + "[" * depth + "]" * depth + "}"
    if draw(st.integers(0, 3)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    if draw(st.integers(0, 5)) == 0:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["\ud800", "\x01", '"', "\\"])) + text[at:]
    text = draw(TEXT_EDGES) + text + draw(TEXT_EDGES)
    content: Any = draw(
        st.sampled_from(
            [
                [{"type": "text", "text": text}],
                [{"type": "text", "text": text}, {"type": "text", "text": "\n"}],
                [{"type": "image"}],
                text,
                {"type": "text", "text": text},
            ]
        )
    )
    details = draw(
        st.sampled_from(
            [{"persistedDetailsTruncated": True}, {}, None, [], "x", {"textx": 1}, "absent"]
        )
    )
    holder: dict[str, Any] = {"content": content}
    if details != "absent":
        holder["details"] = details
    name = draw(st.one_of(TOOL_NAMES, st.none()))
    if draw(st.booleans()):  # a toolResult message
        msg: dict[str, Any] = {"role": "toolResult", "toolCallId": "toolu_01", **holder}
        if name is not None:
            msg["toolName"] = name
    else:  # a Claude Code user message's tool_result block
        block = {"type": "tool_result", "tool_use_id": "toolu_01", **holder}
        if name is not None:
            block["name"] = name
        msg = {"role": "user", "content": [block]}
    rec = {"type": "message", "timestamp": "2026-02-25T09:14:02.123Z", "message": msg}
    return json.dumps(rec, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=text_answer_line())
def test_a_payload_read_from_its_text_is_the_plain_readings(line: bytes) -> None:
    """A text decoded without its ``strip``, a cut text recovered without a decode that
    must fail: the payload, paths and flags of the plain reading (``_payload``: the text
    joined, stripped and decoded, else recovered), whatever frames the text."""
    parsed = parse(line)
    assert same(parsed, parse_line(line))
    try:
        rec = orjson.loads(line)
    except orjson.JSONDecodeError:  # a lone surrogate: read with the bytes replaced
        try:
            rec = orjson.loads(line.decode("utf-8", "replace"))
        except orjson.JSONDecodeError:  # (escaped, ``\\ud800``: no JSON at all)
            assert parsed.malformed
            return
    msg = rec["message"]
    holder = msg if msg["role"] == "toolResult" else msg["content"][0]
    name = holder.get("toolName", holder.get("name")) or None
    tool = memory_tool(name)
    if name is not None and tool is None:
        assert parsed.events == ()  # another tool's answer
        return
    payload, recovered = result_paths.payload_of(holder.get("content"), holder.get("details"))
    shape = result_paths.shape_of(payload) if isinstance(payload, dict) else None
    if recovered:
        shape = shape or "search"
    kind = tool or shape
    paths = result_paths.paths_of(kind, payload) if kind is not None else ()
    (result,) = parsed.events
    assert same(
        (result.tool, result.paths, result.recovered, result.shape if kind else None),
        (tool, paths, recovered if kind else False, shape if kind else None),
    )


ODD_NUMBERS = st.one_of(
    NUMBER,
    st.sampled_from(
        [" 7 ", "1_0", "\u0661\u0662", "-0", "1e12", "1e13", "infinity", "-inf", "0x10", "7.9"]
    ),
    st.integers(-(10**13), 10**13),
)


@st.composite
def odd_search_line(draw: st.DrawFn) -> bytes:
    """Search results with any subset of their keys (either spelling, or both) and numbers
    of every form: the one-lookup reading of an item, or the key-by-key one, or none."""
    results: list[Any] = []
    for _ in range(draw(st.integers(0, 5))):
        item: dict[str, Any] = {}
        for key in draw(
            st.lists(
                st.sampled_from(
                    [
                        "path",
                        "source",
                        "corpus",
                        "score",
                        "startLine",
                        "endLine",
                        "start_line",
                        "end_line",
                    ]
                ),
                unique=True,
            )
        ):
            if key == "path":
                item[key] = draw(st.one_of(PATHS, st.sampled_from(["MEMORY.md", 3, None])))
            elif key == "source":
                item[key] = draw(st.sampled_from(["memory", "sessions", "Sessions", None, 1]))
            elif key == "corpus":
                item[key] = draw(st.sampled_from(["memory", "wiki", "MEMORY", None, [], 1]))
            else:
                item[key] = draw(ODD_NUMBERS)
        results.append(item if draw(st.integers(0, 9)) else draw(JSON_VALUE))
    body = {"results": results}
    msg = {
        "role": "toolResult",
        "toolCallId": "toolu_01",
        "toolName": draw(
            st.sampled_from(["memory_search", "mcp__x__memory_search", " MEMORY_SEARCH"])
        ),
        "content": [{"type": "text", "text": json.dumps(body)}],
        "details": body if draw(st.booleans()) else {"persistedDetailsTruncated": True},
    }
    return json.dumps({"type": "message", "message": msg}).encode()


@settings(max_examples=200, deadline=None)
@given(line=odd_search_line())
def test_search_items_with_missing_keys_and_odd_numbers_read_as_the_rule_says(
    line: bytes,
) -> None:
    (result,), _ = parse(line)
    assert same(result.paths, spec_search_paths(payload_of(line)))


@st.composite
def odd_get_line(draw: st.DrawFn) -> bytes:
    """A memory_get answer with ``from`` / ``lines`` of every form, or missing."""
    body: dict[str, Any] = {
        "path": draw(st.one_of(PATHS, st.just(5))),
        "text": draw(st.sampled_from(["x", "", None, 3])),
    }
    for key in ("from", "lines"):
        if draw(st.booleans()):
            body[key] = draw(ODD_NUMBERS)
    if draw(st.booleans()):  # memory_get corpus=wiki|all: the page's corpus, in any case or type
        body["corpus"] = draw(st.sampled_from(["memory", "MEMORY", "wiki", None, [], 1, {}]))
    if draw(st.integers(0, 4)) == 0:
        body["disabled"] = draw(st.sampled_from([True, False, 1]))
    msg = {
        "role": "toolResult",
        "toolCallId": "toolu_01",
        "toolName": draw(st.sampled_from(["memory_get", "mcp_openclaw_memory_get"])),
        "content": [{"type": "text", "text": json.dumps(body)}],
        "details": body,
    }
    return json.dumps({"type": "message", "message": msg}).encode()


@settings(max_examples=150, deadline=None)
@given(line=odd_get_line())
def test_get_answers_with_odd_line_numbers_read_as_the_rule_says(
    line: bytes,
) -> None:
    (result,), _ = parse(line)
    assert same(result.paths, spec_get_paths(payload_of(line)))
