"""The layers docs/architecture.md declares hold, and no module imports itself in a circle.

Read from the source with :mod:`ast` (nothing is imported; one parse of each file): every
``import`` of a memoryd module, at the top or inside a function or ``if TYPE_CHECKING``, is an
arrow, and so is every module an ``importlib.import_module`` call loads (named in the call, a
package's modules for an f-string naming their package, else each memoryd module the calling
module names in a string). An arrow may point to the module's own layer or one below it, never
up; and the arrows make no circle, inside a layer either. The tests' own code (``support``,
``live``: test data and the live harness, outside the wheel) is never imported from memoryd.
No command module imports the entry module, ``memoryd.cli`` (it loads every command). In
tests/, no module imports a test module (``test_*.py``): what two of them share lives in
``tests/support/``, so running, moving or deleting one test module never changes another.

A new module belongs in :data:`LAYERS` (the test names one that is missing): deciding where it
sits is the point.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import memoryd

pytestmark = pytest.mark.unit

ROOT = Path(memoryd.__file__).parent
TESTS = Path(__file__).resolve().parents[1]

# Lowest first. A name stands for that module and, ending in ".*", for a package and everything
# in it. Keep docs/architecture.md's list in step.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "leaves",
        (
            "memoryd",  # __version__; its command() imports what starts a command (ENTRY_STARTS)
            "memoryd.errors",
            "memoryd.faults",
            "memoryd.fsutil",
            "memoryd.clock",
            "memoryd.log",
            "memoryd.results",
            "memoryd.timerules",
            "memoryd.locks",
            "memoryd.health",
            "memoryd.progress",
            "memoryd.plugin_seen",
            "memoryd.workspace",
            "memoryd.strength",
            "memoryd.section_map",
            "memoryd.dreaming_lock",  # whether OpenClaw's dreaming is at work on a workspace
            "memoryd.bootstrap_cut",
            "memoryd.demo_notes",  # what `memoryd demo`'s notes say, and its tier store
            "memoryd.demo_install",  # the OpenClaw install `memoryd demo` writes
        ),
    ),
    ("config", ("memoryd.config.*", "memoryd.bootstrap")),
    (
        "store",
        (
            "memoryd.store",
            "memoryd.store_schema",
            "memoryd.store_errors",
            "memoryd.hit_counts",
            "memoryd.pathmatch",
            "memoryd.kept_strength",
            "memoryd.files_seen",
        ),
    ),
    ("ingest", ("memoryd.ingest.*",)),
    (
        "signals",
        ("memoryd.signals", "memoryd.reports", "memoryd.section_report", "memoryd.report_html"),
    ),
    ("policy", ("memoryd.policy.*",)),
    (
        "moves",
        (
            "memoryd.mover",
            "memoryd.move_journal",
            "memoryd.move_files",
            "memoryd.notify",
            "memoryd.ondemand",
            "memoryd.ondemand_outcomes",
            "memoryd.own_history",
            "memoryd.report_page",
            "memoryd.tierstore.*",
            "memoryd.retirer",
            "memoryd.retire_run",
            "memoryd.promoter",
            "memoryd.promote_run",
        ),
    ),
    ("jobs", ("memoryd.jobs.*",)),
    ("service", ("memoryd.service.*",)),
    ("commands", ("memoryd.cli", "memoryd.__main__", "memoryd.commands.*")),
)
# Top-level packages of tests/ (on sys.path under pytest and in bench/): an installed memoryd
# has none of them, so a runtime module importing one breaks on a user's machine.
TEST_ONLY = frozenset({"support", "live", "tests", "conftest"})
# The console script's entry (``memoryd:command``) imports, lazily, the command line it
# starts, or the plugin's session-start answer that skips the command line's parser.
ENTRY = "memoryd"
ENTRY_STARTS = frozenset({"memoryd.cli", "memoryd.commands.session_inject"})
# The command line's entry module: it loads every command, so a command importing it (for a
# helper, or to run another command) closes a circle. What commands share lives below them.
COMMAND_LINE = "memoryd.cli"


def module_names(root: Path) -> dict[str, tuple[Path, bool]]:
    """Each module's dotted name → (its file, whether it is a package's ``__init__``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        is_package = rel.name == "__init__"
        out[".".join(rel.parts[:-1] if is_package else rel.parts)] = (path, is_package)
    return out


