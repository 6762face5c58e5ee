"""The rules the package's comments and documents state, held by tests.

Each test reads the package's source (``ast``, imports inside functions
included) and names the modules a rule allows; each has a planted case that
shows it can fail.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from conftest import GOLDEN
from sources import PACKAGE, imported_names, importers, module_name, modules, rel, tree


def test_only_bob_core_and_the_binding_fuzz_target_import_the_extension() -> None:
    # bob/core.py: "the package's door to bob._core".
    assert importers("bob._core", modules()) == {"core.py", "fuzz/core_target.py"}


def test_matplotlib_is_imported_by_the_heatmap_the_qualification_report_and_the_plot_extra_s_check_only() -> None:
    assert importers("matplotlib", modules()) == {"inspect/heatmap.py", "qualify/report.py", "distribution.py"}


def test_the_import_finder_sees_imports_inside_functions(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    from bob import _core\n\ndef g():\n    __import__('matplotlib.pyplot')\n",
                       encoding="utf-8")
    assert {"bob._core", "matplotlib.pyplot"} <= imported_names(tree(planted))


# --------------------------------------------------------------------------- #
# Files are read and replaced through bob.fileio
# --------------------------------------------------------------------------- #

# bob/fileio.py: "bob-run, bob-fixture, bob-inspect and the library read and
# replace files only through here".
THROUGH_FILEIO = ("run.py", "fixture.py", "commands.py", "invocation.py", "__init__.py", "__main__.py", "core.py",
                  "errors.py", "text.py", "formats/*.py", "inspect/*.py")
_PATH_METHODS = {"read_bytes", "write_bytes", "read_text", "write_text", "touch", "unlink", "mkdir", "rmdir",
                 "symlink_to", "hardlink_to"}  # (not "replace": every str has one; os.replace is below)
_OS_CALLS = {"open", "replace", "rename", "link", "unlink", "remove", "truncate", "mkdir", "makedirs", "rmdir"}
# text.py opens /dev/null over a broken stdout: not a file it was given.
FILE_ACCESS_ALLOWED = {("text.py", "os.open(os.devnull")}


def file_access(path: Path) -> list[tuple[int, str]]:
    """(line, source) of each call in ``path`` that opens, reads, writes,
    renames or removes a file other than through :mod:`bob.fileio`."""
    source = path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        hit = (isinstance(func, ast.Name) and func.id == "open") or (
            isinstance(func, ast.Attribute) and (
                func.attr in _PATH_METHODS and not (isinstance(func.value, ast.Name) and func.value.id == "os")
                or func.attr in _OS_CALLS and isinstance(func.value, ast.Name) and func.value.id in ("os", "shutil")
                or isinstance(func.value, ast.Name) and func.value.id == "shutil"))
        if hit:
            found.append((node.lineno, ast.get_source_segment(source, node) or ""))
    return found


def test_the_commands_and_the_library_touch_files_only_through_fileio() -> None:
    found = [f"{rel(p)}:{line}: {src[:90]}" for p in modules(*THROUGH_FILEIO)
             for line, src in file_access(p)
             if not any(rel(p) == where and src.startswith(snippet) for where, snippet in FILE_ACCESS_ALLOWED)]
    assert not found, "file access outside bob.fileio:\n" + "\n".join(found)


def test_the_file_access_finder_can_fail(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("import os, shutil\nopen('x')\nos.replace('a', 'b')\np.write_bytes(b'')\n"
                       "shutil.copyfile('a', 'b')\nos.path.join('a')\n", encoding="utf-8")
    assert [line for line, _ in file_access(planted)] == [2, 3, 4, 5]


# --------------------------------------------------------------------------- #
# No small number used as an offset or a size outside the layout's home
# --------------------------------------------------------------------------- #

# bob/formats/layout.py: "nothing else in the formats layer or the inspect
# reports writes an offset, a size or a struct format of these files as a literal".
LITERAL_SCOPE = ("formats/*.py", "inspect/*.py")
LAYOUT_HOMES = {"formats/constants.py", "formats/layout.py"}
# Words that make an expression a place in a file.
_PLACE_WORDS = {"offset", "offsets", "base", "at", "pos", "end", "start", "header_bytes", "hb", "size", "length",
                "chunk_bytes", "CHUNK_BYTES", "PARAMETER_COUNT", "data", "raw", "view", "head"}
# Numbers that are not layout: (module, snippet of the line, why).
LITERAL_ALLOWED = {
    ("inspect/render.py", "[:16]", "the first 16 hex digits of a SHA-256 in a text table"),
    ("inspect/render.py", "k[:-3]", "'tag_ok' shown as 'tag'"),
    ("inspect/diff.py", "m.group(2)", "a regular expression's group"),
}
_AT_CALLS = {"unpack_from", "pack_into", "frombuffer", "seek"}  # calls whose later arguments place bytes
_STRUCT_FORMAT = re.compile(r"^[<>=!@][0-9]*[xcbB?hHiIlLqQnNefdspPu]+[0-9]*$")


def _numbers(node: ast.AST):
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and type(n.value) is int and abs(n.value) >= 2:
            yield n


def _words(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def layout_literals(path: Path) -> list[tuple[int, str, str]]:
    """(line, literal, source line) of each number that places or sizes bytes
    (a slice bound, an ``offset=``, arithmetic on a place) and each ``struct``
    or NumPy byte-order format written out."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found: dict[tuple[int, int], str] = {}

    def add(n: ast.Constant) -> None:
        found[(n.lineno, n.col_offset)] = repr(n.value)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            for bound in (node.slice.lower, node.slice.upper):
                if bound is not None:
                    for n in _numbers(bound):
                        add(n)
        elif isinstance(node, ast.keyword) and node.arg == "offset":
            for n in _numbers(node.value):
                add(n)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            if _words(node) & _PLACE_WORDS:
                for side in (node.left, node.right):
                    if isinstance(side, ast.Constant) and type(side.value) is int and abs(side.value) >= 2:
                        add(side)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _STRUCT_FORMAT.match(node.value):
            add(node)
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice) and (
                _words(node.value) & _PLACE_WORDS):
            for n in _numbers(node.slice):  # data[8]: a byte at a place
                add(n)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _AT_CALLS:
            for arg in node.args[1:]:  # unpack_from(data, 16), frombuffer(data, dtype, 3, 16): where and how many
                for n in _numbers(arg):
                    add(n)
    return [(line, text, lines[line - 1].strip()) for (line, _), text in sorted(found.items())]


