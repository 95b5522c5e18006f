"""Compressed rows of the transcript store: hostile frames, decoded as carefully as before.

memoryd decodes a row's zstd frame with ``zstandard`` and one reused context (making a
context per frame cost as much as decoding the frame). What a row decodes to must be
what the standard library's streaming decoder gave with an output buffer of the limit
+ 1 bytes (memoryd's decoder until then, kept here as :func:`reference`): the event,
or a refusal. And never more memory than about the limit, whatever a header declares.
"""

from __future__ import annotations

import base64
import random
import sqlite3
import struct
import sys
import threading
import tracemalloc

import pytest
import zstandard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memoryd.ingest import sqlite_source

try:
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:
    from backports import zstd  # type: ignore[no-redef]

pytestmark = pytest.mark.unit

MAGIC = b"\x28\xb5\x2f\xfd"
LIMIT = 1 << 20  # as ingest.max_line_bytes, lowered: 1 MiB
TB = 1 << 40


def reference(frame: bytes, limit: int) -> bytes | None:
    """The stdlib decoder, as memoryd used it: at most limit + 1 bytes; None if refused."""
    d = zstd.ZstdDecompressor()
    try:
        out = d.decompress(frame, max_length=limit + 1)
    except (zstd.ZstdError, EOFError):
        return None
    if len(out) <= limit and not d.eof:
        return None
    return bytes(out)


def ours(frame: bytes, limit: int) -> bytes | None:
    try:
        return sqlite_source.decompress(frame, limit)
    except ValueError:
        return None


def openclaw_frame(data: bytes, *, size: bool = True) -> bytes:
    """Level 1 with a checksum, as OpenClaw writes; ``size``: the header says the length."""
    return zstandard.ZstdCompressor(level=1, write_checksum=True, write_content_size=size).compress(
        data
    )


def rle_frame(blocks: int, declared: int | None) -> bytes:
    """A frame of RLE blocks, 128 KiB of ``a`` for every 4 bytes; ``declared`` in its header
    (8 bytes), or none. 2,000 blocks are 8 KB that decode to 262 MB."""
    fhd = (3 << 6) if declared is not None else 0
    out = MAGIC + bytes([fhd, 7 << 3])  # window 128 KiB
    if declared is not None:
        out += struct.pack("<Q", declared)
    for i in range(blocks):
        head = (1 if i == blocks - 1 else 0) | (1 << 1) | ((128 << 10) << 3)
        out += head.to_bytes(3, "little") + b"a"
    return out


def skippable(payload: bytes = b"meta") -> bytes:
    return struct.pack("<II", 0x184D2A50, len(payload)) + payload


