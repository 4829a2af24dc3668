"""The Berkeley Function Calling Leaderboard (BFCL v4) read with its own code: its real
function definitions and its ground-truth calls.

BFCL's data ships in the ``bfcl-eval`` package, whose dependencies are for running models
(SDKs, vLLM, sentence-transformers, ...). [`install`][] installs it alone, with the few
packages its loading and conversion code import, by ``pip install --no-deps --target`` into
the suites' cache (``fetch.cache_dir``: ``TOOLWIRE_SUITES_CACHE``, by default
``~/.cache/toolwire-suites``); [`load`][] then reads everything with BFCL's own functions:

- functions: every entry of the single-turn categories, as ``load_dataset_entry`` gives them
  (with its language hints; Java and JavaScript parameters made strings, as BFCL sends them),
  and the function docs of ``multi_turn_func_doc/`` through the multi-turn and agentic
  categories that use them; each converted as BFCL's OpenAI Chat Completions handler does
  (``convert_to_tool(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)``), and kept
  once per name and parameters.
- calls: the ground truth of ``possible_answer/``. A single-turn answer gives each parameter's
  acceptable values, ``""`` among them meaning the parameter may be left out (BFCL's AST
  checker); a concrete call takes the first acceptable value of each parameter and leaves out
  the optional ones whose first acceptable value is ``""``. A multi-turn answer is a Python
  call expression, bound to the backend method BFCL executes it on (its positional arguments
  by that method's signature).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared_files import locked

from .fetch import cache_dir
from .suite_checks import SuiteRun, json_path, oracle_errors

__all__ = [
    "PACKAGE",
    "REQUIREMENTS",
    "VERSION",
    "BfclSuite",
    "Call",
    "Function",
    "Unavailable",
    "figures",
    "install",
    "load",
    "not_fitting",
    "suite_run",
]

PACKAGE = "bfcl-eval"
VERSION = "2026.3.23"
REQUIREMENTS = (
    f"{PACKAGE}=={VERSION}",
    # What importing BFCL's loading and conversion code needs besides itself (versions as
    # bfcl-eval pins them, or the current ones): bfcl_eval.utils locks files with filelock;
    # bfcl_eval.model_handler.utils imports tenacity and tree-sitter's Java and JavaScript
    # grammars; the multi-turn MathAPI backend, whose methods bind the ground truth's
    # positional arguments, imports mpmath.
    "filelock==3.20.0",
    "tenacity==9.1.4",
    "tree-sitter==0.21.3",
    "tree-sitter-java==0.21.0",
    "tree-sitter-javascript==0.21.4",
    "mpmath==1.3.0",
)
_DONE = ".installed"
"""Written last into an installed target: its content is the requirements it holds."""


class Unavailable(Exception):
    """bfcl-eval could not be installed (no package index reachable, most likely)."""


def install(cache: Path | None = None) -> Path:
    """The folder holding bfcl-eval and what its code needs, installed there by pip unless a
    previous run did.

    Raises:
        Unavailable: pip failed (its last lines say why).
    """
    root = cache or cache_dir()
    # one process at a time: the test run's workers share the cache
    with locked(root / f"bfcl-eval-{VERSION}.lock"):
        return _install(root)


def _install(root: Path) -> Path:
    target = root / f"bfcl-eval-{VERSION}"
    wanted = "\n".join(REQUIREMENTS) + "\n"
    done = target / _DONE
    if done.is_file() and done.read_text(encoding="utf-8") == wanted:
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=root))
    staging.chmod(0o755)  # as a folder pip made would be
    try:
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-input",
            "--disable-pip-version-check",
            "--timeout",
            "30",
            "--retries",
            "2",
            "--target",
            str(staging),
            *REQUIREMENTS,
        ]
        try:
            ran = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"pip did not install {REQUIREMENTS[0]} in 10 minutes") from None
        if ran.returncode != 0:
            lines = (ran.stderr or ran.stdout).strip().splitlines()
            said = [line for line in lines if line.startswith("ERROR")] or lines[-5:]
            raise Unavailable(
                f"pip could not install {REQUIREMENTS[0]} (exit {ran.returncode}): "
                + " | ".join(said)
            )
        (staging / _DONE).write_text(wanted, encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


@dataclass(frozen=True, slots=True)
class Function:
    """One function as BFCL's OpenAI handler declares it (``{"name", "description",
    "parameters"}``)."""

    key: str
    """Its name and parameters as canonical JSON: what makes two functions the same."""
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Call:
    """One ground-truth call, as a model would send it."""

    source: str
    """The ``possible_answer/`` file it comes from (without ``.json``)."""
    entry: str
    """BFCL's id of the test entry."""
    answer: str
    """Which ground-truth call of the entry it is (``simple_python_2#0``; a multi-turn
    step ``multi_turn_base_0#1.0``, turn and step)."""
    function: str
    """The called function's key (see [`Function.key`][])."""
    arguments: dict[str, Any]
    alternative: str | None = None
    """None for the call made of each parameter's first acceptable value; for the calls made
    of the others, the parameter and the place of the value among its acceptable ones
    (``unit[1]``), the rest as in the first call."""
    as_text: bool = False
    """True when a Java or JavaScript value was turned into the string BFCL's schema asks
    for (see [`_as_text`][])."""

    @property
    def key(self) -> tuple[str, str]:
        """What makes two calls the same: the function and the arguments as canonical JSON."""
        return self.function, json.dumps(self.arguments, sort_keys=True)


