"""``memoryd`` command line: parse arguments, load the configuration, dispatch.

Each command group lives in ``memoryd.commands.<group>`` (:mod:`memoryd.commands.registry`);
this module imports nothing heavy, so one-shot commands start fast. Exit codes: 0 ok,
1 runtime failure, 2 bad usage or an invalid configuration (one line naming the key or file).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import os
import sqlite3
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import __version__
from .commands import registry
from .commands.context import CommandLine, Context, UsageError
from .config import ConfigError, OpenClawJsonError, config_path_from, load_config
from .errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .store_errors import StoreError, describe_database_error


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose formatters do not import :mod:`shutil`.

    argparse makes a help formatter for every argument it registers, and the default one asks
    ``shutil.get_terminal_size`` for the width: importing shutil (bz2, lzma, zlib with it) is
    a few per cent of a read command's run. The width is found the same way here; sub-commands'
    parsers are of the same class, so ``--help`` reads the same everywhere.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _CommandChoice)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # (every HelpFormatter takes width; typeshed's formatter_class protocol names prog only)
        return self.formatter_class(prog=self.prog, width=_terminal_columns() - 2)  # type: ignore[call-arg]

    def error(self, message: str) -> NoReturn:
        """One line, as every other refusal (argparse prints the usage, then the message):
        the message, then the command's own usage on the same line, exit 2."""
        usage = " ".join(self.format_usage().split())
        self.exit(EXIT_USAGE, f"memoryd: {message} ({usage}; --help says more)\n")


class _CommandChoice(argparse._SubParsersAction):
    """A command's parser that refuses what it does not know with its own usage line.

    argparse hands arguments a command does not know back to the top-level parser, which
    then prints the usage of ``memoryd`` itself: ``memoryd hits --dayz 3`` would show the
    list of commands instead of the options of ``hits``.
    """

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        known = set(vars(namespace))
        super().__call__(parser, namespace, values, option_string)
        extras = getattr(namespace, argparse._UNRECOGNIZED_ARGS_ATTR, None)
        if extras and argparse._UNRECOGNIZED_ARGS_ATTR not in known:
            command = self._name_parser_map[values[0]]
            command.error("unrecognized arguments: " + " ".join(extras))


def _terminal_columns() -> int:
    """The terminal's width in columns, as :func:`shutil.get_terminal_size` reports it."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        # (no stdout at all: sys.__stdout__ is None, the AttributeError below)
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def build_parser(groups: Sequence[str] = registry.COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="memoryd",
        description="Measure which memory files an OpenClaw agent uses; keep the rest tidy.",
    )
    parser.add_argument("--version", action="version", version=f"memoryd {__version__}")
    _add_global_options(parser, default=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    registry.register(sub, groups)
    # `memoryd hits --config F` works as well as `memoryd --config F hits`.
    for command in _subparsers(parser):
        _add_global_options(command, default=argparse.SUPPRESS)
    return parser


def _add_global_options(parser: argparse.ArgumentParser, default: Any) -> None:
    """--config and --debug, on the top-level parser and (not overriding it) every command.

    A command's copy defaults to SUPPRESS, so it sets the value only when given
    after the command; ``memoryd --config A hits`` keeps A.
    """
    parser.add_argument(
        "--config",
        metavar="FILE",
        default=default,
        help="TOML configuration (default: $MEMORYD_CONFIG, else none)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=False if default is None else default,
        help="on an error, print the Python traceback as well as the one-line message",
    )


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every command's parser below ``parser`` (``export hits-jsonl``, ``service install``...)."""
    out: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):  # aliases share a parser
                out.append(child)
                out.extend(_subparsers(child))
    return out


# Commands that run for days: they keep Python's cyclic garbage collector on.
LONG_RUNNING = frozenset({"run"})

# Whether the command :func:`main` ran last said it may end the process at once (its
# ``Context.exit_at_once``), and finished. Read by :func:`command` only.
_may_exit_at_once = False


