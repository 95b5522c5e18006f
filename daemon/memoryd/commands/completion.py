"""``memoryd completion bash|zsh``: a shell completion script, written from the command
line's own parser.

Generated, not kept by hand, so the script can never list an option that is gone or miss a new
one. zsh runs the same function through ``bashcompinit``: one script, the same words in both
shells. Paths and globs get the shell's own file name completion (``complete -o default``).
"""

from __future__ import annotations

import argparse

from .context import Context


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help="print a bash or zsh completion script")
    p.add_argument("shell", choices=("bash", "zsh"), help="the shell to complete in")
    p.set_defaults(func=cmd_completion, needs_openclaw=False)


def cmd_completion(args: argparse.Namespace, ctx: Context) -> int:
    script = bash_script(ctx.command_line().parser())
    if args.shell == "zsh":
        script = "#compdef memoryd\nautoload -U +X bashcompinit && bashcompinit\n" + script
    ctx.out.write(script)
    return 0


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return sorted({s for a in parser._actions for s in a.option_strings if s.startswith("--")})


def _choices(parser: argparse.ArgumentParser) -> list[str]:
    """The fixed values of a command's positional arguments (``completion bash|zsh``)."""
    return [
        str(c)
        for a in parser._actions
        if not a.option_strings and a.choices and not isinstance(a, argparse._SubParsersAction)
        for c in a.choices
    ]


def _children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def completions(parser: argparse.ArgumentParser) -> list[tuple[str, list[str]]]:
    """(the case pattern of the words typed so far, the words to offer), most specific first.

    Pure: ``" "`` is nothing typed yet (the commands and global options), ``"service "`` a
    command with sub-commands, ``"service install"*`` and ``"hits "*`` a command's options.
    """
    top = _children(parser)
    nested: list[tuple[str, list[str]]] = []
    plain: list[tuple[str, list[str]]] = []
    for name, command in top.items():
        subs = _children(command)
        if subs:
            nested.append((f'"{name} "', sorted(subs) + _options(command)))
            for sub_name, sub in subs.items():
                nested.append((f'"{name} {sub_name}"*', _options(sub)))
        else:
            plain.append((f'"{name} "*', _choices(command) + _options(command)))
    return [('" "', [*top, *_options(parser)]), *nested, *plain]


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The bash completion function for ``memoryd`` (see the module's docstring)."""
    cases = "\n".join(
        f"        {pattern}) words={' '.join(words)!r} ;;" for pattern, words in completions(parser)
    )
    return f"""# memoryd completion (bash), written by `memoryd completion bash`
_memoryd() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} cmd="" sub="" words="" i w
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${{COMP_WORDS[i]}}
        case $w in
            --config) ((i++)); continue ;;
            -*) continue ;;
        esac
        if [[ -z $cmd ]]; then cmd=$w; elif [[ -z $sub ]]; then sub=$w; fi
    done
    case "$cmd $sub" in
{cases}
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _memoryd memoryd
"""
