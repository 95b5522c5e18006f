"""A memory tool's answer → the memory files it found (:class:`.events.ToolResult`), pure.

What counts as a hit is decided here, from the payload alone (docs/ingest.md, "What is a hit"):
several chunks of one file are one hit (best score, widest line range). The payload is read
from ``details`` while it still has the data, else from ``content[].text``; a text cut and no
longer JSON gives the ``"path"`` entries before the cut, each with its result's ``corpus``
(docs/openclaw-formats.md).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from ..section_map import WHOLE_FILE
from .events import GET, SEARCH, ResultPath, ToolResult

_loads = orjson.loads
_DecodeError = orjson.JSONDecodeError
# ``tuple.__new__(ResultPath, fields)``: the named tuple in one C call (see .parser).
_new = tuple.__new__

# "path": "..." inside (possibly cut) JSON text; the value is a JSON string body.
_PATH_IN_TEXT = re.compile(r'"path"\s*:\s*"((?:[^"\\]|\\.)*)"')
_TEXT_IN_TEXT = re.compile(r'"text"\s*:\s*"((?:[^"\\]|\\.)?)')
# A JSON string (a key when a colon follows), or a brace or bracket outside strings: to tell
# which object of a cut text a recovered path belongs to.
_TOKEN_IN_TEXT = re.compile(r'"((?:[^"\\]|\\.)*)"(\s*:)?|[{}\[\]]')


def tool_result(
    call_id: str, tool: str | None, holder: dict[str, Any], ts: float | None, made: float | None
) -> ToolResult:
    """A memory tool's answer (``tool`` None: a result naming no tool, known by its payload's
    shape), its ``content`` and ``details`` held in a message, a content block or a wrapper.
    The payload is ``details`` when intact; else the content's usual one text block, decoded
    here (recovered at once when cut), else taken by :func:`payload_of`.
    """
    if holder.get("isError") is True or holder.get("is_error") is True:
        return _new(ToolResult, (call_id, tool, (), ts, False, None, made, None))
    recovered = False
    payload: object
    details = holder.get("details")
    if type(details) is dict and (
        "results" in details or "text" in details or "disabled" in details
    ):
        payload = details  # intact details: the text is not read
    else:
        payload = _NOT_READ
        content = holder.get("content")
        if type(content) is list and len(content) == 1:
            block = content[0]
            text = block.get("text") if type(block) is dict else None
        else:
            text = content  # a string, or nothing the lean reading takes
        if type(text) is str and text[:1] == "{":
            if text[-1:] == "}":
                try:  # (JSON allows only whitespace around: ``strip`` gives the same)
                    payload = _loads(text)
                except _DecodeError:
                    payload = _NOT_READ
            elif not text.rstrip().endswith("}"):  # cut: no JSON object, no decode
                payload, recovered = _recover(text)
        if payload is _NOT_READ:
            payload, recovered = payload_of(content, details)
    shape = shape_of(payload) if type(payload) is dict else None
    if recovered:
        shape = shape or SEARCH
    kind = tool or shape
    if kind is None:
        return _new(ToolResult, (call_id, None, (), ts, False, None, made, None))
    paths: tuple[ResultPath, ...] = ()
    if type(payload) is dict and payload.get("disabled") is not True:  # (_paths, inline)
        if kind is not SEARCH:
            paths = _get_paths(payload)
        else:
            results = payload.get("results")
            if type(results) is list:
                paths = _search_paths(results)
    return _new(ToolResult, (call_id, tool, paths, ts, recovered, shape, made, None))


_NOT_READ = object()  # a result's payload not taken yet


def payload_of(content: Any, details: Any) -> tuple[Any, bool]:
    """The result object, from details if intact, else from the content text."""
    if isinstance(details, dict) and (
        "results" in details or "text" in details or "disabled" in details
    ):
        return details, False
    text = text_of(content)
    if text is None:
        return (details if isinstance(details, dict) else None), False
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            return orjson.loads(stripped), False
        except orjson.JSONDecodeError:
            pass
    return _recover(text)


def _recover(text: str) -> tuple[Any, bool]:
    """The payload of a text that is not JSON: ``"path"`` entries recovered from it, if any,
    each with the ``corpus`` its result names (so another corpus's stays out, as it does from
    whole JSON)."""
    found = list(_PATH_IN_TEXT.finditer(text))
    if found:
        corpora = _corpus_at(text) if '"corpus"' in text else {}
        recovered = [(_json_unescape(m.group(1)), corpora.get(m.start())) for m in found]
        m = None if '"results"' in text else _TEXT_IN_TEXT.search(text)
        if m is not None:  # a cut memory_get answer: non-empty text means it was read
            first, corpus = recovered[0]
            return _recovered(first, corpus, text="x" if m.group(1) else ""), True
        return {"results": [_recovered(p, c) for p, c in recovered if p is not None]}, True
    return None, False


def _recovered(path: str | None, corpus: str | None, **more: str) -> dict[str, Any]:
    return {"path": path, **more} if corpus is None else {"path": path, **more, "corpus": corpus}


def _corpus_at(text: str) -> dict[int, str]:
    """Where each ``"path"`` key of a (cut) JSON text starts → the ``corpus`` named by the
    object holding it, before or after it (before the cut), for the objects that name one.

    ``memory_search corpus=all`` puts ``corpus`` last in a memory result and first in a wiki
    page's; a nested object's ``corpus`` (``corpora: [{corpus, outcome}]``) is its own.
    """
    out: dict[int, str] = {}
    # The open objects: where their "path" keys start, their corpus values (None: not a string).
    objects: list[tuple[list[int], list[str | None]]] = []
    key = None  # the key whose value comes next
    for m in _TOKEN_IN_TEXT.finditer(text):
        value = m.group(1) is not None and m.group(2) is None
        if key == "corpus" and objects:
            # (a value that is no string shows as the next token, whatever it is)
            objects[-1][1].append(_json_unescape(m.group(1)) if value else None)
        key = None
        if m.group(1) is None:  # a brace or a bracket
            bracket = m.group(0)
            if bracket == "{":
                objects.append(([], []))
            elif bracket == "}" and objects:
                _name_corpus(out, *objects.pop())
        elif not value:
            key = m.group(1)
            if key == "path" and objects:
                objects[-1][0].append(m.start())
    for paths, corpus in objects:  # cut open
        _name_corpus(out, paths, corpus)
    return out


def _name_corpus(out: dict[int, str], paths: list[int], corpus: list[str | None]) -> None:
    # (a key given twice: the last one, as the JSON reader takes it)
    if corpus and corpus[-1] is not None:
        for at in paths:
            out[at] = corpus[-1]


def shape_of(payload: dict[str, Any]) -> str | None:
    if type(payload.get("results")) is list or payload.get("disabled") is True:
        return SEARCH
    if "text" in payload and ("path" in payload or "from" in payload):
        return GET
    return None


def paths_of(kind: str, payload: Any) -> tuple[ResultPath, ...]:
    """The memory files an answer of ``kind`` (SEARCH or GET) found: none when it was
    disabled or holds no object."""
    if type(payload) is not dict or payload.get("disabled") is True:
        return ()
    if kind is not SEARCH:
        return _get_paths(payload)
    results = payload.get("results")
    return _search_paths(results) if type(results) is list else ()


def _search_paths(results: list[Any]) -> tuple[ResultPath, ...]:
    """The files of a search's ``results``: one per path (several chunks of a file merge: best
    score, widest lines), the usual values read inline (this loop runs for every result of
    every search in the backlog)."""
    merged: dict[str, ResultPath] = {}
    for item in results:
        if type(item) is not dict:
            continue
        path = item.get("path")
        if type(path) is not str or not path:
            continue
        source = item.get("source")
        if source != "memory" and type(source) is str and source.lower() == "sessions":
            continue
        corpus = item.get("corpus")
        if corpus is not None and corpus != "memory" and not _memory_corpus(corpus):
            continue
        score = item.get("score")
        if type(score) is not float:
            score = _to_float(score)
        start = item.get("startLine")
        if start is None and "startLine" not in item:
            start = item.get("start_line")
        end = item.get("endLine")
        if end is None and "endLine" not in item:
            end = item.get("end_line")
        if type(start) is not int or not _INT_MIN <= start <= _INT_MAX:
            start = None if start is None else _to_int(start)
        if type(end) is not int or not _INT_MIN <= end <= _INT_MAX:
            end = None if end is None else _to_int(end)
        snippet = item.get("snippet")
        anchor = ((start, end, snippet),) if type(snippet) is str else None
        prev = merged.get(path)
        if prev is not None:  # another chunk of the file: the best score, the widest lines
            # (of equal values the first is kept, as ``max`` and ``min`` keep it)
            _, low, first, last, before = prev
            if low is not None and (score is None or not score > low):
                score = low
            if first is not None and (start is None or not start < first):
                start = first
            if last is not None and (end is None or not end > last):
                end = last
            if before is not None:  # each chunk's text kept: each covered its own section
                anchor = before if anchor is None else before + anchor
        merged[path] = _new(ResultPath, (path, score, start, end, anchor))
    return tuple(merged.values())


def _memory_corpus(corpus: Any) -> bool:
    """Whether a result's ``corpus`` is the workspace's memory (or not given): another
    corpus's ``path`` (the memory-wiki vault's, say) is relative to it, not to the workspace.
    """
    return not isinstance(corpus, str) or corpus.lower() == "memory"


def _get_paths(payload: dict[str, Any]) -> tuple[ResultPath, ...]:
    """The file a ``memory_get`` answer (not disabled) read: its path when its text is not
    empty (the path may be missing in some builds: the caller fills it from the call's
    arguments)."""
    text = payload.get("text")
    if type(text) is not str or not text:
        return ()
    if "corpus" in payload and not _memory_corpus(payload["corpus"]):
        return ()
    path = payload.get("path")
    first = payload.get("from")
    if type(first) is not int or not _INT_MIN <= first <= _INT_MAX:
        first = None if first is None else _to_int(first)
    lines = payload.get("lines")
    if type(lines) is not int or not _INT_MIN <= lines <= _INT_MAX:
        lines = None if lines is None else _to_int(lines)
    end = first + lines - 1 if first is not None and lines else None
    # (no ``from``: the whole file was read, which says nothing of one section)
    anchor = WHOLE_FILE if first is None else ((first, end, text),)
    return (_new(ResultPath, (path if type(path) is str else "", None, first, end, anchor)),)


# --------------------------------------------------------------------------- values


def text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        ]
        return "".join(parts) if parts else None
    text = content.get("text") if isinstance(content, dict) else None
    return text if isinstance(text, str) else None


def _json_unescape(body: str) -> str | None:
    try:
        value = orjson.loads(f'"{body}"')
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None


def _to_float(value: Any) -> float | None:
    kind = type(value)  # JSON's own number types first, by identity
    if kind is float:
        return value  # type: ignore[no-any-return]  # (a float: its type is float)
    if kind is int:
        return float(value)
    if isinstance(value, str):  # (a number written as a string is common)
        try:
            return float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


_INT_MAX = 10**12
# Its negation, once: ``-_INT_MAX`` in a test builds a new int object every time it runs.
_INT_MIN = -_INT_MAX


def _to_int(value: Any) -> int | None:
    f = _to_float(value)
    if f is None or f != f or abs(f) > _INT_MAX:
        return None
    return int(f)
