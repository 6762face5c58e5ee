"""The contract travels with bob: the normative document, errata included,
is package data (``bob/data/contract/bob-v1.md``, in the checkout and in the
wheel: tests/test_wheel.py), identical to the design document it is copied
from, and every document or message that cites it names that copy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import bob

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "python" / "bob" / "data" / "contract" / "bob-v1.md"
# Where the design document lives beside a checkout (a clone's ../shared).
# The shipped copy, in a checkout and inside an installed package.
CITATIONS = ("python/bob/data/contract/bob-v1.md", "bob/data/contract/bob-v1.md")
DESIGN = ROOT.parent / "shared" / "design" / "bob-v1.md"


def test_contract_document_is_the_shipped_copy():
    assert Path(bob.contract_document()) == SHIPPED
    text = SHIPPED.read_text(encoding="utf-8")
    assert text.startswith("# bob v1 — the normative contract")
    assert "\n## Errata" in text  # the contract's own errata travel with it


@pytest.mark.skipif(not DESIGN.exists(), reason="no ../shared/design/bob-v1.md beside this checkout")
def test_the_shipped_copy_is_the_design_document():
    assert SHIPPED.read_bytes() == DESIGN.read_bytes()


def _cited_files():
    for pattern in ("*.md", "python/**/*.py", "tests/**/*.py", "formats/**/*", "docs/**/*.md", "scripts/*",
                    "benchmarks/*.py"):
        for path in ROOT.glob(pattern):
            if path.is_file() and path.suffix in (".md", ".py", ".sh", "") and path != SHIPPED:
                yield path


def test_every_citation_names_a_path_the_user_has():
    """A document or message cites the contract by the shipped copy's path
    (in the checkout) or through contract_document() (installed), never by
    a path outside the project."""
    offenders = []
    this = Path(__file__).resolve()
    for path in _cited_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in re.finditer(r"[\w./-]*bob-v1\.md", text):
            if m.group(0) in CITATIONS or path.resolve() == this:
                continue
            if m.group(0) == "bob-v1.md" and path.name == "contract.py":  # contract_document() joins the path
                continue
            offenders.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
        if "shared/design" in text and path.resolve() != this:
            offenders.append(f"{path.relative_to(ROOT)}: shared/design")
    assert offenders == []