def test_no_layout_number_outside_the_layouts_home() -> None:
    found = [f"{rel(p)}:{line}: {text} in {src[:90]!r}" for p in modules(*LITERAL_SCOPE)
             if rel(p) not in LAYOUT_HOMES
             for line, text, src in layout_literals(p)
             if not any(rel(p) == where and snippet in src for where, snippet, _ in LITERAL_ALLOWED)]
    assert not found, "layout numbers written out (name them in bob.formats.layout):\n" + "\n".join(found)


def test_the_layout_number_finder_catches_small_offsets(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("a = data[:8]\nb = Error(offset=base + 4 * i)\nc = at + 32\nd = np.frombuffer(x, '<u4')\n"
                       "e = rows[2]\nf = count * 3\n", encoding="utf-8")
    assert [line for line, _, _ in layout_literals(planted)] == [1, 2, 3, 4]


# --------------------------------------------------------------------------- #
# Nothing is int()-ed
# --------------------------------------------------------------------------- #

# bob/errors.py integer_value: "every door of the library that takes an
# integer asks this ...: nothing is int()-ed".
DOORS = ("formats/*.py", "core.py", "invocation.py", "__init__.py")


def int_of_arguments(path: Path) -> list[tuple[int, str]]:
    """``int(x)`` where ``x`` is a parameter of the enclosing function or an
    attribute of ``self``: a caller's value converted instead of checked."""
    source = path.read_text(encoding="utf-8")
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
        for node in ast.walk(fn):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int"
                    and len(node.args) == 1):
                arg = node.args[0]
                if (isinstance(arg, ast.Name) and arg.id in params) or (
                        isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id == "self"):
                    found.append((node.lineno, ast.get_source_segment(source, node) or ""))
    return found


