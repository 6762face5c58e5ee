"""``bob.formats``' imports run one way: schema ← examination ← typed object,
per format, with each reader beside its loader; no cycle, even through an
import inside a function, and none that leaves the package and comes back. And no
import cycle among ``bob.fuzz``'s modules."""

from __future__ import annotations

from pathlib import Path

from sources import PACKAGE, imported_names, module_name, modules, tree

# Each module of bob.formats and its layer: a module imports only modules of
# lower layers. A new module must be given its place here.
LAYERS = {
    "bob.formats.constants": 0,  # numbers and contract strings (standard library)
    "bob.formats.layout": 1,  # the one description of the layout (standard library)
    "bob.formats.kinds": 1,
    "bob.formats.contract": 1,
    "bob.formats.rules": 2,  # the value rules as data (standard library)
    "bob.formats.schema": 3,  # construct building blocks, parse, layout tables
    "bob.formats.canonical": 3,  # the one header builder, the fast path's files (standard library)
    "bob.formats.files": 4,  # the one bounded reader of a format's file
    "bob.formats.envelope_schema": 5,  # checkpoint: schema
    "bob.formats.checks": 6,  # checkpoint: examine
    "bob.formats.envelope": 7,  # checkpoint: Checkpoint, load_checkpoint, read_checkpoint_file
    "bob.formats.input_record": 5,  # input: schema, examine, InputRecord, load_input, read_input_file
    "bob.formats.predictions": 5,  # predictions: the same
    "bob.formats.docs": 8,  # layout and rule tables over sample files of every format
}


def _resolve(name: str, known: set[str]) -> str | None:
    """The package module an imported name lives in (``bob.formats.envelope.Checkpoint``
    → ``bob.formats.envelope``), or None for anything outside the package."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(paths: list[Path], package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module's imports of other modules of the package (any depth, any
    kind that runs: an ``if TYPE_CHECKING:`` import is a type annotation's, never executed)."""
    names = {module_name(p, package): p for p in paths}
    known = set(names)
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        targets = {_resolve(n, known) for n in imported_names(tree(path), runtime_only=True)}
        graph[name] = {t for t in targets if t is not None and t != name and not name.startswith(t + ".")
                       and t != name.rpartition(".")[0]}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def downward_violations(graph: dict[str, set[str]]) -> list[str]:
    return [f"{a} (layer {LAYERS[a]}) imports {b} (layer {LAYERS[b]})"
            for a, targets in sorted(graph.items()) if a in LAYERS
            for b in sorted(targets) if b in LAYERS and LAYERS[b] >= LAYERS[a]]


def test_every_module_of_the_formats_has_its_layer() -> None:
    names = {module_name(p) for p in modules("formats/*.py")} - {"bob.formats"}
    assert names == set(LAYERS)


def test_the_formats_import_only_downwards() -> None:
    graph = import_graph(modules())
    assert downward_violations(graph) == []


def test_no_import_cycle_touches_the_formats() -> None:
    graph = import_graph(modules())
    assert [c for c in cycles(graph) if any(m.startswith("bob.formats.") for m in c)] == []


def test_the_graph_checks_can_fail(tmp_path: Path) -> None:
    package = tmp_path / "bob"
    (package / "formats").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "formats" / "__init__.py").write_text("", encoding="utf-8")
    (package / "formats" / "checks.py").write_text("from bob.formats.envelope_schema import HEADER_BODY\n",
                                                   encoding="utf-8")
    (package / "formats" / "envelope_schema.py").write_text(
        "def f():\n    from bob.formats.checks import examine\n", encoding="utf-8")
    graph = import_graph(sorted(package.rglob("*.py")), package)
    assert graph["bob.formats.envelope_schema"] == {"bob.formats.checks"}
    assert cycles(graph) == [["bob.formats.checks", "bob.formats.envelope_schema"]]
    assert downward_violations(graph) == ["bob.formats.envelope_schema (layer 5) imports bob.formats.checks (layer 6)"]


def fuzz_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles among ``bob.fuzz``'s modules (an import inside a function counts)."""
    return [c for c in cycles(graph) if any(m == "bob.fuzz" or m.startswith("bob.fuzz.") for m in c)]


def test_no_import_cycle_touches_the_fuzz_package() -> None:
    assert fuzz_cycles(import_graph(modules())) == []


def test_the_fuzz_cycle_check_can_fail(tmp_path: Path) -> None:
    package = tmp_path / "bob"
    (package / "fuzz").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "fuzz" / "__init__.py").write_text("", encoding="utf-8")
    (package / "fuzz" / "campaign.py").write_text("from bob.fuzz.loop import seeded_loop\n", encoding="utf-8")
    (package / "fuzz" / "loop.py").write_text("def f():\n    from bob.fuzz.campaign import MAX_LEN\n",
                                               encoding="utf-8")
    (package / "fuzz" / "common.py").write_text("import bob.fuzz.campaign\n", encoding="utf-8")
    graph = import_graph(sorted(package.rglob("*.py")), package)
    assert fuzz_cycles(graph) == [["bob.fuzz.campaign", "bob.fuzz.loop"]]
