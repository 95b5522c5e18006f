"""The README holds: its links lead somewhere, its commands and flags exist, and CI runs
the test command it gives (in-process; reads the repository's own files only).

A user follows the README literally; a link to a renamed heading, a flag that was
renamed, or a CI that tests something other than what the README tells people to run
each break that quietly. These checks read the files as they are.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from memoryd.cli import build_parser
from memoryd.commands.registry import COMMAND_GROUPS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but `-` and `_` dropped,
    spaces to "-" (the headings here use no `_emphasis_`)."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(markdown: str) -> set[str]:
    out: set[str] = set()
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6}\s+(.*)", line)):
            out.add(github_anchor(m.group(1)))
    return out


def test_github_anchor_matches_the_headings_the_readme_links_to() -> None:
    assert github_anchor("The tier store") == "the-tier-store"
    assert (
        github_anchor("Where it stands: four rounds merged (2026-11-30)")
        == "where-it-stands-four-rounds-merged-2026-11-30"
    )


def test_every_relative_link_in_the_readme_leads_to_a_file_and_anchor() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert len(links) > 10
    broken = []
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        target, _, anchor = link.partition("#")
        path = ROOT / target if target else README
        if not path.exists():
            broken.append(f"{link}: no file {target}")
        elif anchor and anchor not in anchors_of(path.read_text(encoding="utf-8")):
            broken.append(f"{link}: no heading #{anchor} in {target or 'README.md'}")
    assert not broken, broken


def _readme_sh_lines() -> list[str]:
    """The commands of the README's ```sh blocks, comments dropped."""
    text = README.read_text(encoding="utf-8")
    lines: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        lines += [ln.strip() for ln in block.splitlines() if ln.strip() and ln[0] != "#"]
    return lines


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    test_commands = [ln for ln in _readme_sh_lines() if "pytest" in ln]
    assert len(test_commands) == 1, test_commands
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    ci_lines = [ln.strip() for ln in ci.splitlines()]
    assert test_commands[0] in ci_lines, "CI must run the README's test command as written"
    assert "rm -rf .venv" in ci_lines[: ci_lines.index(test_commands[0])], "from a fresh venv"


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {opt for action in parser._actions for opt in action.option_strings}


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(name)
    return None


def test_every_command_and_flag_the_readme_names_exists() -> None:
    """`memoryd CMD [SUB] --flag` anywhere in the README: CMD, SUB and --flag are real."""
    parser = build_parser()
    text = README.read_text(encoding="utf-8").replace("\\|", " ")  # `[--a \| --b]` in tables
    uses = [
        re.split(r"&&|\|\||;|#", use)[0]  # up to the next shell command or comment
        for use in re.findall(r"memoryd ((?:[a-z][\w-]*)(?: [^`\n|]*)?)", text)
    ]
    checked = 0
    missing = []
    for use in uses:
        words = use.split()
        cmd = words[0]
        if cmd not in COMMAND_GROUPS:
            continue  # prose: "memoryd counts", "memoryd never writes", ...
        sub = _subparser(parser, cmd)
        assert sub is not None, cmd
        nested = _subparser(sub, words[1]) if len(words) > 1 else None
        known = _options(parser) | _options(sub) | (_options(nested) if nested else set())
        for word in words[1:]:
            flag = word.strip("[]()|.,;:'\"").split("=")[0]
            if flag.startswith("--") and flag not in known:
                missing.append(f"memoryd {use}: {flag}")
        checked += 1
    assert checked > 20
    assert not missing, missing


def test_no_help_text_speaks_the_projects_inner_jargon() -> None:
    """`memoryd --help` is read by users: no "seed 004", no "the seed's /refresh"."""
    parser = build_parser()
    texts = [parser.format_help()]
    for name in COMMAND_GROUPS:
        sub = _subparser(parser, name)
        assert sub is not None
        texts.append(sub.format_help())
    joined = "\n".join(texts)
    assert not re.search(r"\bseed 0\d\d|the seed's", joined)