@functools.cache
def import_graph(root: Path) -> dict[str, frozenset[str]]:
    """module → the memoryd modules it imports (a name imported from a package counts as the
    submodule when there is one of that name, else as the package)."""
    modules = module_names(root)

    def known(name: str) -> str:
        while name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, frozenset[str]] = {}
    for module, (path, is_package) in modules.items():
        package = module if is_package else module.rpartition(".")[0]
        targets: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _is_import_module(node.func):
                targets.update(loaded_by_name(node, tree, package, modules))
            elif isinstance(node, ast.Import):
                targets.update(known(a.name) for a in node.names if a.name.startswith("memoryd"))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1])
                    name = f"{base}.{node.module}" if node.module else base
                else:
                    name = node.module or ""
                if name.split(".")[0] != "memoryd":
                    continue
                for alias in node.names:
                    sub = f"{name}.{alias.name}"
                    targets.add(sub if sub in modules else known(name))
        targets.discard(module)
        graph[module] = frozenset(targets)
    return graph


def _is_import_module(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module"
    )


def loaded_by_name(
    call: ast.Call, tree: ast.Module, package: str, modules: dict[str, tuple[Path, bool]]
) -> set[str]:
    """The memoryd modules an ``import_module(...)`` call may load: the one it names; for an
    f-string, every module under the part it spells out (``f"memoryd.jobs.{name}"``); for a
    name computed otherwise, every memoryd module the calling module spells in a string (a
    table of them). An unreadable call that names none is an arrow to ``?`` (a problem)."""
    if not call.args:
        return set()
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        spelled, whole = arg.value, True
    elif isinstance(arg, ast.JoinedStr):
        head = arg.values[0] if arg.values else None
        spelled = head.value if isinstance(head, ast.Constant) else ""
        whole = False
    else:
        named = {
            n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in modules
        }
        return named or {"?"}
    if spelled.startswith("."):  # relative to the package given (``__name__`` in memoryd)
        level = len(spelled) - len(spelled.lstrip("."))
        parts = package.split(".")
        spelled = ".".join(parts[: len(parts) - level + 1]) + "." + spelled[level:]
    if whole:
        return {spelled} if spelled in modules else {"?"}
    found = {m for m in modules if m.startswith(spelled) and m != spelled.rstrip(".")}
    return found or {"?"}


def layer_of(module: str) -> int | None:
    for rank, (_, names) in enumerate(LAYERS):
        for name in names:
            if module == name or (name.endswith(".*") and _in_package(module, name[:-2])):
                return rank
    return None


def _in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def circles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def imports_of_test_code(root: Path) -> list[str]:
    """Each import, anywhere in a runtime module, of a package only the tests have."""
    out = []
    for module, (path, _is_package) in module_names(root).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            out += [
                f"{module} imports {n}: test code, not in the wheel"
                for n in names
                if n.split(".")[0] in TEST_ONLY
            ]
    return out


def layering_problems(root: Path) -> list[str]:
    """Every arrow up the layers, into the tests' own code, or from a module of no layer."""
    problems = imports_of_test_code(root)
    for module, targets in sorted(import_graph(root).items()):
        rank = layer_of(module)
        if rank is None:
            problems.append(f"{module} is in no layer of LAYERS (tests/project/test_layers.py)")
            continue
        for target in sorted(targets):
            if module == ENTRY and target in ENTRY_STARTS:
                continue
            if target == "?":
                problems.append(f"{module} loads a module by a name this test cannot read")
                continue
            if target == COMMAND_LINE and _in_package(module, "memoryd.commands"):
                problems.append(
                    f"{module} imports {target}: the entry module, which loads every command"
                )
                continue
            other = layer_of(target)
            if other is not None and other > rank:
                problems.append(
                    f"{module} ({LAYERS[rank][0]}) imports {target} ({LAYERS[other][0]}): "
                    "an arrow up the layers"
                )
    return problems


def circle_problems(root: Path) -> list[str]:
    graph = dict(import_graph(root))
    graph[ENTRY] = graph[ENTRY] - ENTRY_STARTS
    out = []
    for component in circles(graph):
        arrows = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component]
        out.append("circle: " + ", ".join(arrows))
    return out


