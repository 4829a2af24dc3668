"""Public test suites through toolwire: the Berkeley Function Calling Leaderboard (BFCL v4) and
the official JSON Schema Test Suite (draft 2020-12).

The figures tests/public_suites/test_bfcl.py asserts on (it writes the same ones where
``TOOLWIRE_SUITE_FIGURES`` says), computed by its helpers (tests/public_suites/):

- functions: every unique function of BFCL (by name and parameters) per source, converted as
  BFCL's own OpenAI handler does;
- declared: per provider and mode (strict or not, Gemini's two schema fields), how many were
  declared, accepted as they are or converted, sent strict, and any a provider's SDK type or
  toolwire's rules refuse;
- calls: BFCL's ground-truth calls (each answer's first acceptable values, and one call per
  other acceptable value), those that do not fit their schema by the ``jsonschema`` package,
  and per provider and mode how many toolwire accepted and rejected, and any disagreement.

bfcl-eval is installed once with pip (without its dependencies) into the suites' cache
(``TOOLWIRE_SUITES_CACHE``, by default ``~/.cache/toolwire-suites``).

    python benchmarks/public_suites.py [--json FILE]

The JSON Schema Test Suite (tests/public_suites/test_json_schema_suite.py asserts the same
figures): every draft 2020-12 case, formats included, through a tool with the case's schema
and a call with its instance; how many agree, fail open, fail closed by a documented choice.

With ``--json FILE`` the figures are also written to FILE as JSON, one key per suite
(``bfcl``, ``json_schema_test_suite``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from public_suites.bfcl_suite import (
    Unavailable,
    figures,
    install,
    load,
    suite_run,
)
from public_suites.json_schema_suite import figures as json_schema_figures
from public_suites.json_schema_suite import remotes_of, suite_dir
from public_suites.suite_checks import modes


def _print_bfcl(found: dict[str, Any]) -> None:
    functions, calls = found["functions"], found["calls"]
    print(f"{found['package']}: {functions['unique']} unique functions")
    print(f"  converted with {found['conversion']}\n")
    print(f"{'source':48} {'entries':>8} {'functions':>10}")
    for source, row in functions["sources"].items():
        print(f"{source:48} {row['entries']:8} {row['functions']:10}")
    unfit = calls["do_not_fit"]
    print(
        f"\n{calls['answers']} ground-truth calls (answers), {calls['unique']} distinct calls "
        f"made of their acceptable values ({calls['first_values']} of first values)"
    )
    print(f"{'source':36} {'answers':>8} {'calls':>7} {'unfit':>6} {'answers w/ unfit':>17}")
    for source, row in calls["sources"].items():
        print(
            f"{source:36} {row['answers']:8} {row['calls']:7} {row['do_not_fit']:6} "
            f"{row['answers_do_not_fit']:17}"
        )
    kinds = ", ".join(f"{kind} {n}" for kind, n in unfit["kinds"].items())
    print(
        f"\ndo not fit their schema: {unfit['unique']} distinct calls ({kinds}), from "
        f"{unfit['answers']} answers; {unfit['first_values']} calls of first values:"
    )
    for call in calls["first_values_not_fitting"]:
        print(f"  {call['entry']} {call['function']}: {'; '.join(call['errors'])[:160]}")
    print(
        f"\n{'provider':20} {'mode':32} {'declared':>9} {'as is':>6} {'strict':>7} "
        f"{'problems':>9} {'accepted':>9} {'rejected':>9} {'disagree':>9}"
    )
    for mode in modes():
        declared = found["declared"][mode.provider][mode.label]
        validated = found["validated"][mode.provider][mode.label]
        problems = declared["problems"] + validated["unclear"] + validated["altered"]
        print(
            f"{mode.provider:20} {mode.label:32} {declared['declared']:9} "
            f"{declared['accepted_as_is']:6} {declared['strict']:7} {problems:9} "
            f"{validated['accepted']:9} {validated['rejected']:9} "
            f"{validated['disagreements']:9}"
        )
        for reason, n in declared["not_strict"].items():
            print(f"{'':20}   not strict ({n}): {reason}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    args = parser.parse_args()
    start = time.monotonic()
    try:
        target = install()
    except Unavailable as exc:
        print(f"bfcl-eval is not available: {exc}", file=sys.stderr)
        return 1
    suite = load(target)
    found = figures(suite, suite_run(suite))
    _print_bfcl(found)
    schema_suite = suite_dir()
    decided = json_schema_figures(schema_suite, remotes_of(schema_suite))
    _print_json_schema(decided)
    print(f"\n{time.monotonic() - start:.1f} s")
    if args.json:
        both = {"bfcl": found, "json_schema_test_suite": decided}
        text = json.dumps(both, indent=2, ensure_ascii=False) + "\n"
        Path(args.json).write_text(text, encoding="utf-8")
    return 0


def _print_json_schema(found: dict[str, Any]) -> None:
    print(f"\n{found['package']}: {found['cases']} cases")
    print(
        f"  agree {found['agree']}, fail open {found['fail_open']}, fail closed (documented "
        f"choices) {found['fail_closed']}, refused {found['refused']}: "
        f"{found['agreement']:.1%} agreement, "
        f"{found['agreement_without_documented_choices']:.1%} without the documented choices"
    )


if __name__ == "__main__":
    sys.exit(main())