def command(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``memoryd`` command (console script and ``python -m memoryd``): :func:`main`, then exit.

    A read command that says so (``status``, ``hits --no-scan``) ends the process as soon as
    its output is out (:func:`memoryd.commands.session_inject.exit_now`): Python's teardown
    does nothing a finished read needs.
    """
    code = main(argv)
    if _may_exit_at_once:
        from .commands.session_inject import exit_now

        exit_now(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    global _may_exit_at_once
    _may_exit_at_once = False
    argv = sys.argv[1:] if argv is None else argv
    if not argv:  # `memoryd` alone: what it does and its commands, not an error
        build_parser().print_help()
        return EXIT_OK
    # A one-shot command allocates a lot (imports, parsing) and frees it all at exit: the
    # cyclic collector's passes are pure cost there (about 4 % of a large scan, measured).
    collecting = gc.isenabled()
    gc.disable()
    try:
        parser = build_parser(registry.groups_for(argv))
        args = parser.parse_args(argv)
        if args.command in LONG_RUNNING and collecting:
            gc.enable()
        return _run(args, argv)
    finally:
        if collecting:
            gc.enable()


def _run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Load the configuration, check the install, run the command; the one place that turns
    an error into a one-line message and an exit code.

    2: the user must fix an input (the configuration, an argument, a path given on the
    command line, an environment variable); 1: a fault at run time (the state database,
    the disk, a file memoryd manages). ``--debug`` adds the traceback. Any other
    exception is a bug and keeps its traceback.
    """
    ctx: Context | None = None
    if getattr(args, "debug", False):
        from . import log

        log.DEBUG_LINES = True  # a failed source's traceback on stderr too
    from .locks import tell_waits

    tell_waits(None if getattr(args, "command", None) in LONG_RUNNING else _say_waiting())
    try:
        _check_environment()
        cfg = load_config(config_path_from(args.config, os.environ))
        ctx = Context(
            cfg=cfg, config_file=cfg.source or None, command_line=CommandLine(build_parser, main)
        )
        ctx.show_progress = not getattr(args, "json", False)
        if getattr(args, "needs_openclaw", True):
            ctx.require_openclaw()
        caller = os.environ.get("MEMORYD_PLUGIN_CALLER")
        if caller:  # run by memoryd's OpenClaw plugin: noted for `status` (plugin_seen)
            from . import clock
            from .plugin_seen import note_call

            note_call(ctx.paths.memoryd_dir, caller, str(getattr(args, "command", "")), clock.now())
        return int(args.func(args, ctx) or 0)
    except (ConfigError, UsageError) as exc:
        message = str(exc)
        if isinstance(exc, OpenClawJsonError) and ctx is not None:
            message += _daemon_view(ctx)
        return _fail(args, exc, EXIT_USAGE, message, ctx)
    except StoreError as exc:
        return _fail(args, exc, EXIT_FAILURE, str(exc), ctx)
    except sqlite3.Error as exc:  # the state database broke underneath: name the file and why
        where = ctx.paths.db if ctx is not None else None
        message = describe_database_error(where, exc) if where is not None else str(exc)
        return _fail(args, exc, EXIT_FAILURE, message, ctx)
    except BrokenPipeError:  # `memoryd hits | head`
        sys.stderr.close()
        return EXIT_OK
    except OSError as exc:
        state_line = _state_read_only(ctx, exc)
        if state_line is not None:
            return _fail(args, exc, EXIT_FAILURE, state_line, ctx)
        code = EXIT_USAGE if _names_user_path(exc, argv) else EXIT_FAILURE
        return _fail(args, exc, code, _describe_os_error(exc), ctx)
    except ValueError as exc:
        return _fail(args, exc, EXIT_FAILURE, f"{exc} (--debug shows where)", ctx)
    except KeyboardInterrupt:
        return 130
    finally:
        if ctx is not None:
            ctx.close()
            global _may_exit_at_once
            _may_exit_at_once = ctx.exit_at_once


def _check_environment() -> None:
    """$MEMORYD_NOW and $MEMORYD_CLOCK_OFFSET are input too: refuse a bad one up front."""
    from . import clock

    try:
        clock.now()
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _daemon_view(ctx: Context) -> str:
    """What a running daemon does about an ``openclaw.json`` that stopped parsing (it keeps
    the view it resolved before): appended to the one line every command then stops with,
    so that ``status`` says it too. Empty when no daemon runs for this state."""
    from .config import discover_state_dir, expand_home
    from .health import read_health
    from .locks import lock_holder

    try:
        if ctx.cfg.state.dir:
            memoryd_dir = expand_home(ctx.cfg.state.dir, ctx.environ)
        elif ctx.cfg.openclaw.state_dir:
            memoryd_dir = expand_home(ctx.cfg.openclaw.state_dir, ctx.environ) / "memoryd"
        else:
            memoryd_dir = discover_state_dir(ctx.environ) / "memoryd"
    except ConfigError:
        return ""
    pid = lock_holder(memoryd_dir)
    if pid is None:
        return ""
    note = read_health(memoryd_dir)
    seen = note.get("openclaw_json") if note.get("pid") == pid else None
    since = ""
    if isinstance(seen, dict) and isinstance(seen.get("since"), int | float):
        from .clock import iso

        since = f" (unreadable to it since {iso(float(seen['since']))})"
    return f"; the running daemon (pid {pid or '?'}) keeps its last good view{since}"


def _say_waiting() -> Callable[[Path], None]:
    """What a command says, once a lock, before it waits for another process holding it."""
    said: set[Path] = set()

    def say(path: Path) -> None:
        if path not in said:
            said.add(path)
            print(f"memoryd: another memoryd process holds {path}; waiting for it to finish",
                  file=sys.stderr, flush=True)  # fmt: skip

    return say


def _fail(
    args: argparse.Namespace, exc: BaseException, code: int, message: str, ctx: Context | None
) -> int:
    """Print the error's one line (the traceback first with ``--debug``); returns ``code``.
    The log format is the configured one, ``auto`` when the configuration did not load."""
    if getattr(args, "debug", False):
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    log_format = ctx.cfg.log.format if ctx is not None else "auto"
    line = _failure_line(args, code, message, log_format)
    from .commands.formats import for_terminal, is_terminal

    if is_terminal(sys.stderr):  # (a name in the message may hold an escape sequence)
        line = for_terminal(line)
    print(line, file=sys.stderr)
    return code


def _failure_line(args: argparse.Namespace, code: int, message: str, log_format: str) -> str:
    """The one line an error is, or for the daemon logging JSON, one JSON object.

    A daemon that cannot start (a config error, no OpenClaw, a second daemon) says why in
    the journal the operator reads with ``journalctl -o cat | jq``: a plain line there
    would stop jq at the very line that explains the failure.
    """
    if getattr(args, "command", None) in LONG_RUNNING:
        from .log import resolve_format

        if resolve_format(log_format, sys.stderr) == "json":
            import json
            from datetime import UTC, datetime

            at = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
            record = {"exit": code, "message": message, "event": "daemon.failed"}
            record.update(level="error", logger="memoryd", timestamp=at)
            return json.dumps(record, ensure_ascii=False)
    return f"memoryd: {message}"


def _state_read_only(ctx: Context | None, exc: OSError) -> str | None:
    """The state database's read-only line when ``exc`` is a lock beside it on a read-only
    mount (:func:`memoryd.store_errors.describe_state_os_error`), else None."""
    if ctx is None:
        return None
    try:
        db = ctx.paths.db
    except (ConfigError, OSError):
        return None
    from .store_errors import describe_state_os_error

    return describe_state_os_error(db, exc)


def _describe_os_error(exc: OSError) -> str:
    """``<file>: <cause>`` (both files for a rename), or the cause alone."""
    cause = exc.strerror or str(exc)
    names = [os.fsdecode(n) for n in (exc.filename, exc.filename2) if isinstance(n, str | bytes)]
    return ": ".join([" → ".join(names), cause]) if names else cause


def _names_user_path(exc: OSError, argv: Sequence[str]) -> bool:
    """Whether the failing file is one the user named on the command line (their input):
    the path given; or a name too long for the file system that ends with one given (``explain
    memory/<300 characters>.md``, looked up in the workspace). Only a name too long: another
    fault of a file whose name ends alike (its archived copy) is memoryd's to report."""
    given, named = set(), []
    for arg in argv:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        with contextlib.suppress(OSError):  # (a folder deleted since has no absolute path)
            given.add(os.path.abspath(value))
        if value.strip("/") and not value.startswith("-"):
            named.append("/" + value.strip("/"))
    too_long = exc.errno == errno.ENAMETOOLONG
    for name in (exc.filename, exc.filename2):
        if not isinstance(name, str | bytes):
            continue
        try:
            path = os.path.abspath(os.fsdecode(name))
        except OSError:
            continue
        if path in given or (too_long and any(path.endswith(tail) for tail in named)):
            return True
    return False


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
