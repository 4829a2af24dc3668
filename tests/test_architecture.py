"""The rules of docs/architecture.md, checked on the code's own imports (nothing is run): no
import circles, the face never imported by the library, records touched only by the stores
and the run, a pure planner, every package entered through its face, the MCP client apart
from the server, modules of a size a reader can hold."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
FACE = ("toolwire.cli", "toolwire._cli", "toolwire.demo")
"""The command line and the demo: they import the library, never the other way round."""
CORE_PACKAGES = ("toolwire.pipeline", "toolwire.runs")
"""The governance core: the pipeline (planning, deciding, running, tickets) and the run (its
records, the run over a store, the ledger)."""
STORES = ("toolwire.runs.store", "toolwire.store")
MAX_LINES = 900


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((SRC / "toolwire").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = modules()


def within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == package or name.startswith(package + ".") for package in packages)


def imported(name: str) -> dict[str, set[str]]:
    """The toolwire modules ``name`` imports (lazily or not, type-checking imports included),
    each with the names it takes from it."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, set[str]] = defaultdict(set)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in MODULES:
                    found[target].add("*")
                elif base in MODULES:
                    found[base].add(alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    found[alias.name].add("*")
    return found


GRAPH = {name: imported(name) for name in MODULES}
CORE = tuple(name for name in MODULES if within(name, CORE_PACKAGES) and not within(name, STORES))


def test_no_module_imports_one_that_imports_it_back() -> None:
    circles = []
    # Tarjan's strongly connected components, iteratively.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in GRAPH:
        if root in index:
            continue
        work = [(root, iter(GRAPH[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(GRAPH[target])))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
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
                        circles.append(sorted(component))
    assert circles == []


def test_no_library_module_imports_the_command_line_or_the_console() -> None:
    wrong = [
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if not within(name, FACE)
        for target in targets
        if within(target, FACE)
        or (within(target, ("toolwire.inbox",)) and not within(name, ("toolwire.inbox",)))
    ]
    assert wrong == []


def test_only_the_stores_and_the_run_read_or_write_records() -> None:
    wrong = []
    for name, path in MODULES.items():
        if within(name, (*STORES, "toolwire.runs._run")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("get", "swap", "load", "get_many")
                and "store" in ast.unparse(node.func.value)
            ):
                wrong.append(f"{name}: {ast.unparse(node)[:80]}")
    assert wrong == []


def test_the_planner_reads_no_store_and_runs_nothing() -> None:
    import toolwire.runs

    planner = "toolwire.pipeline._plan"
    tree = ast.parse(MODULES[planner].read_text(encoding="utf-8"))
    assert not any(isinstance(node, ast.AsyncFunctionDef | ast.Await) for node in ast.walk(tree))
    # Of the run it takes only a record's pure readings (the run's face also holds the Run).
    taken = GRAPH[planner].get("toolwire.runs", set())
    assert {
        name: getattr(toolwire.runs, name).__module__
        for name in taken
        if getattr(toolwire.runs, name).__module__ != "toolwire.runs._record"
    } == {}
    others = set(GRAPH[planner]) - {"toolwire.runs"}
    assert not {t for name in others for t in {name} | reached(name)} & {
        "toolwire.runs",
        "toolwire.runs._run",
        "toolwire.runs.store",
        "toolwire.pipeline.executor",
    }


def _package(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def _private_home(module: str) -> str | None:
    """The package whose private module ``module`` is (the path before its first part that
    starts with ``_``), or None for a public module."""
    parts = module.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:index])
    return None


def test_outside_code_enters_a_package_through_its_face() -> None:
    # A private module is imported only from inside its package; a private name only from
    # inside the package of the module that defines it.
    wrong = []
    for name, targets in GRAPH.items():
        for target, names in targets.items():
            home = _private_home(target)
            if home is not None and not within(name, (home,)):
                wrong.append(f"{name} imports {target}")
            wrong.extend(
                f"{name} takes {taken} from {target}"
                for taken in names
                if taken.startswith("_")
                and not taken.startswith("__")
                and _package(name) != _package(target)
            )
    assert wrong == []


def test_the_mcp_client_never_imports_the_server() -> None:
    wrong = [
        f"{name} reaches {target}"
        for name in MODULES
        if within(name, ("toolwire.mcp.client",))
        for target in reached(name)
        if within(target, ("toolwire.mcp.server",))
    ]
    assert wrong == []


def test_no_module_is_longer_than_a_reader_can_hold() -> None:
    lengths = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in MODULES.items()
    }
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}