@dataclass(slots=True)
class BfclSuite:
    """What [`load`][] read."""

    version: str
    functions: dict[str, Function] = field(default_factory=dict)
    """Every unique function by key, in the order first met."""
    sources: dict[str, list[str]] = field(default_factory=dict)
    """Per source (a category's data file, or a ``multi_turn_func_doc/`` file), the keys of its
    functions, each once."""
    entries: dict[str, int] = field(default_factory=dict)
    """Per single-turn source, its test entries; per ``multi_turn_func_doc/`` file, the
    multi-turn and agentic entries that declare it."""
    calls: list[Call] = field(default_factory=list)
    """Every ground-truth call, in BFCL's order (the same call may recur)."""

    def add(self, source: str, declared: Mapping[str, Any]) -> Function:
        """``declared`` (a function as BFCL converts it) counted for ``source``."""
        parameters = dict(declared["parameters"])
        key = json.dumps([declared["name"], parameters], sort_keys=True)
        function = self.functions.get(key)
        if function is None:
            function = Function(key, declared["name"], declared.get("description", ""), parameters)
            self.functions[key] = function
        keys = self.sources.setdefault(source, [])
        if key not in keys:
            keys.append(key)
        return function

    def unique_calls(self) -> dict[tuple[str, str], Call]:
        """Each distinct call (function and arguments) once, the first met."""
        found: dict[tuple[str, str], Call] = {}
        for call in self.calls:
            found.setdefault(call.key, call)
        return found


@contextmanager
def _importable(target: Path) -> Iterator[None]:
    """BFCL importable from ``target``: on sys.path (after the project's own packages), and
    told to make the folders it makes when imported (results, scores, locks) in the cache."""
    if str(target) not in sys.path:
        sys.path.append(str(target))
    before = os.environ.get("BFCL_PROJECT_ROOT")
    os.environ["BFCL_PROJECT_ROOT"] = str(target / "project")
    try:
        yield
    finally:
        if before is None:
            del os.environ["BFCL_PROJECT_ROOT"]
        else:
            os.environ["BFCL_PROJECT_ROOT"] = before


