"""bob._core's hand-kept stub (python/bob/_core.pyi) says exactly what the
built module exports: the same public names, and for every function the
same parameters (names, kinds, defaults) as the real signature. Also the
module's exported behaviour the stub promises: CoreError's full name and
pickling, the kernel names, the scalar reference kernel, and the core's
updates per invocation (bob.formats.constants')."""

import ast
import inspect
import pickle
from pathlib import Path

import numpy as np
import pytest

import bob.core
from bob import _core

STUB = Path(bob.__file__).with_name("_core.pyi")
KINDS = {
    "posonlyargs": inspect.Parameter.POSITIONAL_ONLY,
    "args": inspect.Parameter.POSITIONAL_OR_KEYWORD,
    "kwonlyargs": inspect.Parameter.KEYWORD_ONLY,
}


def stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"), filename=str(STUB))


def stub_definitions() -> dict[str, ast.AST]:
    """The stub's top-level public names and their nodes."""
    names: dict[str, ast.AST] = {}
    for node in stub_tree().body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
    return {name: node for name, node in names.items() if not name.startswith("_")}


def stub_parameters(fn: ast.FunctionDef) -> list[tuple[str, inspect._ParameterKind, object]]:
    """(name, kind, default) per parameter, as inspect.Parameter would say."""
    a = fn.args
    out = []
    positional = [(arg, KINDS["posonlyargs"]) for arg in a.posonlyargs] + [(arg, KINDS["args"]) for arg in a.args]
    defaults = [inspect.Parameter.empty] * (len(positional) - len(a.defaults)) + [
        ast.literal_eval(d) for d in a.defaults
    ]
    out += [(arg.arg, kind, default) for (arg, kind), default in zip(positional, defaults)]
    if a.vararg:
        out.append((a.vararg.arg, inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.empty))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        value = inspect.Parameter.empty if default is None else ast.literal_eval(default)
        out.append((arg.arg, inspect.Parameter.KEYWORD_ONLY, value))
    if a.kwarg:
        out.append((a.kwarg.arg, inspect.Parameter.VAR_KEYWORD, inspect.Parameter.empty))
    return out


def real_parameters(fn) -> list[tuple[str, inspect._ParameterKind, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_stub_names_are_the_modules_public_names():
    public = {name for name in dir(_core) if not name.startswith("_")}
    assert set(stub_definitions()) == public


def test_stub_all_is_the_modules_all():
    (node,) = [n for n in stub_tree().body if isinstance(n, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
    assert sorted(ast.literal_eval(node.value)) == sorted(_core.__all__)


@pytest.mark.parametrize("name", sorted(n for n, node in stub_definitions().items() if isinstance(node, ast.FunctionDef)))
def test_stub_signature_matches_the_real_function(name):
    real = getattr(_core, name)
    assert real.__text_signature__ is not None, f"{name} has no text signature to compare with"
    assert stub_parameters(stub_definitions()[name]) == real_parameters(real)
    # No default is an opaque "...": the stub's default is the real one.
    assert all(d is not Ellipsis for _, _, d in real_parameters(real))


def test_the_cores_updates_per_invocation_is_the_formats():
    """One number in two languages: bob-core's UPDATES_PER_INVOCATION (what the
    Rust floors and examples count in) is bob.formats.constants' (what bob-run
    asks the core for), so changing one without the other fails here."""
    from bob.formats.constants import UPDATES_PER_INVOCATION

    assert type(_core.UPDATES_PER_INVOCATION) is int
    assert _core.UPDATES_PER_INVOCATION == UPDATES_PER_INVOCATION == bob.core.UPDATES_PER_INVOCATION


def test_stub_core_error_is_a_value_error_class():
    node = stub_definitions()["CoreError"]
    assert isinstance(node, ast.ClassDef)
    assert [ast.unparse(b) for b in node.bases] == ["ValueError"]
    assert isinstance(_core.CoreError, type) and _core.CoreError.__bases__ == (ValueError,)


# ------------------------------------------------------------- CoreError ---
def test_core_error_has_its_full_name():
    assert _core.CoreError.__module__ == "bob._core"
    assert _core.CoreError.__qualname__ == "CoreError"
    assert bob.core.CoreError is _core.CoreError


def test_core_error_pickles():
    err = _core.CoreError("contexts[5] = 256 is not below the vocabulary 256")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is _core.CoreError and back.args == err.args and str(back) == str(err)


def test_a_raised_core_error_pickles():
    p, _, _ = bob.core.initial_planes()
    with pytest.raises(_core.CoreError) as info:
        _core.predict(p, [256])
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is _core.CoreError and str(back) == str(info.value)


# ---------------------------------------------------------------- kernels ---
def test_kernels_lists_the_scalar_reference_then_fast_ones():
    names = _core.kernels()
    assert names[:2] == ["scalar", "portable"]
    assert set(names) <= {"scalar", "portable", "avx2", "avx512"}
    assert _core.resolved_kernel() in names and _core.resolved_kernel() != "scalar"
    assert _core.resolved_kernel("scalar") == "scalar"
    assert bob.core.kernels() == names


def test_every_kernel_matches_the_scalar_reference_on_the_public_vector_pairs():
    corpus = b"abracadabra"
    ctx = bytes(corpus[k % 11] for k in range(256))
    tgt = bytes(corpus[(k + 1) % 11] for k in range(256))
    results = {}
    for kernel in _core.kernels():
        p, m, v = bob.core.initial_planes()
        losses = bob.core.train(p, m, v, ctx, tgt, 0, 10, kernel=kernel)
        results[kernel] = (p.tobytes() + m.tobytes() + v.tobytes(), losses)
    want_planes, want_losses = results["scalar"]
    # §8: losses 5.548397 -> 4.663767 over the first invocation.
    assert round(want_losses[0], 6) == 5.548397 and round(want_losses[-1], 6) == 4.663767
    for kernel, (planes, losses) in results.items():
        assert planes == want_planes, kernel
        assert np.allclose(losses, want_losses, rtol=1e-12, atol=0), kernel
