"""The ``memoryd`` command run in the pytest process, for tests where the process is not the point.

A child ``python -m memoryd`` costs 50-90 ms of CPU before it does anything (the interpreter,
then the imports), about as much as a small command's own work: a test module that runs the
command a few hundred times spends most of its time starting Pythons. :func:`memoryd` runs the
same :func:`memoryd.cli.main` here, with the arguments, environment, working folder and
standard streams a child would have had, and answers as :func:`subprocess.run` with
``capture_output=True, text=True`` does: a :class:`subprocess.CompletedProcess`.

What stays a real process, and must: the daemon (``memoryd run``), a run with a fault point
set (``MEMORYD_FAULT`` kills or stops the process), and a command run from a thread other
than the main one (racing the test's own work, it would share this process's environment,
working folder and standard streams): :func:`memoryd` starts a child for these. The tests of
the process itself (exit at once, imports, signals) start their own. Each run here opens its
own state database and closes it, as a child would; the only state kept between runs is
what the database and files hold, and the code's own caches, keyed by what they depend on.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path


class _Kept(io.BytesIO):
    """A byte sink that keeps its bytes when the command closes the stream (``hits | head``)."""

    def close(self) -> None:  # the text is read after the command returns
        pass


def _text_stream(data: bytes = b"") -> tuple[io.TextIOWrapper, _Kept]:
    raw = _Kept(data)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True), raw


@contextlib.contextmanager
def _fresh_logging() -> Iterator[None]:
    """Logging as a new process has it: no root handler, so a warning reaches stderr through
    logging's last resort (pytest's capture handlers are set aside meanwhile), and structlog
    not configured."""
    import structlog

    import memoryd.log

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    structlog_config, configured = structlog.get_config(), memoryd.log.CONFIGURED
    debug_lines = memoryd.log.DEBUG_LINES  # (--debug sets it for the process's life)
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    structlog.reset_defaults()  # a test may have configured it (test_logging.py)
    memoryd.log.CONFIGURED = False
    memoryd.log.DEBUG_LINES = False
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        structlog.configure(**structlog_config)
        memoryd.log.CONFIGURED = configured
        memoryd.log.DEBUG_LINES = debug_lines


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """``os.environ`` replaced by ``env`` (as a child's would be), restored afterwards."""
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def memoryd(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    input: str | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``memoryd ARGS`` in this process: its exit code, stdout and stderr as text.

    An exception the command lets out is what Python would print for it (a traceback on
    stderr, exit 1), so a test that looks for "Traceback" still sees one.
    """
    from memoryd.cli import main

    argv = [str(a) for a in args]
    if (
        "run" in argv
        or (env if env is not None else os.environ).get("MEMORYD_FAULT")
        or threading.current_thread() is not threading.main_thread()
    ):  # the daemon, a fault that kills, or a command beside others: a child of its own
        return subprocess.run(
            [sys.executable, "-m", "memoryd", *argv],
            env=env, cwd=cwd, input=input, capture_output=True, text=True, check=check,
            timeout=300,
        )  # fmt: skip
    out, out_raw = _text_stream()
    err, err_raw = _text_stream()
    stdin, _ = _text_stream((input or "").encode())
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_cwd = os.getcwd()
    code: int
    with _environment(env), _fresh_logging():
        try:
            if cwd is not None:
                os.chdir(cwd)
            sys.stdin, sys.stdout, sys.stderr = stdin, out, err
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse: --help, a usage error
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if isinstance(exc.code, str):
                    print(exc.code, file=err)
            except Exception:  # what an uncaught exception does to a child
                traceback.print_exc(file=err)
                code = 1
        finally:
            with contextlib.suppress(ValueError):
                out.flush()
                err.flush()
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            os.chdir(saved_cwd)
    done = subprocess.CompletedProcess(
        [sys.executable, "-m", "memoryd", *argv],
        code,
        out_raw.getvalue().decode("utf-8"),
        err_raw.getvalue().decode("utf-8"),
    )
    if check:
        done.check_returncode()
    return done