def test_the_layout_number_finder_catches_small_numbers_as_places(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("a = data[8]\nb = U64.unpack_from(raw, 16)\nc = np.frombuffer(buf, dtype, 3, 24)\n"
                       "d = rows[2]\ne = U64.unpack_from(raw, at)\n", encoding="utf-8")
    assert [(line, text) for line, text, _ in layout_literals(planted)] == [(1, "8"), (2, "16"), (3, "3"), (3, "24")]


def test_no_door_of_the_library_int_s_a_callers_value() -> None:
    found = [f"{rel(p)}:{line}: {src}" for p in modules(*DOORS) for line, src in int_of_arguments(p)]
    assert not found, "use bob.errors.integer_value / integer_field:\n" + "\n".join(found)


def test_the_int_finder_can_fail(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("def f(n, a):\n    return int(n) + int(a[0])\n\nclass C:\n    def g(self):\n"
                       "        return int(self.step)\n", encoding="utf-8")
    assert [line for line, _ in int_of_arguments(planted)] == [2, 6]


# --------------------------------------------------------------------------- #
# Exit-code lists name every code
# --------------------------------------------------------------------------- #

COMMANDS = ("run.py", "fixture.py", "inspect/cli.py", "fuzz/cli.py", "qualify/cli.py")
# A command whose parser (and its epilog's exit codes) lives in a module of its own.
PARSER_MODULES = {"run.py": "run_options.py"}


def exit_codes(tree: ast.AST) -> set[int]:
    """The codes a command module can return: the ``EXIT_*`` constants it
    names, the numbers it returns, and 130 when it catches KeyboardInterrupt."""
    from bob import commands
    from bob.inspect import common

    named = {**vars(commands), **vars(common)}
    codes: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id.startswith("EXIT_") and node.id in named:
            codes.add(named[node.id])
        elif isinstance(node, ast.Return) and node.value is not None:
            values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            codes |= {v.value for v in values if isinstance(v, ast.Constant) and type(v.value) is int}
        elif isinstance(node, ast.ExceptHandler) and isinstance(node.type, ast.Name) and (
                node.type.id == "KeyboardInterrupt"):
            codes.add(130)
    return codes


def exit_code_lists(tree: ast.AST) -> list[str]:
    """Every string in the module that lists exit codes (docstrings, epilogs)."""
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and "exit codes:" in n.value.lower()]


def missing_exit_codes(path: Path, parser: "Path | None" = None) -> list[str]:
    module = tree(path)
    codes = exit_codes(module)
    out = []
    for text in exit_code_lists(module) + (exit_code_lists(tree(parser)) if parser else []):
        omitted = sorted(c for c in codes if not re.search(rf"\b{c}\b", text))
        if omitted:
            out.append(f"{path.name}: {text[:60]!r}... omits {omitted}")
    return out


def test_every_exit_code_list_names_every_code_its_command_returns() -> None:
    parsers = {m: PACKAGE / PARSER_MODULES[m] for m in PARSER_MODULES}
    lists = {m: exit_code_lists(tree(PACKAGE / m)) + (exit_code_lists(tree(parsers[m])) if m in parsers else [])
             for m in COMMANDS}
    assert all(lists[m] for m in ("run.py", "inspect/cli.py", "fuzz/cli.py", "qualify/cli.py")), lists
    missing = [line for m in COMMANDS for line in missing_exit_codes(PACKAGE / m, parsers.get(m))]
    assert not missing, "\n".join(missing)


def test_the_exit_code_check_can_fail(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('"""Exit codes: 0 done, 2 refused."""\ndef main():\n    try:\n        return 0\n'
                       "    except KeyboardInterrupt:\n        return 2\n", encoding="utf-8")
    assert exit_codes(tree(planted)) == {0, 2, 130}
    assert len(missing_exit_codes(planted)) == 1


# --------------------------------------------------------------------------- #
# bob-run's fast path needs no argparse (nor its re)
# --------------------------------------------------------------------------- #


def test_a_good_bob_run_imports_neither_argparse_nor_re(tmp_path: Path) -> None:
    # The launchers' reason for being plain scripts: the generated wrapper imports re.
    for name in ("input-abracadabra.bin", "checkpoint-abracadabra-step10.bin"):
        (tmp_path / name).write_bytes((GOLDEN / name).read_bytes())
    script = (
        "import sys, bob.run\n"
        f"rc = bob.run.main(['--input', {str(tmp_path / 'input-abracadabra.bin')!r}, '--checkpoint', "
        f"{str(tmp_path / 'checkpoint-abracadabra-step10.bin')!r}, '--predictions', {str(tmp_path / 'p.bin')!r}])\n"
        "assert rc == 0, rc\n"
        "print('imported:', *(m for m in ('re', 'argparse') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "imported:", out.stdout


# --------------------------------------------------------------------------- #
# __all__ names what the package imports
# --------------------------------------------------------------------------- #


def unlisted_imports(paths: list[Path], package: Path = PACKAGE) -> list[str]:
    """``module: source.name`` for each name imported from a bob module whose
    ``__all__`` does not list it (a submodule is not a name)."""
    by_name = {module_name(p, package): p for p in paths}
    exported: dict[str, set[str]] = {}
    for name, path in by_name.items():
        for node in ast.walk(tree(path)):  # `__all__ = [...]`, and `__all__ += [...]` (for type checkers only)
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                try:
                    exported[name] = set(ast.literal_eval(node.value))
                except ValueError:  # computed (bob's lazy names): every name it offers is listed
                    pass
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
                exported.setdefault(name, set()).update(ast.literal_eval(node.value))
    out = []
    for name, path in sorted(by_name.items()):
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in exported:
                out += [f"{name}: {node.module}.{a.name}" for a in node.names  # `*` imports __all__ itself
                        if a.name not in exported[node.module] | {"*"} and f"{node.module}.{a.name}" not in by_name
                        and not _extension_module(package, node.module, a.name)]
    return out


def _extension_module(package: Path, module: str, name: str) -> bool:
    """``from bob import _core``: a submodule built from Rust (``_core.abi3.so``, typed by ``_core.pyi``)."""
    return any(package.joinpath(*module.split(".")[1:]).glob(f"{name}.*.so")) or \
        package.joinpath(*module.split(".")[1:], f"{name}.pyi").exists()


def test_every_name_the_package_imports_from_a_module_is_in_its_all() -> None:
    missing = unlisted_imports(modules())
    assert not missing, "\n".join(missing)


def test_the_all_check_can_fail(tmp_path: Path) -> None:
    package = tmp_path / "bob"
    package.mkdir()
    (package / "a.py").write_text('__all__ = ["x"]\nx = y = 1\n', encoding="utf-8")
    (package / "b.py").write_text("from bob.a import x, y\n", encoding="utf-8")
    assert unlisted_imports(sorted(package.glob("*.py")), package) == ["bob.b: bob.a.y"]
