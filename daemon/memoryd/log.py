"""Logging set-up: structlog rendering JSON lines (orjson) or a console format.

Nothing is configured until a command or the daemon calls :func:`configure`, so one-shot
commands that never log pay nothing for it. stdlib logging (APScheduler, watchdog) goes
through the same processors and single handler, so every line on stderr has one shape. An
exception becomes a structured ``exception`` list without local variables (they may hold
note text). Per-line ingest events are debug only: journald rate-limits chatty services.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

# Third-party loggers and the least severe level they may log at when memoryd logs at info
# (APScheduler says "Running job ..." at every fire: noise unless something goes wrong).
_QUIET_LIBRARIES = {"apscheduler": logging.WARNING, "watchdog": logging.WARNING}


# watchdog's inotify emitter logs this at error level when an event arrives as its watch
# stops: nothing is lost (the next start or rescan reads the file), so it is debug.
_INOTIFY_LOGGER = "watchdog.observers.inotify"
_STOP_RACE_TEXT = "called when the thread is inactive"


class _DemoteStopRace(logging.Filter):
    """Turns watchdog's stop-race message into a debug record (dropped unless debug is on)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.DEBUG and _STOP_RACE_TEXT in str(record.msg):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(_INOTIFY_LOGGER).isEnabledFor(logging.DEBUG)
        return True


_DEMOTE_STOP_RACE = _DemoteStopRace()


# Set by :func:`configure`: until then (a one-shot command) nothing routes log records.
CONFIGURED = False


def get_logger(name: str) -> Any:
    import structlog

    return structlog.get_logger(name)


def resolve_format(fmt: str, stream: Any) -> str:
    """``auto`` means console on a terminal and JSON lines otherwise (journald, launchd, pipes)."""
    if fmt != "auto":
        return fmt
    isatty = getattr(stream, "isatty", None)
    try:
        return "console" if isatty and isatty() else "json"
    except (ValueError, OSError):  # a closed stream
        return "json"


def _orjson_dumps(obj: Any, **_kw: Any) -> str:
    import orjson

    return orjson.dumps(obj, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


def configure(level: str = "info", fmt: str = "auto", stream: Any = None) -> None:
    """Send every log record (structlog and stdlib) to ``stream`` (stderr) in one format.

    Safe to call again (SIGHUP): the handler is replaced and the level re-applied.
    """
    import structlog
    from structlog.tracebacks import ExceptionDictTransformer

    stream = stream or sys.stderr
    fmt = resolve_format(fmt, stream)
    numeric = getattr(logging, level.upper(), logging.INFO)
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if fmt == "json":
        final: list[Any] = [
            structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False)),
            structlog.processors.JSONRenderer(serializer=_orjson_dumps),
        ]
    else:
        final = [structlog.dev.ConsoleRenderer(colors=False)]
    structlog.reset_defaults()
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,  # a reload may change the level
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder()],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *final],
        )
    )
    global CONFIGURED
    CONFIGURED = True
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    for name, floor in _QUIET_LIBRARIES.items():
        logging.getLogger(name).setLevel(numeric if numeric <= logging.DEBUG else floor)
    race = logging.getLogger(_INOTIFY_LOGGER)
    if _DEMOTE_STOP_RACE not in race.filters:
        race.addFilter(_DEMOTE_STOP_RACE)


def format_traceback(exc: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


# Set by the command line for ``--debug``: a one-shot command then prints the debug lines
# :func:`emit` is given (a failed source's traceback), which it otherwise leaves out.
DEBUG_LINES = False


def emit(
    event: str, logger: str = "memoryd.ingest", *, debug: bool = False, **fields: object
) -> None:
    """One log line: through logging when it is configured (the daemon), else JSON on stderr.

    (A one-shot ``memoryd scan`` does not set up logging: structlog costs start-up time.)
    ``debug``: a line for whoever looks into a fault, on stderr only with ``--debug``.
    """
    fields = {k: v for k, v in fields.items() if v is not None}
    if CONFIGURED:
        if debug:
            level = logging.DEBUG
        else:
            level = logging.ERROR if event == "ingest.source_failed" else logging.WARNING
        logging.getLogger(logger).log(level, event, extra=fields)
        return
    if debug and not DEBUG_LINES:
        return
    level_name = "error" if event == "ingest.source_failed" else "warning"
    level_name = "debug" if debug else level_name
    import time

    import orjson

    from .clock import iso

    doc = {"timestamp": iso(time.time()), "level": level_name, "event": event, **fields}
    sys.stderr.write(orjson.dumps(doc, default=str).decode() + "\n")
