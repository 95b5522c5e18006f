"""A stored event's bytes: plain JSON text, or (schema ≥ 23) a zstd frame of its UTF-8
bytes with their length, decoded within a limit (a bomb is cut, then refused). The zstd
bindings are imported at the first compressed row.
"""

from __future__ import annotations

import sys
from typing import Any

_ZSTD: Any = None


def zstd_module() -> Any:
    """The standard library's zstd binding (``compression.zstd`` on Python ≥ 3.14, else its
    backport), imported on first use: for archives' streaming reads and the rare row
    :func:`_bounded` decodes. Single rows take ``zstandard``, which reuses one context."""
    global _ZSTD
    if _ZSTD is None:
        if sys.version_info >= (3, 14):
            from compression import zstd  # type: ignore[import-not-found]
        else:
            from backports import zstd
        _ZSTD = zstd
    return _ZSTD


def is_frame_error(exc: BaseException) -> bool:
    """A compressed stream that does not decode (as opposed to a fault of our own)."""
    if isinstance(exc, EOFError):
        return True
    return _ZSTD is not None and isinstance(exc, _ZSTD.ZstdError)


# zstd's magic number, little-endian, at the start of every regular frame (skippable frames
# start with 0x184D2A50 to 0x184D2A5F instead).
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# The largest buffer the one-call decode allocates up front, before reading the frame
# (OpenClaw compresses events of at most 4 MiB); larger frames take the careful way.
_ONE_CALL_MAX = 16 << 20

_FRAMES: Any = None  # the zstandard module, imported on first use
_LOCAL: Any = None  # a threading.local: one reusable decompression context per thread


def frames_module() -> Any:
    """The ``zstandard`` binding, imported at the first compressed row (with ``threading``,
    which read commands do without)."""
    global _FRAMES, _LOCAL
    if _FRAMES is None:
        import threading

        import zstandard

        _LOCAL = threading.local()
        _FRAMES = zstandard
    return _FRAMES


def decompressor() -> Any:
    """This thread's ``zstandard.ZstdDecompressor``: making one costs about as much as
    decoding a typical event, so it is made once and reused (one per thread: a context
    must not be used by two at once)."""
    z = _FRAMES or frames_module()
    dctx = getattr(_LOCAL, "dctx", None)
    if dctx is None:
        dctx = _LOCAL.dctx = z.ZstdDecompressor()
    return dctx


def decompress(frame: bytes, limit: int) -> bytes:
    """A zstd frame's bytes, at most ``limit`` + 1 of them (a bomb is cut, then refused).

    Only the first frame is decoded. Raises ValueError when the frame is corrupt, cut short
    or fails its checksum. A frame whose header says a size within ``limit`` (or none) is
    decoded in one call into a buffer the decoder cannot write past, if that buffer is within
    ``_ONE_CALL_MAX``; anything else goes through :func:`_bounded`, which says why.
    """
    z = _FRAMES or frames_module()
    if frame[:4] == ZSTD_MAGIC:
        try:
            size = z.frame_content_size(frame)
        except z.ZstdError:
            size = 0  # a header cut short or malformed: _bounded tells which
        # (-1: the header does not say. The one call allocates its buffer first, and
        # ingest.max_line_bytes has no upper bound: past _ONE_CALL_MAX, the careful way.)
        if 0 < size <= min(limit, _ONE_CALL_MAX) or (size == -1 and limit < _ONE_CALL_MAX):
            try:
                out: bytes = decompressor().decompress(frame, max_output_size=limit + 1)
                return out
            except z.ZstdError:
                pass  # malformed: the bounded decoder finds out how
    return _bounded(frame, limit)


def _bounded(frame: bytes, limit: int) -> bytes:
    """:func:`decompress` the careful way: the standard library's streaming decoder with an
    output buffer of ``limit`` + 1 bytes, whatever the header declares, so memory stays
    within about the limit. Only the rare frame comes here, so a context per frame costs
    nothing that shows (docs/benchmarks.md, "The scanner's constants").
    """
    zstd = zstd_module()
    d = zstd.ZstdDecompressor()
    try:
        out = d.decompress(frame, max_length=limit + 1)
    except (zstd.ZstdError, EOFError) as exc:  # (the binding's own prefix left off)
        raise ValueError(f"bad zstd frame: {str(exc).rsplit(': ', 1)[-1]}") from None
    if len(out) <= limit and not d.eof:
        raise ValueError("zstd frame cut short")
    return bytes(out)


def decode_event(
    json_type: str, text: Any, frame: Any, nbytes: Any, max_bytes: int
) -> tuple[bytes | None, str | None]:
    """One stored event's JSON bytes, or None and why the row is malformed.

    A compressed row's decoded length must equal ``event_utf8_bytes`` (as OpenClaw's reader
    requires); an event longer than ``max_bytes``, plain or compressed, is refused.
    """
    if json_type in ("text", "blob") and isinstance(text, bytes):
        # Every event is a JSON object. (OpenClaw writes text; a blob of JSON text is taken
        # too. A number written into the TEXT column is stored as text: it is not an event.)
        if len(text) > max_bytes:  # as a compressed event over it (and a JSONL line) is
            return None, f"event over {max_bytes} bytes"
        if text.lstrip()[:1] == b"{":
            return text, None
        return None, f"event_json ({json_type}) is not a JSON object"
    if json_type != "null":
        return None, f"event_json of type {json_type}"
    if frame is None:
        return None, "no event_json and no event_zstd"
    if not isinstance(frame, bytes):
        return None, f"event_zstd of type {type(frame).__name__}"
    if nbytes is not None and (not isinstance(nbytes, int) or nbytes < 0):
        return None, f"event_utf8_bytes is {nbytes!r}"
    limit = max_bytes if nbytes is None else min(nbytes, max_bytes)
    try:
        data = decompress(frame, limit)
    except ValueError as exc:
        return None, str(exc)
    if len(data) > max_bytes:  # (cut one byte past the limit: that it matches a claimed
        return None, f"event over {max_bytes} bytes"  # limit + 1 makes it no event)
    if nbytes is not None and len(data) != nbytes:
        return None, f"decoded {len(data)} bytes, event_utf8_bytes says {nbytes}"
    return data, None
