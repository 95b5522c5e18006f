"""``memoryd inject --session --json``: the OpenClaw plugin's call, on a short path.

A session's first turn waits for this call, and the full command line costs what it does not
need (argparse, ``sqlite3``, the other commands). So :func:`memoryd.command` hands exactly
this command's argument shapes here first, for the same document as ``memoryd inject``
(:func:`session_document`, shared with :mod:`.tiers`). Anything this path does not handle
(another option, an invalid configuration, any error at all) is handed back before a byte
is written, and the full command line answers as it always does. Its cost:
docs/openclaw-plugin.md.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn


class _Session:
    """What this path needs of ``memoryd.commands.context.Context``: the validated config,
    its file, the resolved paths (no state database: the answer reads none)."""

    def __init__(self, cfg: Any, config_file: str | None) -> None:
        from ..config import resolve_paths

        self.cfg = cfg
        self.config_file = config_file
        self.paths = resolve_paths(cfg, os.environ)


def parse_session_args(argv: Sequence[str]) -> dict[str, Any] | None:
    """The options of ``[--config F] inject --session --json [--agent ID] [--max-chars N]``
    (``--opt=value`` too, global options before or after ``inject``), or None for any other
    command line: that one goes to argparse, which knows every other case and its messages."""
    opts: dict[str, Any] = {"config": None, "agent": None, "max_chars": None}
    flags: set[str] = set()
    command_seen = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if arg == "inject" and not command_seen:
            command_seen = True
        elif name == "--config" or (command_seen and name in ("--agent", "--max-chars")):
            if not eq:
                if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                    return None
                i += 1
                value = argv[i]
            key = name[2:].replace("-", "_")
            if key == "max_chars":
                if not value.isascii() or not value.isdigit():
                    return None  # argparse says what is wrong (a negative count included)
                opts[key] = int(value)
            else:
                opts[key] = value
        elif arg in ("--session", "--json") and command_seen and arg not in flags:
            flags.add(arg)
        else:
            return None
        i += 1
    if not command_seen or flags != {"--session", "--json"}:
        return None
    return opts


def session_rules(
    ctx: Any, agent_id: str | None
) -> tuple[int, Callable[[str], bool], dict[str, Any]]:
    """The budget, the skip rule and their figures for ``inject --session``."""
    from ..bootstrap import (
        BOOTSTRAP_FILES,
        already_in,
        bootstrap_budget,
        bootstrap_limits,
        read_bootstrap,
        session_budget,
    )
    from ..config import default_agent_id, resolve_workspace
    from ..tierstore.inject import watch_list

    paths = ctx.paths
    oc = paths.openclaw
    wanted = agent_id or default_agent_id(oc)
    agent = next((a for a in paths.agents if a.id == wanted), None)
    if agent is not None:
        workspace = agent.workspace
    else:
        try:
            workspace = resolve_workspace(wanted, oc, paths.state_dir, os.environ)
        except (OSError, ValueError):
            workspace = paths.workspace
    # Stamped before anything is read: a change made while this runs shows as a change.
    depends: list[Path | str] = [workspace / name for name in BOOTSTRAP_FILES]
    depends += [p for p in (ctx.config_file, paths.openclaw_file) if p]
    watch = watch_list(paths.tiers_root, depends)
    files = read_bootstrap(workspace)
    file_max, total_max = bootstrap_limits(oc, wanted)
    boot = bootstrap_budget(files, file_max, total_max)
    own = ctx.cfg.tiers.session_inject_max_chars
    budget = session_budget(own, boot)
    joined = "\n".join(files.values())
    figures = {
        "agent": wanted,
        "workspace": str(workspace),
        "own_max": own,
        "bootstrap_total_max": total_max,
        "bootstrap_used": boot.used,
        "bootstrap_files": sorted(files),
        "watch": watch.stamps,
    }
    partial = watch.partial()
    if partial is not None:  # (many notes in hot/: the newest stamped, valid for a while)
        figures["watch_partial"] = partial
    return budget, (lambda text: already_in(text, joined)), figures


def injection_document(inj: Any, budget: int, session: dict[str, Any] | None) -> dict[str, Any]:
    """``memoryd inject --json``'s document for an :class:`~memoryd.tierstore.inject.Injection`
    (of the notes left out, the first names and their count: thousands of names in hot/ would
    make every session start's answer hundreds of KB)."""
    from ..tierstore.inject import OMITTED_NAMES_MAX

    doc: dict[str, Any] = {
        "max_chars": budget,
        "chars": len(inj.text),
        "included": inj.included,
        "omitted": inj.omitted[:OMITTED_NAMES_MAX],
        "omitted_count": len(inj.omitted),
        "truncated": inj.truncated,
        "already_in_bootstrap": inj.already_there,
        "text": inj.text,
    }
    if inj.not_notes:  # (a FIFO, a device or a binary file where a note was listed)
        doc["not_notes"] = inj.not_notes
    if session is not None:
        doc["session"] = session
    return doc


def session_document(ctx: Any, agent_id: str | None, max_chars: int | None) -> dict[str, Any]:
    """What ``memoryd inject --session --json`` prints, for ``ctx`` (config and paths)."""
    from ..tierstore.inject import inject

    budget, skip, session = session_rules(ctx, agent_id)
    if max_chars is not None:
        budget = min(budget, max_chars)
    return injection_document(inject(ctx.paths.tiers_root, budget, skip), budget, session)


def run(argv: Sequence[str]) -> int | None:
    """Answer the plugin's command, or None (nothing written) when the full command line
    must: another command line, a refused setting or configuration, an error of any kind."""
    opts = parse_session_args(argv)
    if opts is None:
        return None
    try:
        from ..config import config_path_from, load_config

        if any(k in os.environ for k in ("MEMORYD_NOW", "MEMORYD_CLOCK_OFFSET")):
            from .. import clock

            clock.now()  # refused → the full command line says why (exit 2)
        cfg = load_config(config_path_from(opts["config"], os.environ))
        ctx = _Session(cfg, cfg.source or None)
        if not ctx.paths.state_dir.is_dir():
            return None  # no OpenClaw install: the full command line says so (exit 2)
        doc = session_document(ctx, opts["agent"], opts["max_chars"])
        caller = os.environ.get("MEMORYD_PLUGIN_CALLER")
        if caller:  # the plugin's most frequent call: noted for `status`, as cli.py does
            from .. import clock
            from ..plugin_seen import note_call

            note_call(ctx.paths.memoryd_dir, caller, "inject", clock.now())
        import json

        # As ``memoryd.commands.formats.json_dumps`` writes a plain document (this one is only
        # strings, whole numbers, booleans, lists and dicts), without importing the command line.
        text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)
    except KeyboardInterrupt:
        return 130  # as the full command line exits on ^C
    except Exception:  # the full command line reports it, as it always has
        return None
    try:
        print(text)
    except BrokenPipeError:  # the plugin gave up on this run (its deadline): nothing to say
        sys.stderr.close()
    return 0


def exit_now(code: int) -> NoReturn:
    """End the process once the answer is out and ``atexit`` has run: Python's teardown frees
    every module one by one, and the plugin (or a reader of the output) waits for the exit.
    The usual exit when a thread other than the daemon threads still runs, or when flushing
    fails (a closed pipe): it then reports it. Also :func:`memoryd.cli.command`'s."""
    threading = sys.modules.get("threading")
    if threading is not None:
        main = threading.main_thread()
        if any(t is not main and not t.daemon for t in threading.enumerate()):
            sys.exit(code)
    try:
        _flush_std()
    except (OSError, ValueError):
        sys.exit(code)
    import atexit

    atexit._run_exitfuncs()
    with contextlib.suppress(OSError, ValueError):
        _flush_std()
    os._exit(code)


def _flush_std() -> None:
    """Flush stdout and stderr; either is None when its descriptor was closed at start
    (``memoryd status >&-``), and then has nothing to flush."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
