"""The shape of the bob.inspect package: small modules, matplotlib in one of
them, no format constants or escaping of its own."""

from __future__ import annotations

import re
from pathlib import Path

import bob.inspect

PACKAGE = Path(bob.inspect.__file__).parent
MODULES = sorted(PACKAGE.glob("*.py"))


def test_every_module_is_small():
    assert {p.name for p in MODULES} >= {"__init__.py", "__main__.py", "cli.py", "render.py", "heatmap.py",
                                         "checkpoint.py", "record.py", "predictions.py"}
    for path in MODULES:
        assert len(path.read_text().splitlines()) < 500, path.name


def test_only_the_heatmap_imports_matplotlib():
    for path in MODULES:
        imports = re.findall(r"^\s*(?:from|import)\s+matplotlib", path.read_text(), flags=re.MULTILINE)
        assert bool(imports) == (path.name == "heatmap.py"), path.name


def test_no_magic_literals_or_escaping_of_its_own():
    for path in MODULES:
        source = path.read_text()
        assert 'b"BOB-' not in source and "def esc" not in source, path.name
        assert "\\\\x{" not in source, path.name  # no \\xNN escaping by hand: bob.text does it
        assert "reshape(256" not in source and "os.read(" not in source and "os.fstat(" not in source, path.name
