"""One home for each piece of knowledge: each format has one ``examine``, the
inspect reports read it and parse nothing again, and each rule below is
defined in one module (a second definition fails its test).

Each finder has a planted case that shows it can fail. The modules a finder
allows are named with the reason they may state the rule too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from sources import PACKAGE, imported_names, modules, rel, tree

# --------------------------------------------------------------------------- #
# One examine per format, and no second parse in inspect/
# --------------------------------------------------------------------------- #

FORMATS = {"input": "formats/input_record.py", "checkpoint": "formats/checkpoint/examination.py",
           "predictions": "formats/predictions.py", "trace": "formats/trace.py"}
# The module each format's users import it from: the checkpoint's is its package's one door.
DOORS = {"input": "bob.formats.input_record", "checkpoint": "bob.formats.checkpoint",
         "predictions": "bob.formats.predictions", "trace": "bob.formats.trace"}
REPORTS = {"input": "inspect/record.py", "checkpoint": "inspect/checkpoint.py",
           "predictions": "inspect/predictions.py", "trace": "inspect/trace.py"}


def functions(path: Path) -> set[str]:
    return {n.name for n in ast.walk(tree(path)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_each_format_has_one_public_examine_and_no_private_one() -> None:
    for kind, module in FORMATS.items():
        assert "examine" in functions(PACKAGE / module), f"{module} has no examine() for {kind}"
    defining = {rel(p) for p in modules("formats/*.py", "formats/*/*.py") if functions(p) & {"examine", "_examine"}}
    assert defining == set(FORMATS.values())
    assert not [rel(p) for p in modules() if "_examine" in functions(p)]


def test_each_report_reads_its_formats_examination() -> None:
    import importlib

    for kind, report in REPORTS.items():
        module = "bob." + FORMATS[kind][:-3].replace("/", ".")
        assert importlib.import_module(DOORS[kind]).examine.__module__ == module, f"{DOORS[kind]} opens on another examine"
        assert f"{DOORS[kind]}.examine" in imported_names(tree(PACKAGE / report)), f"{report} does not use examine"


_PARSING_CALLS = {"parse", "parse_stream", "frombuffer", "unpack", "unpack_from", "iter_unpack"}
_PARSING_MODULES = ("construct", "struct", "bob.formats.schema")


def second_parses(path: Path) -> list[str]:
    """What in ``path`` reads a format's bytes itself: an import of construct,
    struct or the schema helpers, or a call that decodes bytes."""
    module = tree(path)
    out = sorted(n for n in imported_names(module) if any(n == m or n.startswith(m + ".") for m in _PARSING_MODULES))
    for node in ast.walk(module):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in _PARSING_CALLS:
                out.append(f"line {node.lineno}: {name}()")
    return out


def test_no_inspect_report_parses_the_bytes_again() -> None:
    found = {rel(p): s for p in modules("inspect/*.py") if (s := second_parses(p))}
    assert not found, found


def test_the_second_parse_finder_can_fail(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("from bob.formats.schema import parse\nimport numpy as np\n"
                       "def f(d):\n    return np.frombuffer(d, 'u1'), parse(S, d)\n", encoding="utf-8")
    assert second_parses(planted) == ["bob.formats.schema", "bob.formats.schema.parse", "line 4: frombuffer()",
                                      "line 4: parse()"]


# --------------------------------------------------------------------------- #
# Each rule defined once
# --------------------------------------------------------------------------- #

# Modules that state a rule a second time on purpose, and why.
INDEPENDENT = "fuzz/oracle.py"  # the contract transcribed independently, to hold bob's readers to it


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _ints(node: ast.AST) -> set[int]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and type(n.value) is int}


def prompt_word_bounds(module: ast.AST) -> list[int]:
    """Lines with an ``or``/``and`` that weighs a word against both the vocabulary and the empty prompt."""
    return sorted({n.lineno for n in ast.walk(module) if isinstance(n, ast.BoolOp)
                   and ({"EMPTY_PROMPT"} & _names(n) or 0xFFFFFFFF in _ints(n))
                   and ({"VOCABULARY"} & _names(n) or 256 in _ints(n))})


def target_agreements(module: ast.AST) -> list[int]:
    """Lines comparing a targets table with the pairs (or a widened table)."""
    out = set()
    for n in ast.walk(module):
        compared = None
        if isinstance(n, ast.Compare) and all(isinstance(op, (ast.Eq, ast.NotEq)) for op in n.ops):
            compared = n
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in (
                "array_equal", "equal", "not_equal"):
            compared = n
        if compared is not None:
            words = " ".join(_names(compared)).lower()
            if "target" in words and ("pair" in words or "widened" in words):
                out.add(n.lineno)
    return sorted(out)


def header_bytes_rules(module: ast.AST) -> list[int]:
    """Lines that take ``header_bytes`` modulo the alignment."""
    return sorted({n.lineno for n in ast.walk(module) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
                   and ({"HEADER_ALIGNMENT"} & _names(n.right) or 64 in _ints(n.right))})


_CELL = re.compile(r"context .*, next ")


def cell_texts(module: ast.AST) -> list[int]:
    """Lines that spell "context r, next j" themselves."""
    out = set()
    for n in ast.walk(module):
        if isinstance(n, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in n.values)
            if _CELL.search(text):
                out.add(n.lineno)
    return sorted(out)


_NOT_BYTES = re.compile(r"must be bytes(?! \(integers)")


def bytes_refusals(module: ast.AST) -> list[int]:
    """Lines that word a "must be bytes" refusal."""
    out = set()
    for n in ast.walk(module):
        if isinstance(n, ast.JoinedStr):
            text = "".join(v.value for v in n.values if isinstance(v, ast.Constant))
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            text = n.value
        else:
            continue
        if _NOT_BYTES.search(text) and not text.lstrip().startswith(("``", "A ", "The ")):
            out.add(n.lineno)
    return sorted(out)


# rule: (finder, its one home, {module: why it may state it too})
RULES = {
    "the prompt-word bound": (prompt_word_bounds, "formats/rules.py", {}),
    "the target agreement": (target_agreements, "formats/rules.py", {INDEPENDENT: "independent oracle"}),
    "the header_bytes alignment rule": (header_bytes_rules, "formats/rules.py", {INDEPENDENT: "independent oracle"}),
    "the 'context r, next j' text": (cell_texts, "formats/constants.py", {
        "inspect/render.py": "shows each byte's escaped text, not its number"}),
    "the 'must be bytes' refusal": (bytes_refusals, "errors.py", {}),
}


def definitions(finder) -> dict[str, list[int]]:
    return {rel(p): lines for p in modules() if (lines := finder(tree(p)))}


def test_each_rule_is_defined_in_its_home_only() -> None:
    problems = []
    for rule, (finder, home, allowed) in RULES.items():
        found = definitions(finder)
        assert home in found, f"{rule}: not found in its home {home} (has the finder gone blind?)"
        extra = {m: lines for m, lines in found.items() if m != home and m not in allowed}
        if extra:
            problems.append(f"{rule} is stated outside {home}: {extra}")
        stale = sorted(set(allowed) - set(found))
        if stale:
            problems.append(f"{rule}: allowed in {stale}, which no longer state it (drop the allowance)")
    assert not problems, "\n".join(problems)


def test_the_rule_finders_can_fail(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def f(w, targets, pairs, hb, i, x):\n"
        "    ok = w < VOCABULARY or w == EMPTY_PROMPT\n"
        "    same = targets[i] != pairs[2 * i + 1]\n"
        "    aligned = hb % 64 == 0\n"
        "    where = f'context {i // 256}, next {i % 256}'\n"
        "    raise TypeError(f'{x} must be bytes, not str')\n", encoding="utf-8")
    module = tree(planted)
    assert prompt_word_bounds(module) == [2]
    assert target_agreements(module) == [3]
    assert header_bytes_rules(module) == [4]
    assert cell_texts(module) == [5]
    assert bytes_refusals(module) == [6]
