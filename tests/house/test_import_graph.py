"""``bob.formats``' imports run one way: schema ← examination ← typed object,
per format, with each reader beside its loader. And no import cycle anywhere in
the package, even through an import inside a function."""

from __future__ import annotations

from pathlib import Path

from sources import PACKAGE, imported_names, module_name, modules, rel, tree

# Each module of bob.formats and its layer: a module imports only modules of
# lower layers. A new module must be given its place here.
LAYERS = {
    "bob.formats.constants": 0,  # numbers and contract strings (standard library)
    "bob.formats.layout": 1,  # the one description of the layout (standard library)
    "bob.formats.kinds": 1,
    "bob.formats.contract": 1,
    "bob.formats.rules": 2,  # the value rules as data (standard library)
    "bob.formats.schema": 3,  # construct building blocks, parse, layout tables
    "bob.formats.canonical": 3,  # the input record's, the predictions' and the trace's fast path (standard library)
    "bob.formats.checkpoint.header": 3,  # checkpoint: the one header builder, the canonical file (standard library)
    "bob.formats.files": 4,  # the one bounded reader of a format's file
    "bob.formats.checkpoint.schema": 5,  # checkpoint: schema
    "bob.formats.checkpoint.state": 5,  # checkpoint: the state checks (resuming, writing)
    "bob.formats.checkpoint.examination": 6,  # checkpoint: examine (the canonical file first)
    "bob.formats.checkpoint.typed": 7,  # checkpoint: Checkpoint, load_checkpoint, read_checkpoint_file
    "bob.formats.checkpoint": 8,  # checkpoint: the one door (lazy names from the modules above)
    "bob.formats.input_record": 5,  # input: schema, examine, InputRecord, load_input, read_input_file
    "bob.formats.predictions": 5,  # predictions: the same
    "bob.formats.trace": 5,  # trace: the same
    "bob.formats.docs": 9,  # layout and rule tables over sample files of every format
}


def _resolve(name: str, known: set[str]) -> str | None:
    """The package module an imported name lives in (``bob.formats.checkpoint.typed.Checkpoint``
    → ``bob.formats.checkpoint.typed``), or None for anything outside the package."""
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
    names = {module_name(p) for p in modules("formats/*.py", "formats/*/*.py")} - {"bob.formats"}
    assert names == set(LAYERS)


def test_the_formats_import_only_downwards() -> None:
    graph = import_graph(modules())
    assert downward_violations(graph) == []


def test_no_import_cycle_in_the_package() -> None:
    assert cycles(import_graph(modules())) == []


# The checkpoint is a package with one door: outside it, its rooms are imported
# only by the fuzzer's instruments, which replace names inside them.
ROOMS_REACHED_PAST_THE_DOOR = {"fuzz/digests.py": "memoizes the digests and the layout inside the rooms"}


def past_the_door(paths: list[Path], door: str = "bob.formats.checkpoint") -> dict[str, list[str]]:
    """The modules outside ``door``'s package that import one of its rooms, and the rooms."""
    out = {}
    for p in paths:
        if module_name(p).startswith(door + ".") or module_name(p) == door:
            continue
        rooms = sorted(n for n in imported_names(tree(p)) if n.startswith(door + ".")
                       and (PACKAGE.parent / n.replace(".", "/")).with_suffix(".py").exists())
        if rooms:
            out[rel(p)] = rooms
    return out


def test_the_checkpoint_is_entered_by_its_door_only() -> None:
    import bob.formats.checkpoint as door

    for room, names in door._ROOMS.items():
        module = __import__(f"bob.formats.checkpoint.{room}", fromlist=["__all__"])
        assert list(names) == module.__all__, f"the door's list of {room} differs from its __all__"
    found = past_the_door(modules())
    assert set(found) == set(ROOMS_REACHED_PAST_THE_DOOR), found


def test_the_graph_checks_can_fail(tmp_path: Path) -> None:
    package = tmp_path / "bob"
    room = package / "formats" / "checkpoint"
    room.mkdir(parents=True)
    for init in (package, package / "formats", room):
        (init / "__init__.py").write_text("", encoding="utf-8")
    (room / "examination.py").write_text("from bob.formats.checkpoint.schema import HEADER_BODY\n", encoding="utf-8")
    (room / "schema.py").write_text("def f():\n    from bob.formats.checkpoint import examination\n", encoding="utf-8")
    graph = import_graph(sorted(package.rglob("*.py")), package)
    assert graph["bob.formats.checkpoint.schema"] == {"bob.formats.checkpoint.examination"}
    assert cycles(graph) == [["bob.formats.checkpoint.examination", "bob.formats.checkpoint.schema"]]
    assert downward_violations(graph) == ["bob.formats.checkpoint.schema (layer 5) imports "
                                          "bob.formats.checkpoint.examination (layer 6)"]


def test_the_cycle_check_can_fail_across_the_package(tmp_path: Path) -> None:
    package = tmp_path / "bob"
    (package / "fuzz").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "fuzz" / "__init__.py").write_text("", encoding="utf-8")
    (package / "fuzz" / "campaign.py").write_text("from bob.fuzz.loop import seeded_loop\n", encoding="utf-8")
    (package / "fuzz" / "loop.py").write_text("def f():\n    from bob.fuzz.campaign import MAX_LEN\n",
                                               encoding="utf-8")
    (package / "fuzz" / "common.py").write_text("import bob.fuzz.campaign\n", encoding="utf-8")
    (package / "options.py").write_text("def f():\n    from bob.commands import Refused\n", encoding="utf-8")
    (package / "commands.py").write_text("from bob.options import count_option\n", encoding="utf-8")
    graph = import_graph(sorted(package.rglob("*.py")), package)
    assert cycles(graph) == [["bob.commands", "bob.options"], ["bob.fuzz.campaign", "bob.fuzz.loop"]]
