"""The house rules a newcomer relies on, checked: small modules, one place
for each piece of layout knowledge, matplotlib in one module only."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "python" / "bob"
RUST = ROOT / "rust"
MAX_LINES = 400  # a module, Python or Rust
MAX_FUNCTION_LINES = 80  # a function, from its ``def`` / ``fn`` line to its last

# The modules whose job is to state the formats' numbers and bytes.
LAYOUT_MODULES = {PACKAGE / "formats" / "constants.py", PACKAGE / "formats" / "layout.py"}
# The contract oracle restates them on purpose: a second reader written from the contract,
# sharing nothing with bob.formats (see test_the_oracle_imports_nothing_from_bob).
ORACLE = PACKAGE / "fuzz" / "oracle.py"
INDEPENDENT_RESTATEMENTS = {ORACLE}
# Numbers that are layout knowledge: the vocabulary, header and file sizes,
# the record's offsets. (Small numbers like 8 or 32 are too common to police
# by value; the layout module names them and tests compare it with the schemas.)
LAYOUT_NUMBERS = {256, 447, 448, 528, 1552, 1564, 65536, 262144, 786432, 786880, 851968}
MAGICS = (b"BOB-INPT", b"BOB-CKPT")
# text.py's escape table covers every byte value 0..255; that 256 is the size
# of a byte, not bob's vocabulary.
BYTE_TABLES = {(PACKAGE / "text.py", "range(256)")}
# A number written in text: digits, with thousands separators ("65,536") or
# underscores ("65_536"); not part of a longer word, number or dotted name,
# nor the name of SHA-256.
NUMBER_IN_TEXT = re.compile(r"(?<!SHA-)(?<![\w.,])(?:\d{1,3}(?:,\d{3})+(?![\w,]*\d)|\d+(?:_\d+)*(?!\w))")


def python_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def rust_sources() -> list[Path]:
    return sorted(RUST.rglob("*.rs"))


def long_modules(paths: list[Path]) -> dict[str, int]:
    """The modules of ``paths`` over :data:`MAX_LINES` lines, and their lengths."""
    lengths = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in paths}
    return {_shown(p): n for p, n in lengths.items() if n > MAX_LINES}


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def python_functions(path: Path):
    """(line, qualified name, lines) of every function and method in ``path``, nested ones too."""
    def walk(node: ast.AST, prefix: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    yield child.lineno, name, child.end_lineno - child.lineno + 1
                yield from walk(child, name + ".")
            else:
                yield from walk(child, prefix)
    yield from walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), "")


RUST_FN = re.compile(r"^\s*(?:pub(?:\([\w:]+\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"\w+\"\s+)?fn\s+(\w+)")


def rust_functions(path: Path):
    """(line, name, lines) of every ``fn`` with a body in ``path``: from its ``fn``
    line to the line whose closing brace matches its first opening one (braces
    counted outside ``//`` comments; a declaration without a body is skipped)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        match = RUST_FN.match(line)
        if not match:
            continue
        depth, opened = 0, False
        for j in range(i, len(lines)):
            code = lines[j].split("//")[0]
            if not opened and code.rstrip().endswith(";") and "{" not in code:
                break  # a trait method's declaration, or an extern fn's
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if opened and depth <= 0:
                yield i + 1, match.group(1), j - i + 1
                break


def long_functions(paths: list[Path]) -> list[str]:
    """``path:line name (N lines)`` for every function over :data:`MAX_FUNCTION_LINES`."""
    found = []
    for path in paths:
        functions = rust_functions(path) if path.suffix == ".rs" else python_functions(path)
        found += [f"{_shown(path)}:{line} {name} ({n} lines)" for line, name, n in functions if n > MAX_FUNCTION_LINES]
    return found


def test_no_module_a_newcomer_must_scroll_for_ever() -> None:
    long = long_modules(python_modules() + rust_sources())
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_function_a_newcomer_must_scroll_for_ever() -> None:
    long = long_functions(python_modules() + rust_sources())
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


# The formats, the inspector, the fuzzer and the interop modules together: no heavier than
# they are now (issue 31 aims at 6,500). Lower this when they get lighter; never raise it
# for a feature: a new capability makes the house lighter or leaves it as light. A fix that
# needs lines raises it by those lines, its commit saying which (git log -L on this line).
FORMAT_HOUSE = ("formats", "inspect", "fuzz", "interop.py", "interop_archive.py")
FORMAT_HOUSE_CEILING = 9_397


def format_house_lines(package: Path) -> int:
    """Lines of the :data:`FORMAT_HOUSE` modules under ``package``."""
    paths = [p for name in FORMAT_HOUSE for p in ([package / name] if name.endswith(".py")
                                                  else sorted((package / name).rglob("*.py")))]
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in paths)


def test_the_format_house_gets_no_heavier() -> None:
    lines = format_house_lines(PACKAGE)
    assert lines <= FORMAT_HOUSE_CEILING, f"formats + inspect + fuzz + interop: {lines} lines"


