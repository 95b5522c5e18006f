"""memoryd: measures which memory files an agent uses and keeps its workspace lean."""

__version__ = "0.1.0"


def command() -> None:
    """The ``memoryd`` console script and ``python -m memoryd``: :func:`memoryd.cli.command`.

    Defined here, in the module every command imports first and that imports nothing, so the
    command's own imports run with the cyclic garbage collector off (they allocate much and
    free nothing). ``inject --session --json``, which a session's first turn waits for, is
    answered by :mod:`memoryd.commands.session_inject` without the parser when it can.
    """
    import gc
    import sys

    collecting = gc.isenabled()
    gc.disable()
    try:
        if "inject" in sys.argv[1:4]:
            from .commands import session_inject

            code = session_inject.run(sys.argv[1:])
            if code is not None:
                session_inject.exit_now(code)
        from .cli import command as run
    finally:
        if collecting:
            gc.enable()
    run()