def event(n: int, seed: int = 1) -> bytes:
    """An event-like JSON text of about n bytes that compresses about 3:1."""
    text = base64.b64encode(random.Random(seed).randbytes(n))[: n // 2] * 2
    return b'{"type":"message","text":"' + text + b'"}'


def decode(frame: bytes, nbytes: int | None, max_bytes: int = LIMIT):
    """decode_event on a compressed row, and the most Python memory it held at once."""
    tracemalloc.start()
    try:
        got = sqlite_source.decode_event("null", None, frame, nbytes, max_bytes)
        return got, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


EV = event(6000)
GOOD = openclaw_frame(EV)


# --------------------------------------------------------------------------- hostile frames


def test_a_frame_declaring_a_terabyte_is_refused_without_allocating_it():
    """The header's size is not trusted: no 1 TB buffer (a MemoryError), no more than about
    the limit held, and the row is refused."""
    frame = rle_frame(3, declared=TB)
    assert zstandard.frame_content_size(frame) == TB
    (data, why), peak = decode(frame, 300_000)
    assert data is None and why
    assert peak < 300_000 + (1 << 20), peak
    (data, why), peak = decode(frame, None)  # no event_utf8_bytes: the limit alone bounds it
    assert data is None and why
    assert peak < 3 * LIMIT, peak


def test_a_bomb_declaring_a_terabyte_is_cut_at_the_limit():
    frame = rle_frame(2000, declared=TB)  # 262 MB behind 8 KB
    (data, why), peak = decode(frame, 300_000)
    assert data is None and why == "decoded 300001 bytes, event_utf8_bytes says 300000"
    assert peak < 2 * 300_000 + (1 << 20), peak


def test_a_bomb_that_declares_no_size_is_cut_past_event_utf8_bytes():
    frame = rle_frame(2000, declared=None)
    assert zstandard.frame_content_size(frame) == -1
    (data, why), peak = decode(frame, 300_000)
    assert data is None and why == "decoded 300001 bytes, event_utf8_bytes says 300000"
    assert peak < 2 * 300_000 + (1 << 20), peak
    (data, why), peak = decode(frame, None)
    assert data is None and why == f"event over {LIMIT} bytes"
    assert peak < 3 * LIMIT, peak


@pytest.mark.parametrize("extra", [0, 1, 1000])
def test_an_event_one_byte_over_the_limit_is_refused_as_any_over_it(extra):
    """``event_utf8_bytes`` of the limit + 1 bytes: the decoder stops one byte past the
    limit, and those limit + 1 bytes matched the claimed length, so the row was taken: an
    event over ``ingest.max_line_bytes`` read (a JSONL line of that length is skipped as
    oversized), or, when the frame holds more than it claims, the event's first bytes only."""
    data = event(LIMIT + 1 + extra)[: LIMIT + 1 + extra]
    frame = openclaw_frame(data)
    (got, why), _ = decode(frame, LIMIT + 1)
    assert (got, why) == (None, f"event over {LIMIT} bytes")
    (got, why), _ = decode(frame, LIMIT + 2)  # (as it was)
    assert got is None and why


@pytest.mark.parametrize("nbytes", [None, 2**62])
def test_a_frame_without_its_size_is_decoded_whatever_max_line_bytes_says(nbytes):
    """``ingest.max_line_bytes`` has no upper bound (a user may set it huge, meaning "skip
    no line"). A frame whose header does not say its size was decoded in one call into a
    buffer of the limit + 1 bytes, allocated first: with no ``event_utf8_bytes`` (or one as
    wrong as 2**62) the limit is max_line_bytes, and the scan of the store failed with a
    MemoryError at every try."""
    frame = openclaw_frame(EV, size=False)
    (data, why), peak = decode(frame, nbytes, max_bytes=1 << 50)
    if nbytes is None:
        assert (data, why) == (EV, None)
    else:
        assert data is None and why == f"decoded {len(EV)} bytes, event_utf8_bytes says {nbytes}"
    assert peak < 4 * len(EV) + (1 << 20), peak


@pytest.mark.parametrize("nbytes", [None, TB * 32])
def test_a_header_declaring_terabytes_is_refused_whatever_max_line_bytes_says(nbytes):
    """The same with a header that declares 32 TB, within such a limit (and within
    ``event_utf8_bytes``, which may say as much): the one call allocated what the header
    declared before finding out, a MemoryError."""
    frame = rle_frame(3, declared=TB * 32)
    (data, why), peak = decode(frame, nbytes, max_bytes=1 << 50)
    assert data is None and why
    assert peak < 2 << 20, peak


def test_a_header_declaring_less_than_the_frame_holds_is_refused():
    frame = rle_frame(3, declared=1000)
    (data, why), peak = decode(frame, 1000)
    assert data is None and why
    assert peak < 1 << 20


@pytest.mark.parametrize(
    ("frame", "nbytes", "want"),
    [
        (GOOD, len(EV), EV),
        (openclaw_frame(EV, size=False), len(EV), EV),  # no size in the header
        (GOOD, None, EV),  # no event_utf8_bytes
        (GOOD + b"trailing bytes", len(EV), EV),  # bytes after the frame: ignored, as before
        (GOOD + openclaw_frame(b'{"b":1}'), len(EV), EV),  # two frames: the first one
        (GOOD + openclaw_frame(b'{"b":1}'), len(EV) + 7, None),  # ... not both
        (skippable(), 0, b""),  # a skippable frame alone decodes to nothing
        (skippable() + GOOD, len(EV), None),  # ... and ends the decoding there
        (openclaw_frame(b""), 0, b""),
        (GOOD[: len(GOOD) // 2], len(EV), None),  # cut short
        (GOOD[:5], len(EV), None),  # cut inside the header
        (b"", 0, None),
        (GOOD[:-1] + bytes([GOOD[-1] ^ 1]), len(EV), None),  # a bad checksum
        (b"not a zstd frame at all", 23, None),
        (GOOD, len(EV) - 1, None),  # event_utf8_bytes says less than the frame holds
        (GOOD, len(EV) + 1, None),  # ... or more
    ],
    ids=[
        "plain",
        "no-size-in-header",
        "no-event_utf8_bytes",
        "trailing-bytes",
        "two-frames-first",
        "two-frames-both",
        "skippable",
        "skippable-then-frame",
        "empty-frame",
        "cut",
        "cut-header",
        "empty-blob",
        "bad-checksum",
        "not-zstd",
        "length-over",
        "length-under",
    ],
)
def test_each_kind_of_frame_decodes_as_before(frame, nbytes, want):
    (data, why), peak = decode(frame, nbytes)
    assert data == want, why
    assert (why is None) == (want is not None)
    limit = LIMIT if nbytes is None else min(nbytes, LIMIT)
    assert reference(frame, limit) == ours(frame, limit)
    if nbytes is not None:
        assert peak < 4 * len(EV) + (1 << 17), peak


def test_a_corrupt_block_is_refused_and_said():
    bad = bytearray(GOOD)
    for i in range(len(bad) // 2, len(bad) // 2 + 8):
        bad[i] ^= 0x5A
    data, why = sqlite_source.decode_event("null", None, bytes(bad), len(EV), LIMIT)
    assert data is None and why and why.startswith("bad zstd frame: ")
    assert "zstd decompressor error" not in why  # the decoder's words, not the binding's


def test_a_cut_frame_is_said_to_be_cut():
    data, why = sqlite_source.decode_event("null", None, GOOD[:-6], len(EV), LIMIT)
    assert (data, why) == (None, "zstd frame cut short")


def calls_into_c(fn, *args):
    """How many C functions ``fn(*args)`` calls (a count, not a time: the same on any
    machine)."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "c_call":
            count += 1

    sys.setprofile(profile)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("how", ["cut", "length-over", "lying-header"])
def test_a_refused_frame_costs_a_few_decoder_calls_not_one_per_byte(how):
    """A row refused after the one-call decode (a frame cut short by a torn write, a frame
    longer than its ``event_utf8_bytes``, a header that lies) is decoded again the careful
    way. That way fed it to the decoder a few bytes at a time, one byte at a time for its
    last 256 KiB: ~75,000 decoder calls (48 ms against the old decoder's 0.3) for a 200 kB
    event, so a store of such rows took minutes."""
    data = event(200_000, 7)
    frame = openclaw_frame(data)
    row = {
        "cut": (frame[:-10], len(data)),
        "length-over": (frame, len(data) - 1),
        "lying-header": (rle_frame(8, declared=1000), 1000),
    }[how]
    assert ours(*row) == reference(*row)
    assert sqlite_source.decode_event("null", None, *row, LIMIT)[0] is None
    assert calls_into_c(sqlite_source.decode_event, "null", None, *row, LIMIT) < 100


# --------------------------------------------------------------------------- any frame


def mutate(frame: bytes, how: int, rnd: random.Random) -> bytes:
    b = bytearray(frame)
    if how == 1 and b:
        return bytes(b[: rnd.randrange(len(b))])
    if how == 2 and b:
        for _ in range(rnd.randint(1, 3)):
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
    if how == 3:
        b += rnd.randbytes(rnd.randint(1, 12))
    if how == 4 and len(b) > 6:  # the header
        b[rnd.randrange(4, min(len(b), 14))] = rnd.randrange(256)
    if how == 5:
        b = bytearray(skippable(rnd.randbytes(rnd.randint(0, 5)))) + b
    return bytes(b)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 100, 3000, 40_000, 300_000]),
    seed=st.integers(0, 2**16),
    level=st.sampled_from([1, 3]),
    size=st.booleans(),
    check=st.booleans(),
    how=st.integers(0, 6),
    limit_shift=st.integers(-2, 2),
)
def test_any_frame_decodes_as_the_streaming_decoder_did(
    n, seed, level, size, check, how, limit_shift
):
    """The event or the refusal, byte for byte the same as the stdlib's streaming decoder with
    an output buffer of limit + 1 bytes: fast path or careful path, whatever the mutation."""
    rnd = random.Random(seed)
    data = event(n, seed)
    c = zstandard.ZstdCompressor(level=level, write_checksum=check, write_content_size=size)
    frame = mutate(c.compress(data), how, rnd)
    limit = max(0, len(data) + limit_shift)
    assert ours(frame, limit) == reference(frame, limit)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 500))
def test_any_bytes_decode_as_the_streaming_decoder_did(blob, limit):
    assert ours(MAGIC + blob, limit) == reference(MAGIC + blob, limit)
    assert ours(blob, limit) == reference(blob, limit)


def test_threads_decoding_at_once_each_get_their_own_rows():
    """The decoder's context is kept per thread: rows decoded at once never mix."""
    events = [event(2000 + 97 * i, i) for i in range(40)]
    frames = [openclaw_frame(e) for e in events]
    wrong: list[int] = []

    def work() -> None:
        for _ in range(25):
            for i, f in enumerate(frames):
                got, _ = sqlite_source.decode_event("null", None, f, len(events[i]), LIMIT)
                if got != events[i]:
                    wrong.append(i)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


# --------------------------------------------------------------------------- a batch's size


VALUE = st.one_of(
    st.none(),
    st.text(max_size=20),
    st.binary(max_size=20),
    st.integers(-(2**62), 2**62),
    st.floats(allow_nan=False, allow_infinity=False),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(VALUE, VALUE), max_size=12))
@example([(None, 2**62), (None, 2**62)])  # past 64 bits
@example([(None, 2**62), (None, 2**62), (None, -(2**62))])  # past 64 bits on the way only
def test_a_batch_size_is_what_sqlite_summed(tmp_path_factory, rows):
    """``bytes_read`` of a store batch, now added up in Python from the rows handed over,
    is what SQLite's SUM over the same rows gave, whatever a hostile row holds; where SQLite
    raised "integer overflow" (which failed the store), a measure that does not raise."""
    db = tmp_path_factory.mktemp("size") / "s.sqlite"
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE transcript_events(session_id TEXT, seq INTEGER, event_json TEXT, "
        "created_at INTEGER, event_zstd BLOB, event_utf8_bytes INTEGER)"
    )
    conn.executemany(
        "INSERT INTO transcript_events VALUES ('s', ?, ?, 0, NULL, ?)",
        [(i, text, n) for i, (text, n) in enumerate(rows)],
    )
    layout = sqlite_source.detect_layout(conn)
    assert layout is not None
    got, upto, more = sqlite_source.every_row(conn, layout, "s", sqlite_source.START, len(rows))
    assert upto == (len(rows), None) and not more
    assert [r[0] for r in got] == list(range(len(rows)))
    try:
        total = conn.execute(
            "SELECT SUM(COALESCE(length(CAST(event_json AS BLOB)), event_utf8_bytes, 0)) "
            "FROM transcript_events"
        ).fetchone()[0]
    except sqlite3.OperationalError as exc:
        assert "integer overflow" in str(exc)
        assert -(2**63) <= sqlite_source.size_of(got) < 2**63
    else:
        want = int(total or 0) if isinstance(total, int) else 0
        assert sqlite_source.size_of(got) == want
    conn.close()


@pytest.mark.parametrize("json_type", ["text", "blob"])
def test_a_plain_event_over_the_limit_is_refused_as_a_compressed_one_is(json_type):
    """OpenClaw stores an event over 4 MiB without compressing it: over
    ``ingest.max_line_bytes`` it is refused as the same event compressed is (a JSONL line of
    that length is skipped too), and at the limit it is read."""
    at_limit = event(LIMIT)[:LIMIT]
    over = event(LIMIT + 1)[: LIMIT + 1]
    assert sqlite_source.decode_event(json_type, at_limit, None, None, LIMIT) == (at_limit, None)
    plain = sqlite_source.decode_event(json_type, over, None, None, LIMIT)
    packed, _ = decode(openclaw_frame(over), len(over))
    assert plain == packed == (None, f"event over {LIMIT} bytes")