def test_the_length_checks_can_fail(tmp_path: Path) -> None:
    fine_py, long_py, fine_rs, long_rs = (tmp_path / n for n in ("fine.py", "long.py", "fine.rs", "long.rs"))
    fine_py.write_text("x = 1\n" * MAX_LINES, encoding="utf-8")
    long_py.write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    fine_rs.write_text("// a line\n" * MAX_LINES, encoding="utf-8")
    long_rs.write_text("// a line\n" * (MAX_LINES + 1), encoding="utf-8")
    assert long_modules([fine_py, long_py, fine_rs, long_rs]) == {"long.py": MAX_LINES + 1, "long.rs": MAX_LINES + 1}

    body = "x = 1\n" * (MAX_FUNCTION_LINES - 2)  # a function of exactly MAX_FUNCTION_LINES is fine
    fine_py.write_text(f"def fine():\n{textwrap.indent(body, '    ')}    return x\n", encoding="utf-8")
    long_py.write_text(f"class C:\n    def outer(self):\n        def long():\n{textwrap.indent(body, ' ' * 12)}"
                       f"            return x\n{textwrap.indent(body, ' ' * 8)}        return long\n", encoding="utf-8")
    rust_body = '    let s = format!("{{}}", 1); // } a brace in a comment\n' * (MAX_FUNCTION_LINES - 2)
    fine_rs.write_text(f"pub(crate) fn fine() {{\n{rust_body}}}\ntrait T {{\n    fn declared(&self);\n}}\n",
                       encoding="utf-8")
    long_rs.write_text(f"unsafe fn long() -> u8 {{\n{rust_body}    {{ 1 }}\n}}\n", encoding="utf-8")
    assert [n for _, _, n in python_functions(fine_py)] == [MAX_FUNCTION_LINES]
    assert [n for _, _, n in rust_functions(fine_rs)] == [MAX_FUNCTION_LINES]
    assert long_functions([fine_py, long_py, fine_rs, long_rs]) == [
        f"long.py:2 C.outer ({2 * MAX_FUNCTION_LINES} lines)",
        f"long.rs:1 long ({MAX_FUNCTION_LINES + 1} lines)",
    ]


def _numbers_in_text(text: str):
    """(offset, written, value) of every number written in ``text``."""
    for match in NUMBER_IN_TEXT.finditer(text):
        written = match.group()
        yield match.start(), written, int(written.replace(",", "").replace("_", ""))


def _literals(path: Path):
    source = path.read_text(encoding="utf-8")
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        exempt = any(path == p and snippet in tok.line for p, snippet in BYTE_TABLES)
        if tok.type == tokenize.NUMBER:
            try:
                value = int(tok.string.replace("_", ""), 0)
            except ValueError:
                continue
            if value in LAYOUT_NUMBERS and not exempt:
                yield tok.start[0], tok.string, tok.line.strip()
        # The text of strings and f-strings (one STRING token before Python 3.12,
        # FSTRING_MIDDLE pieces from 3.12): a number written there restates it too.
        elif tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", None):
            if tok.type == tokenize.STRING and tok.string.lstrip("rRuUfF")[:1] in "bB" or tok.string[:2] in ("br", "Br", "bR", "BR", "rb", "rB", "Rb", "RB"):
                if any(m.decode() in tok.string for m in MAGICS):
                    yield tok.start[0], tok.string, tok.line.strip()
                continue
            for offset, written, value in _numbers_in_text(tok.string):
                if value in LAYOUT_NUMBERS and not exempt:
                    line = tok.start[0] + tok.string.count("\n", 0, offset)
                    yield line, written, source.splitlines()[line - 1].strip()


def test_no_layout_literal_outside_the_layout_modules() -> None:
    found = [f"{p.relative_to(ROOT)}:{line}: {text!r} in {src[:80]!r}"
             for p in python_modules() if p not in LAYOUT_MODULES | INDEPENDENT_RESTATEMENTS
             for line, text, src in _literals(p)]
    assert not found, "restated layout knowledge (use bob.formats.constants / layout):\n" + "\n".join(found)


def test_the_literal_check_can_fail(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('HEADER = 448\nMAGIC = b"BOB-CKPT"\nrows = range(256)\n'
                       'said = "a 786,432-byte plane"\nf"{n} of 1,564 bytes, {65_536} values"\n'
                       '"""A docstring:\n\nthe header is 448 bytes."""\nfine = "steps 1,2 and 10, v2.56, x256, 2560, SHA-256, sha256"\n',
                       encoding="utf-8")
    assert [(line, text) for line, text, _ in _literals(planted)] == [
        (1, "448"), (2, 'b"BOB-CKPT"'), (3, "256"), (4, "786,432"), (5, "1,564"), (5, "65_536"), (8, "448")]


def _bob_imports(source: str) -> list[str]:
    """Every ``import bob…`` / ``from bob… import`` (relative imports too) in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == "bob" or a.name.startswith("bob.")]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level or module == "bob" or module.startswith("bob."):
                found.append("." * node.level + module)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                "__import__", "import_module"):
            found.append(ast.unparse(node))
    return found


def test_the_oracle_imports_nothing_from_bob() -> None:
    """The oracle is independent: no import of bob in its source, and loaded on its own (with
    ``bob`` made unimportable) it reads the golden files."""
    assert _bob_imports(ORACLE.read_text(encoding="utf-8")) == []
    script = (
        "import importlib.util, sys\n"
        "sys.modules['bob'] = None  # any import of bob now fails\n"
        f"spec = importlib.util.spec_from_file_location('oracle', {str(ORACLE)!r})\n"
        "oracle = importlib.util.module_from_spec(spec); spec.loader.exec_module(oracle)\n"
        f"golden = {str(PACKAGE / 'data' / 'golden')!r}\n"
        "for fmt in ('input', 'checkpoint', 'predictions'):\n"
        "    assert oracle.check(fmt, open(f'{golden}/{fmt}-abracadabra' + ('-step10' if fmt == 'checkpoint' else '') + '.bin', 'rb').read()) is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('bob')))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['bob']", out.stdout  # only the blocker itself


def test_the_oracle_import_check_can_fail() -> None:
    planted = "import struct\nfrom bob.formats import constants\nfrom . import layout\nimport bob.errors as e\n"
    assert _bob_imports(planted) == ["bob.formats", ".", "bob.errors"]
