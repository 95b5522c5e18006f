"""The configuration reference, generated from the schema: ``config/memoryd.toml`` and the
key table of ``docs/configuration.md``. A development tool (outside the wheel: nothing
memoryd runs needs it).

Each key's type and default are its field in :mod:`memoryd.config.schema`, and its description is
the string right below the field (an attribute docstring, read here from the module's
source, so the running program pays nothing for it). Both files are written from that one
place; a test fails when either is stale::

    python tests/support/config_reference.py           # rewrite both (from the repository root)
    python tests/support/config_reference.py --check   # exit 1 and name the stale ones

Only the text between the two markers of ``docs/configuration.md`` is generated; the rest
of that page (refused values, switching a job off, environment variables) is written by hand.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from memoryd.config import schema as config

TOML_PATH = Path("config") / "memoryd.toml"
DOCS_PATH = Path("docs") / "configuration.md"
TABLE_BEGIN = (
    "<!-- BEGIN generated key table: `python tests/support/config_reference.py` writes it from the "
    "schema in daemon/memoryd/config/schema.py; edit the descriptions there -->"
)
TABLE_END = "<!-- END generated key table -->"
_TOML_WIDTH = 92

_TOML_HEADER = """\
# memoryd — the documented default configuration.
#
# Generated from memoryd/config/schema.py by `python tests/support/config_reference.py`;
# edit the descriptions there, not here. Every key is listed with its default value: copy
# the file, keep what you change, and use it with `memoryd --config FILE ...` or
# `MEMORYD_CONFIG=FILE`. Unknown keys and wrong types are errors (exit code 2, the message
# names the key); docs/configuration.md lists the refused values.
"""


class Key(NamedTuple):
    """One configuration key as the reference shows it."""

    table: str  # "notify.telegram"
    name: str  # "token"
    default: Any
    description: str  # Markdown, one paragraph

    @property
    def dotted(self) -> str:
        return f"{self.table}.{self.name}"


def _descriptions() -> dict[tuple[str, str], str]:
    """(class name, field name) → the attribute docstring below that field in config/schema.py."""
    tree = ast.parse(Path(inspect.getfile(config)).read_text(encoding="utf-8"))
    out: dict[tuple[str, str], str] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        body = node.body
        for field, after in zip(body, [*body[1:], None], strict=True):
            if (
                isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                text = " ".join(inspect.cleandoc(after.value.value).split())
                out[(node.name, field.target.id)] = text
    return out


def schema_keys() -> list[Key]:
    """Every key of the schema in file order, with its default and description.

    Raises ValueError for a key without a description: the reference must not have gaps.
    """
    docs = _descriptions()
    keys: list[Key] = []

    def walk(cls: type, prefix: str) -> Iterator[Key]:
        defaults = cls._field_defaults  # type: ignore[attr-defined]
        for name, annotation in cls.__annotations__.items():
            if name == "source":
                continue
            hint = config._resolve_hint(annotation)
            dotted = f"{prefix}.{name}" if prefix else name
            if config.is_table(hint):
                yield from walk(hint, dotted)
                continue
            text = docs.get((cls.__name__, name))
            if not text:
                raise ValueError(f"{dotted}: no description below its field in config/schema.py")
            yield Key(prefix, name, defaults[name], text)

    keys.extend(walk(config.Config, ""))
    return keys


def toml_value(value: Any) -> str:
    """A default as TOML writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # (a TOML basic string for these values)
    if isinstance(value, tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")  # pragma: no cover - schema bug


def render_toml(keys: list[Key] | None = None) -> str:
    """``config/memoryd.toml``: every key with its default, its description as a comment."""
    keys = schema_keys() if keys is None else keys
    lines = [_TOML_HEADER.rstrip("\n")]
    table = None
    for key in keys:
        if key.table != table:
            table = key.table
            lines += ["", f"[{table}]"]
        lines += textwrap.wrap(
            key.description,
            _TOML_WIDTH,
            initial_indent="# ",
            subsequent_indent="# ",
            break_on_hyphens=False,
            break_long_words=False,
        )
        lines.append(f"{key.name} = {toml_value(key.default)}")
    return "\n".join(lines) + "\n"


def render_table(keys: list[Key] | None = None) -> str:
    """The key table of ``docs/configuration.md`` (Markdown, one row a key)."""
    keys = schema_keys() if keys is None else keys
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for key in keys:
        text = key.description.replace("|", "\\|")
        rows.append(f"| `{key.dotted}` | `{toml_value(key.default)}` | {text} |")
    return "\n".join(rows) + "\n"


def with_table(page: str, table: str) -> str:
    """``page`` with the text between the markers replaced by ``table``."""
    try:
        head, rest = page.split(TABLE_BEGIN + "\n", 1)
        _old, tail = rest.split(TABLE_END, 1)
    except ValueError:
        raise ValueError(f"{DOCS_PATH}: the generated-table markers are missing") from None
    return f"{head}{TABLE_BEGIN}\n{table}{TABLE_END}{tail}"


def expected_files(root: Path) -> dict[Path, str]:
    """Each generated file under ``root`` and the text it must hold."""
    keys = schema_keys()
    page = (root / DOCS_PATH).read_text(encoding="utf-8")
    return {
        root / TOML_PATH: render_toml(keys),
        root / DOCS_PATH: with_table(page, render_table(keys)),
    }


def stale_files(root: Path) -> list[Path]:
    """The generated files under ``root`` that differ from what the schema says."""
    out = []
    for path, text in expected_files(root).items():
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = None
        if current != text:
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tests/support/config_reference.py",
        description="Write config/memoryd.toml and docs/configuration.md's key table from "
        "the configuration schema.",
    )
    parser.add_argument("--root", default=".", help="the repository root (default: .)")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when a file is stale"
    )
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.check:
        stale = stale_files(root)
        for path in stale:
            print(f"{path}: stale; run python tests/support/config_reference.py", file=sys.stderr)
        return 1 if stale else 0
    for path, text in expected_files(root).items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
