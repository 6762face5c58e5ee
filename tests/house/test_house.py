"""The house rules a newcomer relies on, checked: small modules, one place
for each piece of layout knowledge, matplotlib in one module only."""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "python" / "bob"
MAX_LINES = 500

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


def python_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_a_newcomer_must_scroll_for_ever() -> None:
    long = {str(p.relative_to(ROOT)): n for p in python_modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def _literals(path: Path):
    source = path.read_text(encoding="utf-8")
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NUMBER:
            try:
                value = int(tok.string.replace("_", ""), 0)
            except ValueError:
                continue
            if value in LAYOUT_NUMBERS and not any(
                    path == p and snippet in tok.line for p, snippet in BYTE_TABLES):
                yield tok.start[0], tok.string, tok.line.strip()
        elif tok.type == tokenize.STRING and tok.string[:1] in "bB":
            if any(m.decode() in tok.string for m in MAGICS):
                yield tok.start[0], tok.string, tok.line.strip()


def test_no_layout_literal_outside_the_layout_modules() -> None:
    found = [f"{p.relative_to(ROOT)}:{line}: {text!r} in {src[:80]!r}"
             for p in python_modules() if p not in LAYOUT_MODULES | INDEPENDENT_RESTATEMENTS
             for line, text, src in _literals(p)]
    assert not found, "restated layout knowledge (use bob.formats.constants / layout):\n" + "\n".join(found)


def test_the_literal_check_can_fail(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('HEADER = 448\nMAGIC = b"BOB-CKPT"\nrows = range(256)\n', encoding="utf-8")
    assert [line for line, _, _ in _literals(planted)] == [1, 2, 3]


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


def test_only_the_heatmap_module_imports_matplotlib() -> None:
    users = [str(p.relative_to(ROOT)) for p in python_modules() if "matplotlib" in p.read_text(encoding="utf-8")
             and any(line.lstrip().startswith(("import matplotlib", "from matplotlib"))
                     for line in p.read_text(encoding="utf-8").splitlines())]
    allowed = {"python/bob/inspect/heatmap.py", "python/bob/qualify/report.py"}
    assert set(users) <= allowed, users
