"""What one scan did, and the failure a source reader raises for a reason it knows."""

from __future__ import annotations

# The Tool Search routes a memory call is counted by besides a direct call (events.TOOL_CALL,
# events.CODE); docs/openclaw-formats.md §5.
ROUTES = ("tool_call", "code")


class ScanStats:
    """What one scan did; printed by ``memoryd scan`` and logged by the daemon. (A plain
    class, not a dataclass: importing and building dataclasses is a measurable part of a
    one-shot command's start-up.)
    """

    # What the scan recorded: counted when the transaction that records it commits, never for
    # one that was undone. ``calls_<route>``: new calls through Tool Search (calls_by_route);
    # ``unrecognised``: calls or custom messages naming a memory tool in a shape not known.
    RECORDED = ("new_hits", "new_calls", "malformed", "oversized", "non_memory_paths", "renamed",
                "resets", *(f"calls_{route}" for route in ROUTES), "unrecognised")  # fmt: skip
    # In the order ``memoryd scan --json`` prints them. ``failed_sources``: [{source, reason}];
    # ``helper_files``: transcripts whose lines a forked helper found and parsed.
    FIELDS = ("files_seen", "files_read", "bytes_read", "lines_parsed", *RECORDED, "errors",
              "failed_sources", "helper_files", "elapsed")  # fmt: skip
    # retry_in: seconds after which a source read this time must be looked at again even without
    # a file event (a store written just before it was read; 0: none). Not printed.
    __slots__ = (*FIELDS, "retry_in", "unrecognised_example")
    # The counters' types, for the type checker (the slots above are made from the names).
    files_seen: int
    files_read: int
    bytes_read: int
    lines_parsed: int
    new_hits: int
    new_calls: int
    malformed: int
    oversized: int
    non_memory_paths: int
    renamed: int
    resets: int
    unrecognised: int
    errors: int
    helper_files: int

    def __init__(self) -> None:
        for name in self.FIELDS:
            setattr(self, name, 0)
        self.elapsed = 0.0
        self.retry_in = 0.0
        self.failed_sources: list[dict[str, str]] = []
        self.unrecognised_example: str | None = None  # the first one this scan met

    def calls_by_route(self) -> dict[str, int]:
        """The new calls by how the agent reached the memory tool."""
        routed = {route: getattr(self, f"calls_{route}") for route in ROUTES}
        return {"direct": self.new_calls - sum(routed.values()), **routed}

    def as_dict(self) -> dict[str, object]:
        d: dict[str, object] = {}
        for name in self.FIELDS:
            if name.startswith("calls_"):
                continue
            d[name] = getattr(self, name)
            if name == "new_calls":
                d["calls_by_route"] = self.calls_by_route()
            elif name == "unrecognised" and self.unrecognised_example is not None:
                d["unrecognised_example"] = self.unrecognised_example
        d["elapsed"] = round(self.elapsed, 4)
        d["failed_sources"] = [dict(f) for f in self.failed_sources]
        return d


class SourceFailed(Exception):
    """A source that cannot be read for a reason we know (no traceback is logged for it)."""
