"""Logs: JSON lines for journald / launchd, a readable format on a terminal, one pipeline."""

from __future__ import annotations

import io
import json
import logging
import os
import pty
from collections.abc import Iterator
from datetime import datetime

import pytest

from memoryd.log import configure, get_logger, resolve_format


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    import structlog

    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)


def lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_carry_utc_time_level_event_and_fields() -> None:
    out = io.StringIO()
    configure("info", "json", out)
    get_logger("memoryd.test").info("ingest.rescan", file="/s/a.jsonl", offset=120, hits=3)
    (doc,) = lines(out)
    assert doc["event"] == "ingest.rescan"
    assert doc["level"] == "info"
    assert doc["logger"] == "memoryd.test"
    assert (doc["file"], doc["offset"], doc["hits"]) == ("/s/a.jsonl", 120, 3)
    ts = datetime.fromisoformat(doc["timestamp"].replace("Z", "+00:00"))
    assert ts.utcoffset().total_seconds() == 0


def test_stdlib_loggers_of_libraries_go_through_the_same_pipeline() -> None:
    out = io.StringIO()
    configure("info", "json", out)
    logging.getLogger("apscheduler.scheduler").warning("Run time of job %s was missed", "x")
    logging.getLogger("apscheduler.scheduler").info("Running job x")  # chatter: filtered
    logging.getLogger("watchdog.observers").error("inotify watch limit reached")
    docs = lines(out)
    assert [d["event"] for d in docs] == [
        "Run time of job x was missed",
        "inotify watch limit reached",
    ]
    assert docs[0]["level"] == "warning" and docs[0]["logger"] == "apscheduler.scheduler"
    assert all("timestamp" in d for d in docs)


def test_exceptions_are_structured_without_local_variables() -> None:
    out = io.StringIO()
    configure("info", "json", out)
    secret_note_text = "private memory content"  # a local that must not reach the journal
    try:
        raise ValueError(f"bad line of {len(secret_note_text)} chars")
    except ValueError:
        get_logger("memoryd.test").error("job.failed", job="expire", exc_info=True)
    (doc,) = lines(out)
    exc = doc["exception"][0]
    assert exc["exc_type"] == "ValueError"
    assert exc["frames"], "the traceback is there"
    assert "private memory content" not in out.getvalue()


def test_debug_events_appear_only_at_debug_level_and_a_reconfigure_changes_it() -> None:
    out = io.StringIO()
    configure("info", "json", out)
    log = get_logger("memoryd.test")
    log.debug("ingest.batch", hits=1)
    assert out.getvalue() == ""
    configure("debug", "json", out)
    log.debug("ingest.batch", hits=1)
    assert [d["event"] for d in lines(out)] == ["ingest.batch"]


def test_a_terminal_gets_the_console_format_and_anything_else_json() -> None:
    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, "w", closefd=False) as tty:
            assert resolve_format("auto", tty) == "console"
            configure("info", "auto", tty)
            get_logger("memoryd.test").info("daemon.ready", files=3)
            tty.flush()
            text = os.read(leader, 4096).decode()
    finally:
        os.close(leader)
        os.close(follower)
    assert "daemon.ready" in text and "files=3" in text
    assert not text.lstrip().startswith("{")
    assert resolve_format("auto", io.StringIO()) == "json"
    assert resolve_format("console", io.StringIO()) == "console"


def test_an_event_racing_the_stop_of_a_watch_is_not_an_error(tmp_path) -> None:
    """watchdog logs an error when an inotify event arrives as a watch stops.

    It happens at a SIGTERM or a reload while OpenClaw writes (seen in the soak test,
    ``tests/service/test_soak.py``): nothing is lost (the next start or rescan reads the file), so
    it must not put an ``error`` line in the journal at every stop. It stays in debug logs.
    """
    from queue import Queue

    from watchdog.observers.api import ObservedWatch
    from watchdog.observers.inotify import InotifyEmitter

    out = io.StringIO()
    configure("info", "json", out)
    emitter = InotifyEmitter(Queue(), ObservedWatch(str(tmp_path), recursive=True))
    emitter.on_thread_start()
    emitter.on_thread_stop()  # the watch stops ...
    emitter.queue_events(0.01)  # ... as the emitter's loop takes one more turn
    assert lines(out) == []
    configure("debug", "json", out)
    emitter.queue_events(0.01)
    (doc,) = [d for d in lines(out) if d["logger"] == "watchdog.observers.inotify"]
    assert doc["level"] == "debug" and "inactive" in doc["event"]