def modules_named_test(tests: Path) -> dict[str, Path]:
    """Each test module under ``tests`` by the names it can be imported by: its own dotted name
    from ``tests`` (the folder pytest and the bench scripts put on sys.path), and under
    ``tests.`` (from the repository, as ``python -m tests.live`` runs)."""
    out = {}
    for path in sorted(tests.rglob("test_*.py")):
        dotted = ".".join(path.relative_to(tests).with_suffix("").parts)
        out[dotted] = out[f"tests.{dotted}"] = out[imported_as(path)] = path
    return out


def imported_as(path: Path) -> str:
    """The name pytest imports a test module by: dotted from the nearest folder above it that
    is no package (that folder goes on sys.path), so ``tests/ingest/test_x.py`` is ``test_x``
    and ``tests/live/test_x.py`` is ``live.test_x``."""
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def imports_of_test_modules(tests: Path) -> list[str]:
    """Every import of a test module by a module under ``tests``: a plain or a relative import,
    a name taken from a package (``from tests import test_x``), or ``import_module("test_x")``
    with the name written out."""
    targets = modules_named_test(tests)
    found = []
    for path in sorted(tests.rglob("*.py")):
        rel = path.relative_to(tests)
        package = ".".join(rel.parts[:-1])
        names: list[tuple[int, str]] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names += [(node.lineno, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([p for p in up if p] + ([base] if base else []))
                names.append((node.lineno, base))
                names += [(node.lineno, f"{base}.{a.name}".lstrip(".")) for a in node.names]
            elif isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    names.append((node.lineno, first.value))
        for lineno, name in names:
            if name in targets and targets[name] != path:
                target = targets[name].relative_to(tests)
                found.append(f"tests/{rel}:{lineno} imports tests/{target}")
    return sorted(set(found))


def test_no_module_imports_itself_in_a_circle() -> None:
    assert circle_problems(ROOT) == []


def test_every_arrow_points_down_the_layers_architecture_md_declares() -> None:
    assert layering_problems(ROOT) == []


def test_only_the_commands_import_a_job_and_no_job_imports_another() -> None:
    """The jobs are the imperative shell: what two of them share lives in ``memoryd.policy``
    (the expire plan that ``reflect`` reports, for one), so changing one job never changes
    another. Only the command modules run a job by name (the daemon goes through
    ``memoryd.jobs.run_for_period``, whose package loads the job it names)."""
    graph = import_graph(ROOT)
    jobs = {m for m in graph if m.startswith("memoryd.jobs.")}
    assert {"memoryd.jobs.expire", "memoryd.jobs.reflect", "memoryd.jobs.promote"} <= jobs
    offenders = [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        if not module.startswith("memoryd.commands.") and module != "memoryd.jobs"
        for target in sorted(targets & jobs)
    ]
    assert offenders == []


def test_the_wheel_holds_no_install_generator_and_no_test_code() -> None:
    """Issue 31: the tests' install generator (every dialect, decoys, reference counts) is
    test data, in tests/support/corpus; ``memoryd demo`` writes its own small install. No
    runtime module is one of the generator's, and none imports it or other test code, so a
    wheel built from daemon/ cannot hold it or need it."""
    assert not (ROOT / "corpus").exists()
    assert [m for m in module_names(ROOT) if "corpus" in m.split(".")] == []
    assert imports_of_test_code(ROOT) == []
    named = [
        f"{module} imports {name}"
        for module, (path, _) in module_names(ROOT).items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or "", *(a.name for a in node.names)]
        )
        if "corpus" in name.split(".")
    ]
    assert named == []


def test_the_checks_see_a_circle_and_an_arrow_up(tmp_path: Path) -> None:
    """The two checks above can fail: on a small package built for them, they do."""
    pkg = tmp_path / "memoryd"
    for name, text in {
        "__init__.py": "",
        "clock.py": "from .store import Store\n",  # leaves -> store: up
        "store.py": "from . import clock\n",  # and back: a circle
        "jobs/__init__.py": "",
        "jobs/a.py": "def f():\n    from support import histories\n",  # lazy, into tests/
        "oddity.py": "",
    }.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text, encoding="utf-8")
    assert circle_problems(pkg) == [
        "circle: memoryd.clock -> memoryd.store, memoryd.store -> memoryd.clock"
    ]
    assert layering_problems(pkg) == [
        "memoryd.jobs.a imports support: test code, not in the wheel",
        "memoryd.clock (leaves) imports memoryd.store (store): an arrow up the layers",
        "memoryd.oddity is in no layer of LAYERS (tests/project/test_layers.py)",
    ]