def reached(name: str) -> set[str]:
    """Every toolwire module ``name`` imports, directly or through others."""
    seen: set[str] = set()
    stack = [name]
    while stack:
        for target in GRAPH[stack.pop()]:
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def test_providers_reach_neither_the_core_nor_a_store() -> None:
    above = (
        *CORE_PACKAGES,
        *STORES,
        "toolwire.ledger",
        "toolwire.executor",
        "toolwire._api",
        "toolwire.mcp",
        "toolwire.integrations",
    )
    wrong = [
        f"{name} reaches {target}"
        for name in MODULES
        if within(name, ("toolwire.providers",))
        for target in reached(name)
        if within(target, above)
    ]
    assert wrong == []


def test_the_leaves_import_only_leaves() -> None:
    leaves = ("toolwire.context", "toolwire.calls", "toolwire._values", "toolwire.errors")
    below = (
        *leaves,
        "toolwire.tool",
        "toolwire._validation",  # the tool's argument validation, split from it
        "toolwire._function_schema",
        "toolwire._text",
        "toolwire.grammar",
        "toolwire.schema",
    )
    wrong = [
        f"{name} reaches {target}"
        for name in leaves
        for target in reached(name)
        if not within(target, below)
    ]
    assert wrong == []


MAX_COMPLEXITY = 15
_BRANCHES = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.match_case)


def complexity(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """McCabe's count for one function (its nested functions counted apart): one, plus one
    per branch (``if``, a conditional expression, a loop, an ``except``, a ``case``, each
    ``for`` and ``if`` of a comprehension, each extra operand of ``and`` / ``or``)."""
    count = 1
    stack: list[ast.AST] = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, _BRANCHES):
            count += 1
        elif isinstance(node, ast.comprehension):
            count += 1 + len(node.ifs)
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
        stack.extend(ast.iter_child_nodes(node))
    return count


def test_no_function_of_the_core_branches_more_than_a_reader_can_follow() -> None:
    found = {}
    for name in CORE:
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found[f"{name}.{node.name}"] = complexity(node)
    assert {where: n for where, n in found.items() if n > MAX_COMPLEXITY} == {}


def test_the_decider_reads_the_turn_and_writes_nothing_of_it() -> None:
    # Deciding returns each call's step as a value; the turn applies it (Turn.apply), so no
    # object is written by two others.
    tree = ast.parse(MODULES["toolwire.pipeline._deciding"].read_text(encoding="utf-8"))
    writes = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "add", "extend", "update", "finish", "apply", "pop")
        ):
            targets = [node.func.value]
        writes.extend(
            ast.unparse(target)
            for target in targets
            if "turn" in {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        )
    assert writes == []


def test_no_part_of_the_pipeline_is_handed_a_callback_into_the_executor() -> None:
    tree = ast.parse(MODULES["toolwire.pipeline.executor"].read_text(encoding="utf-8"))
    handed = [
        ast.unparse(keyword)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for keyword in node.keywords
        if isinstance(keyword.value, ast.Attribute)
        and isinstance(keyword.value.value, ast.Name)
        and keyword.value.value.id == "self"
        and callable(getattr(__import__("toolwire").Executor, keyword.value.attr, None))
    ]
    assert handed == []


def test_the_ledger_names_no_engine() -> None:
    # Engines register their wakers, or name them in the toolwire.wakers entry points.
    text = MODULES["toolwire.runs.ledger"].read_text(encoding="utf-8")
    assert "toolwire.integrations" not in text
    assert not reached("toolwire.runs.ledger") & {
        name for name in MODULES if within(name, ("toolwire.integrations",))
    }


TESTS = Path(__file__).resolve().parent


def mirrored_test(name: str) -> Path:
    """Where the tests of core module ``name`` are: its path under ``tests``, named after the
    module without its underscore (``toolwire.runs.store._base``: ``runs/store/test_base.py``)."""
    *packages, module = name.split(".")[1:]
    return TESTS.joinpath(*packages, f"test_{module.lstrip('_')}.py")


def test_every_module_of_the_core_has_its_mirrored_test_file() -> None:
    core = [
        name
        for name, path in MODULES.items()
        if within(name, CORE_PACKAGES) and path.name != "__init__.py"
    ]
    assert core  # the rule reads the core's modules, not nothing
    missing = [str(mirrored_test(name).relative_to(TESTS)) for name in core]
    assert [path for path in missing if not (TESTS / path).is_file()] == []


def test_no_two_test_modules_share_a_name() -> None:
    # pytest imports a test module by its file name (the tests are no package): two files of
    # one name in two folders would collide, as a mirrored name easily could.
    names: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        names[path.name].append(str(path.relative_to(TESTS)))
    assert {name: paths for name, paths in names.items() if len(paths) > 1} == {}