@dataclass(frozen=True, slots=True)
class _Bfcl:
    """The parts of BFCL this module calls."""

    utils: Any
    categories: Any
    convert_to_tool: Any
    to_openapi: Any
    openai_style: Any
    backends: Any
    paths: Any

    def declared(self, functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``functions`` as BFCL's OpenAI Chat Completions handler sends them."""
        tools = self.convert_to_tool(functions, self.to_openapi, self.openai_style)
        return [tool["function"] for tool in tools]


def _bfcl(target: Path) -> _Bfcl:
    with _importable(target):
        utils = importlib.import_module("bfcl_eval.utils")
        handler_utils = importlib.import_module("bfcl_eval.model_handler.utils")
        return _Bfcl(
            utils=utils,
            categories=importlib.import_module("bfcl_eval.constants.category_mapping"),
            convert_to_tool=handler_utils.convert_to_tool,
            to_openapi=importlib.import_module(
                "bfcl_eval.constants.type_mappings"
            ).GORILLA_TO_OPENAPI,
            openai_style=importlib.import_module(
                "bfcl_eval.constants.enums"
            ).ModelStyle.OPENAI_COMPLETIONS,
            backends=importlib.import_module("bfcl_eval.constants.executable_backend_config"),
            paths=importlib.import_module("bfcl_eval.constants.eval_config"),
        )


def load(target: Path) -> BfclSuite:
    """Every function and ground-truth call of the bfcl-eval installed in ``target``."""
    bfcl = _bfcl(target)
    suite = BfclSuite(VERSION)
    prefix = bfcl.categories.VERSION_PREFIX
    answers_path = Path(bfcl.paths.POSSIBLE_ANSWER_PATH)
    for category in bfcl.categories.SINGLE_TURN_CATEGORY:
        source = f"{prefix}_{category}"
        entries = bfcl.utils.load_dataset_entry(category)
        suite.entries[source] = len(entries)
        answers = (
            {answer["id"]: answer for answer in bfcl.utils.load_ground_truth_entry(category)}
            if (answers_path / f"{source}.json").is_file()
            else {}
        )
        language = (
            "java"
            if bfcl.utils.is_java(category)
            else "javascript"
            if bfcl.utils.is_js(category)
            else "python"
        )
        for entry in entries:
            # BFCL's answers name functions as its data does ("math.hypot"); the handler
            # declares them renamed ("math_hypot").
            by_name = {
                raw["name"]: suite.add(source, declared)
                for raw, declared in zip(
                    entry["function"], bfcl.declared(entry["function"]), strict=True
                )
            }
            expected = answers.get(entry["id"], {}).get("ground_truth", [])
            for position, ((name, parameters),) in enumerate(e.items() for e in expected):
                function = by_name[name]
                answer = f"{entry['id']}#{position}"
                for arguments, alternative, as_text in _concrete_calls(
                    function.parameters, parameters, language
                ):
                    suite.calls.append(
                        Call(
                            source,
                            entry["id"],
                            answer,
                            function.key,
                            arguments,
                            alternative,
                            as_text,
                        )
                    )
    _load_multi_turn(bfcl, suite)
    return suite


def _load_multi_turn(bfcl: _Bfcl, suite: BfclSuite) -> None:
    """The functions of ``multi_turn_func_doc/`` (through the multi-turn and agentic
    categories, as BFCL loads them) and the multi-turn ground truth."""
    doc_files = bfcl.backends.MULTI_TURN_FUNC_DOC_FILE_MAPPING
    doc_path = Path(bfcl.paths.MULTI_TURN_FUNC_DOC_PATH)
    names_in = {
        file: {doc["name"] for doc in bfcl.utils.load_file(doc_path / file)}
        for file in sorted(set(doc_files.values()))
    }
    prefix = bfcl.categories.VERSION_PREFIX
    multi_turn = list(bfcl.categories.MULTI_TURN_CATEGORY)
    by_name: dict[str, Function] = {}
    entries_by_category: dict[str, dict[str, Any]] = {}
    counted: dict[str, set[str]] = {}
    for category in multi_turn + list(bfcl.categories.AGENTIC_CATEGORY):
        entries = bfcl.utils.load_dataset_entry(category)
        entries_by_category[category] = {entry["id"]: entry for entry in entries}
        for entry in entries:
            files = [doc_files[name] for name in entry["involved_classes"]]
            for raw, declared in zip(
                entry["function"], bfcl.declared(entry["function"]), strict=True
            ):
                (file,) = (f for f in files if raw["name"] in names_in[f])
                source = f"multi_turn_func_doc/{file}"
                function = suite.add(source, declared)
                counted.setdefault(source, set()).add(f"{category}:{entry['id']}")
                if category in multi_turn:
                    known = by_name.setdefault(function.name, function)
                    if known.key != function.key:
                        raise AssertionError(
                            f"multi-turn function {function.name!r} has two definitions"
                        )
    for source, ids in counted.items():
        suite.entries[source] = len(ids)
    for category in multi_turn:
        source = f"{prefix}_{category}"
        for answer in bfcl.utils.load_ground_truth_entry(category):
            entry = entries_by_category[category][answer["id"]]
            methods = _backend_methods(bfcl, entry["involved_classes"])
            for turn, steps in enumerate(answer["ground_truth"]):
                for step, text in enumerate(steps):
                    name, arguments = _bound_call(text, methods)
                    place = f"{answer['id']}#{turn}.{step}"
                    suite.calls.append(
                        Call(source, answer["id"], place, by_name[name].key, arguments)
                    )


def _backend_methods(bfcl: _Bfcl, classes: list[str]) -> dict[str, Any]:
    """The public methods of the backend classes BFCL runs an entry's calls on, by name."""
    methods: dict[str, Any] = {}
    for name in classes:
        module = importlib.import_module(bfcl.backends.CLASS_FILE_PATH_MAPPING[name])
        for method_name, method in inspect.getmembers(getattr(module, name), inspect.isfunction):
            if not method_name.startswith("_"):
                methods.setdefault(method_name, method)
    return methods


def _bound_call(text: str, methods: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A multi-turn ground-truth call (``"cd(folder='document')"``): the function's name and
    its arguments by parameter name, bound as Python binds them to the backend's method."""
    call = ast.parse(text, mode="eval").body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise AssertionError(f"not a plain call: {text!r}")
    name = call.func.id
    positional = [ast.literal_eval(argument) for argument in call.args]
    keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None}
    bound = inspect.signature(methods[name]).bind(None, *positional, **keywords)
    arguments = dict(bound.arguments)
    del arguments[next(iter(arguments))]  # self
    return name, arguments


# -- a concrete call from BFCL's acceptable values -----------------------------------------------

_LEFT_OUT = object()


def _first_acceptable(alternatives: Any, required: bool) -> Any:
    """The first acceptable value, or _LEFT_OUT: ``""`` first means an optional parameter
    may be left out (a required one cannot be, so its first other value is taken)."""
    if not isinstance(alternatives, list):
        return alternatives
    for value in alternatives:
        if isinstance(value, str) and value == "":
            if not required:
                return _LEFT_OUT
            continue
        return value
    return _LEFT_OUT


def _is_alternatives(value: Any) -> bool:
    """A dictionary of acceptable values per key, as BFCL's answers give a dict parameter
    (its ``dict_checker``)."""
    return isinstance(value, dict) and all(isinstance(v, list) for v in value.values())


def _arguments(schema: Any, answer: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    required = set(schema.get("required", [])) if isinstance(schema, dict) else set()
    arguments = {}
    for name, alternatives in answer.items():
        value = _first_acceptable(alternatives, name in required)
        if value is not _LEFT_OUT:
            arguments[name] = _value(properties.get(name), value)
    return arguments


def _value(schema: Any, value: Any) -> Any:
    """A value as sent: a dict parameter's answer (acceptable values per key) made a dict, a
    list of such dicts each made one (BFCL's ``dict_checker`` and ``list_dict_checker``)."""
    if not isinstance(schema, dict):
        schema = {}
    kind = schema.get("type")
    if _is_alternatives(value) and kind in ("object", None):
        return _arguments(schema, value)
    items = schema.get("items")
    if (
        isinstance(value, list)
        and value
        and all(_is_alternatives(v) for v in value)
        and kind in ("array", None)
        and (not isinstance(items, dict) or items.get("type") in ("object", None))
    ):
        return [_arguments(items, v) for v in value]
    return value


def _as_text(value: Any) -> str:
    """A Java or JavaScript value as a string. BFCL declares every Java and JavaScript
    parameter a string (the value in that language's syntax) and its answers hold the values
    its checker parses back from those strings (``java_type_converter``,
    ``js_type_converter``): a value that is not a string is sent as its JSON text, which
    is JavaScript's literal syntax and, for any value, the string the schema asks for."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _first_place(alternatives: list[Any], required: bool) -> int | None:
    """Where the value [`_first_acceptable`][] takes is among ``alternatives``."""
    for place, value in enumerate(alternatives):
        if not (isinstance(value, str) and value == "") or not required:
            return place
    return None


def _concrete_calls(
    schema: dict[str, Any], answer: Mapping[str, Any], language: str
) -> list[tuple[dict[str, Any], str | None, bool]]:
    """The calls a model may send for ``answer`` (the acceptable values of each parameter):
    the one of each parameter's first acceptable value, then one per other acceptable value
    of a parameter (``""``: left out, for an optional one), the rest as in the first; each
    with its alternative (None for the first) and whether a Java or JavaScript value had to
    be written as text."""
    first = _arguments(schema, answer)
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    found: list[tuple[dict[str, Any], str | None]] = [(first, None)]
    for name, alternatives in answer.items():
        if not isinstance(alternatives, list):
            continue
        taken = _first_place(alternatives, name in required)
        for place, value in enumerate(alternatives):
            if place == taken:
                continue
            if isinstance(value, str) and value == "":
                if name in required:
                    continue  # a required parameter cannot be left out
                other = {k: v for k, v in first.items() if k != name}
            else:
                other = {**first, name: _value(properties.get(name), value)}
            found.append((other, f"{name}[{place}]"))
    if language == "python":
        return [(arguments, alternative, False) for arguments, alternative in found]
    texts = []
    for arguments, alternative in found:
        text = {name: _as_text(_value(None, value)) for name, value in arguments.items()}
        texts.append((text, alternative, text != arguments))
    return texts


# -- what the tests and the benchmark report -----------------------------------------------------


def suite_run(suite: BfclSuite) -> SuiteRun:
    """The suite's functions and distinct calls, to declare and validate in every mode."""
    calls = suite.unique_calls().values()
    return SuiteRun(suite.functions, [(f"{call.source}:{call.entry}", call) for call in calls])


def _kind(error: Any) -> str:
    """What a call got wrong: ``null`` (None where the schema wants a value), ``type``,
    ``enum``, ``required`` (a required argument left out), or the keyword it broke."""
    if error.validator == "type" and error.instance is None:
        return "null"
    return str(error.validator)


def not_fitting(suite: BfclSuite) -> list[tuple[Call, list[str], set[str]]]:
    """Each distinct ground-truth call that does not fit its function's schema (by the
    ``jsonschema`` package): the call, where and why (``$.path: message``), and the kinds of
    its errors (see [`_kind`][])."""
    found = []
    for call in suite.unique_calls().values():
        errors = oracle_errors(suite.functions[call.function].parameters, call.arguments)
        if errors:
            said = [f"{json_path(e.absolute_path)}: {e.message}" for e in errors]
            found.append((call, said, {_kind(e) for e in errors}))
    return found


def figures(suite: BfclSuite, run: SuiteRun) -> dict[str, Any]:
    """The suite's figures, as the benchmarks page shows them: functions per source; per
    source the ground-truth calls (``answers``), the calls made of them (each answer's first
    acceptable values, and one call per other acceptable value), those that do not fit their
    schema; and per provider and mode how the functions were declared and the calls judged."""
    unfit = not_fitting(suite)
    unfit_keys = {call.key for call, _, _ in unfit}
    per_source: dict[str, dict[str, Any]] = {}
    for call in suite.calls:
        row = per_source.setdefault(
            call.source,
            {"answers": set(), "calls": set(), "do_not_fit": set(), "answers_do_not_fit": set()},
        )
        row["answers"].add(call.answer)
        row["calls"].add(call.key)
        if call.key in unfit_keys:
            row["do_not_fit"].add(call.key)
            row["answers_do_not_fit"].add(call.answer)
    kinds: Counter[str] = Counter()
    for _, _, found in unfit:
        kinds.update(found)
    first = {call.key for call in suite.calls if call.alternative is None}
    unique = suite.unique_calls()
    return {
        "package": f"{PACKAGE} {VERSION}",
        "conversion": (
            "load_dataset_entry, then convert_to_tool(functions, GORILLA_TO_OPENAPI, "
            "ModelStyle.OPENAI_COMPLETIONS), as BFCL's OpenAI Chat Completions handler does"
        ),
        "functions": {
            "unique": len(suite.functions),
            "sources": {
                source: {"entries": suite.entries.get(source, 0), "functions": len(keys)}
                for source, keys in suite.sources.items()
            },
        },
        "calls": {
            "answers": len({call.answer for call in suite.calls}),
            "unique": len(unique),
            "first_values": len(first),
            "as_text": sum(call.as_text for call in unique.values()),
            "do_not_fit": {
                "unique": len(unfit),
                "first_values": len(first & unfit_keys),
                "answers": len({call.answer for call in suite.calls if call.key in unfit_keys}),
                "kinds": dict(sorted(kinds.items())),
            },
            "sources": {
                source: {name: len(values) for name, values in row.items()}
                for source, row in per_source.items()
            },
            "first_values_not_fitting": [
                {
                    "entry": call.entry,
                    "function": suite.functions[call.function].name,
                    "errors": said,
                }
                for call, said, _ in unfit
                if call.key in first
            ],
        },
        **run.figures(),
    }