def test_the_checks_see_import_module_and_a_command_importing_the_entry(tmp_path: Path) -> None:
    """A command that imports the entry module back, which loads it through
    ``import_module`` from a table, is a circle and a problem of its own; so are loads by an
    f-string and by a name the test cannot read."""
    pkg = tmp_path / "memoryd"
    for name, text in {
        "__init__.py": "",
        "cli.py": (
            "import importlib\nGROUPS = ('memoryd.commands.hits',)\n"
            "def build():\n    for g in GROUPS:\n        importlib.import_module(g)\n"
        ),
        "commands/__init__.py": "",
        "commands/hits.py": "from ..cli import build\n",
        "commands/odd.py": "import importlib\ndef f(x):\n    importlib.import_module(x)\n",
        "clock.py": "from importlib import import_module\nimport_module(f'memoryd.ingest.{1}')\n",
        "ingest/__init__.py": "",
        "ingest/scan.py": "",
    }.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text, encoding="utf-8")
    assert circle_problems(pkg) == [
        "circle: memoryd.cli -> memoryd.commands.hits, memoryd.commands.hits -> memoryd.cli"
    ]
    assert layering_problems(pkg) == [
        "memoryd.clock (leaves) imports memoryd.ingest.scan (ingest): an arrow up the layers",
        "memoryd.commands.hits imports memoryd.cli: the entry module, which loads every command",
        "memoryd.commands.odd loads a module by a name this test cannot read",
    ]


def test_no_test_code_imports_a_test_module() -> None:
    """A test module is the tests it holds: one that another imports (for a helper, a constant,
    a fixture) cannot be run, moved or trimmed alone, and a test imported with a helper runs
    twice. What two test modules share belongs in ``tests/support/``."""
    assert "test_layers" in modules_named_test(TESTS)
    assert (TESTS / "support" / "inprocess.py").exists()  # where the shared helpers went
    assert imports_of_test_modules(TESTS) == []


def test_the_check_sees_each_way_of_importing_a_test_module(tmp_path: Path) -> None:
    for name, text in {
        "test_a.py": "import test_b\nfrom support import helper\n",
        "test_b.py": "def f():\n    from test_c import x\n",  # lazy
        "test_c.py": "import importlib\nimportlib.import_module('test_a')\nx = 1\n",
        "support/__init__.py": "",
        "support/helper.py": "from tests import test_c\n",
        "live/__init__.py": "",
        "live/run.py": "from . import test_d\nfrom .. import test_c\n",
        "live/test_d.py": "import live.test_d\n",  # itself: no other module
        "conftest.py": "import test_layers_like\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert imports_of_test_modules(tmp_path) == [
        "tests/live/run.py:1 imports tests/live/test_d.py",
        "tests/live/run.py:2 imports tests/test_c.py",
        "tests/support/helper.py:1 imports tests/test_c.py",
        "tests/test_a.py:1 imports tests/test_b.py",
        "tests/test_b.py:2 imports tests/test_c.py",
        "tests/test_c.py:2 imports tests/test_a.py",
    ]


def test_architecture_md_names_the_layers_this_test_holds() -> None:
    """The document a newcomer reads and the check agree on the order of the layers."""
    doc = (ROOT.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    declared = " → ".join(name for name, _ in reversed(LAYERS))
    assert declared in doc, declared


def test_architecture_md_shows_every_runtime_module() -> None:
    """A newcomer finds each module of the package in the drawing, so a new one is drawn
    when it is written and a removed one leaves it."""
    import re

    doc = (ROOT.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawing = doc[doc.index("daemon/memoryd/\n") :]
    words = set(re.findall(r"[A-Za-z_]\w*", drawing))
    missing = sorted(
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*.py")
        if p.name != "__init__.py" and p.stem not in words
    )
    assert not missing, f"docs/architecture.md does not show: {missing}"
