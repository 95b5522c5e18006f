"""memoryd: measures which memory files an agent uses and keeps its workspace lean."""

__version__ = "0.1.0"


def command() -> None:
    """The ``memoryd`` console script and ``python -m memoryd``: :func:`memoryd.cli.command`.

    Defined here, in the module every command imports first and that imports nothing, so
    the command's own imports run with the cyclic garbage collector off: they allocate much
    and free nothing, and its passes over the growing heap are a few per cent of a read
    command's run. (:func:`memoryd.cli.main` then decides for the command itself.)
    """
    import gc

    collecting = gc.isenabled()
    gc.disable()
    try:
        from .cli import command as run
    finally:
        if collecting:
            gc.enable()
    run()
