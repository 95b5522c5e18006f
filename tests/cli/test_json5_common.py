"""The fast reader of hand-written openclaw.json files means what JSON5 means.

``loads_common`` either gives ``json5``'s own value or None (then the reader asks ``json5``):
never a different value, and never a value for a text JSON5 refuses. Without this, a
comment or a single quote in a person's openclaw.json could send memoryd to another
workspace than the one OpenClaw uses.
"""

from __future__ import annotations

import json

import json5
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.config.json5_common import Uncommon, loads_common


def fast(text: str) -> object:
    """The fast reader's value, or :data:`NOT_READ` when it leaves the text to json5."""
    try:
        return loads_common(text)
    except Uncommon:
        return NOT_READ


NOT_READ = object()

KEYS = st.one_of(
    st.from_regex(r"\A[A-Za-z_$][A-Za-z0-9_$]{0,8}\Z"),
    st.text(max_size=8),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False),
    st.text(max_size=12),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=12,
)


def same(a: object, b: object) -> bool:
    return repr(a) == repr(b)  # (-0.0 and 0, 1 and 1.0, key order all told apart)


@st.composite
def hand_written(draw: st.DrawFn, value: object | None = None) -> str:
    """``value`` as a person writes JSON5: comments, trailing commas, bare keys, 'quotes'."""
    value = draw(VALUES) if value is None else value

    def gap() -> str:
        return draw(
            st.sampled_from(
                ["", " ", "\n  ", " // note: a, b } ]\n", " /* x, } */ ", " // line\u2028 "]
            )
        )

    def string(s: str) -> str:
        if draw(st.booleans()) and "\n" not in s and "\r" not in s:
            body = json.dumps(s, ensure_ascii=False)[1:-1].replace('\\"', '"').replace("'", "\\'")
            return "'" + body + "'"
        return json.dumps(s, ensure_ascii=False)

    def render(v: object) -> str:
        if isinstance(v, dict):
            items = []
            for k, item in v.items():
                bare = k.isascii() and k[:1].isalpha() and (k.replace("_", "").isalnum())
                key = k if bare and draw(st.booleans()) else string(k)
                items.append(f"{gap()}{key}{gap()}:{gap()}{render(item)}")
            tail = "," if items and draw(st.booleans()) else ""
            return "{" + ",".join(items) + tail + gap() + "}"
        if isinstance(v, list):
            items = [gap() + render(item) for item in v]
            tail = "," if items and draw(st.booleans()) else ""
            return "[" + ",".join(items) + tail + gap() + "]"
        if isinstance(v, str):
            return string(v)
        return json.dumps(v)

    return gap() + render(value) + gap()


@settings(max_examples=200, deadline=None)
@given(hand_written())
def test_what_people_write_is_read_as_json5_reads_it(text):
    expected = json5.loads(text)
    got = fast(text)
    assert got is not NOT_READ, text  # the common forms never need the slow parser
    assert same(got, expected), text


# (U+2028 and U+2029 end a line in JSON5, a // comment with it: ASCII alone missed that)
ALPHABET = st.sampled_from(
    [
        *"{}[],:'\"\\/*-+.0123456789 \nabeExuNIfinty$_\u2028\u2029\t\v\xa0\u3000\ufeff\x85",
        "//",
        "/*",
        "*/",
    ]
)


@settings(max_examples=800, deadline=None)
@given(st.lists(ALPHABET, max_size=30).map("".join))
def test_no_text_is_read_otherwise_than_json5_would(text):
    got = fast(text)
    if got is NOT_READ:
        return
    try:
        expected = json5.loads(text)
    except Exception as exc:  # JSON5 refuses it: so must the fast reader
        raise AssertionError(f"{text!r} read as {got!r}, which JSON5 refuses ({exc})") from None
    assert same(got, expected), text


@settings(max_examples=200, deadline=None)
@given(hand_written(), st.integers(0, 200), st.sampled_from(list(",:}]'\"/\\*x0")))
def test_a_damaged_file_is_never_read_otherwise_than_json5_would(text, at, char):
    broken = text[:at] + char + text[at:]
    got = fast(broken)
    if got is NOT_READ:
        return
    try:
        expected = json5.loads(broken)
    except Exception as exc:
        raise AssertionError(f"{broken!r} read as {got!r}, JSON5 refuses ({exc})") from None
    assert same(got, expected), broken


def test_a_line_comment_ends_where_json5_ends_a_line():
    text = "{a: 1, // the next line: b\u2028 b: 2\n}"
    assert fast(text) in ({"a": 1, "b": 2}, NOT_READ)
    assert json5.loads(text) == {"a": 1, "b": 2}


def test_what_the_fast_reader_leaves_to_json5():
    for text in ("{a: 0x10}", "{a: .5}", "{a: +1}", '{"a": "\\x41"}', "{ä: 1}", "{a: 'x\\\ny'}"):
        assert fast(text) is NOT_READ, text
        json5.loads(text)  # (JSON5 proper: the slow reader takes them)
