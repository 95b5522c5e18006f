"""Logging set-up: structlog rendering JSON lines (orjson) or a console format.

Library code logs through :func:`get_logger`; nothing is configured until a
command or the daemon calls :func:`configure`, so one-shot commands that never
log pay nothing for it. stdlib logging (APScheduler, watchdog) is routed
through the same processors so every line on stderr has one shape.
"""

from __future__ import annotations

import logging
import sys
from typing import Any


def get_logger(name: str) -> Any:
    import structlog

    return structlog.get_logger(name)


def configure(level: str = "info", fmt: str = "auto", stream: Any = None) -> None:
    """Send every log record (structlog and stdlib) to ``stream`` (stderr) in one format."""
    import orjson
    import structlog

    stream = stream or sys.stderr
    if fmt == "auto":
        fmt = "console" if getattr(stream, "isatty", lambda: False)() else "json"
    numeric = getattr(logging, level.upper(), logging.INFO)
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.stdlib.ExtraAdder(),
    ]
    if fmt == "json":
        renderer: Any = structlog.processors.JSONRenderer(
            serializer=lambda obj, **kw: orjson.dumps(obj, default=str).decode()
        )
        final = [structlog.processors.dict_tracebacks, renderer]
    else:
        final = [structlog.dev.ConsoleRenderer(colors=False)]
    structlog.configure(
        processors=[
            *shared[:-1],
            structlog.stdlib.filter_by_level,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *final],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    for noisy in ("apscheduler", "watchdog"):
        logging.getLogger(noisy).setLevel(max(numeric, logging.INFO))
