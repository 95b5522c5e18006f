"""Every Python memoryd promises is named once and tested (issue 36); reads files only.

The README says "Python ≥ 3.11", pyproject.toml's ``requires-python`` and classifiers say
which, and ``.ci/run`` takes the oldest and the newest of those classifiers. A warning from
memoryd's code or the tests' own is an error in the suite, so what one Python deprecates is
fixed before the next one refuses it: the ``filterwarnings`` of pyproject.toml must cover every
module of memoryd and of tests/ by the name Python gives it, and leave other packages' alone.
"""

from __future__ import annotations

import re
import sqlite3
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def error_filters() -> list[re.Pattern[str]]:
    """The module patterns of pyproject's ``error`` filters (action:message:category:module)."""
    out = []
    for line in PYPROJECT["tool"]["pytest"]["ini_options"]["filterwarnings"]:
        action, _message, category, module = [*line.split(":"), "", "", ""][:4]
        if action == "error" and category in ("", "Warning") and module:
            out.append(re.compile(module))
    return out


def made_error(module: str) -> bool:
    return any(p.match(module) for p in error_filters())  # as warnings matches: from the start


def module_names() -> list[str]:
    """memoryd's modules, and those of tests/ as they are imported: by their own name (the
    folder is on sys.path), the helpers as ``support.*``, the live harness as ``live`` and as
    ``tests.live`` (run from the repository, it imports ``tests.support`` too)."""
    names = []
    for path in (ROOT / "daemon").rglob("*.py"):
        parts = path.relative_to(ROOT / "daemon").with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    for path in (ROOT / "tests").rglob("*.py"):
        parts = path.relative_to(ROOT / "tests").with_suffix("").parts
        if parts[0] in ("fixtures", "plugin_js"):
            continue  # data, not imported
        dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if (ROOT / "tests" / parts[0] / "__init__.py").exists():  # a package: live, support
            names += [dotted, f"tests.{dotted}"]
        else:  # a folder of test modules, each imported by its own name (pytest's rootdir rule)
            names.append(parts[-1])
    return names


def test_a_warning_from_a_test_module_is_an_error() -> None:
    with pytest.raises(DeprecationWarning, match="refused"):
        warnings.warn("refused", DeprecationWarning, stacklevel=1)


def test_numbered_placeholders_bind_from_a_sequence_named_ones_do_not() -> None:
    """memoryd's batched inserts bind shared values once as ``?1``: every Python takes that
    (3.12.1 warned, wrongly, and the filters let that one pass); a ``:name`` bound by position
    is deprecated from 3.12, and an error here."""
    conn = sqlite3.connect(":memory:")
    try:
        assert conn.execute("SELECT ?1, ?, ?1", (1, 2)).fetchall() == [(1, 2, 1)]
        if sys.version_info >= (3, 12):
            with pytest.raises(DeprecationWarning, match="named parameter"):
                conn.execute("SELECT :a", (1,))
    finally:
        conn.close()


def test_every_module_of_memoryd_and_the_tests_has_its_warnings_made_errors() -> None:
    names = module_names()
    assert "memoryd.ingest.prescan" in names and "test_read_plans" in names
    assert "live.check" in names and "support.daemon_harness" in names
    assert [n for n in names if not made_error(n)] == []


def test_other_packages_warnings_stay_theirs() -> None:
    """A deprecation inside pytest, hypothesis, the standard library or a dependency is for its
    authors to fix; the suite shows it but does not fail on it."""
    others = ["pytest", "_pytest.python", "hypothesis.core", "sqlite3", "apscheduler.util"]
    others += ["watchdog.observers", "structlog", "memorydx", "testing", "live_reload"]
    assert [n for n in others if made_error(n)] == []


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def test_the_supported_pythons_are_named_once_and_agree() -> None:
    """The classifiers run without a gap from requires-python's minimum, which the README
    states; .ci/run reads the classifiers (the oldest and the newest it finds)."""
    project = PYPROJECT["project"]
    classified = sorted(
        _minor(c.rsplit("::", 1)[1].strip())
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert len(classified) >= 2, classified
    least = re.fullmatch(r">=(3\.\d+)", project["requires-python"])
    assert least, project["requires-python"]
    assert classified[0] == _minor(least.group(1))
    assert classified == [(3, m) for m in range(classified[0][1], classified[-1][1] + 1)]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"Python ≥ {least.group(1)}" in readme
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "Programming Language :: Python ::" in ci and "pyproject.toml" in ci
    testing = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    for major, minor in classified:
        assert f"{major}.{minor}" in testing, f"docs/testing.md: how to run on {major}.{minor}"
