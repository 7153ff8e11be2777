"""The on-disk cache (content addressing, corrupt files), emission with astor and with
ast.unparse, errors raised inside generated code, and the Numba backend on the tutorial."""
import ast

import gast
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.testing import fresh_function
from s2sgrad.backend import cache
from s2sgrad.compiler.syntax.source import to_source


def poly(x, y):
    a = x * y + np.sin(x)
    return np.sum(a ** 2.0)


def test_cache_file_is_content_addressed_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    g = ms.grad(poly)
    x, y = np.array([0.5, 1.5]), np.array([2.0, -1.0])
    first = g(x, y)
    assert g.path.startswith(str(tmp_path)) and open(g.path).read() == g.source
    mtime = __import__("os").path.getmtime(g.path)
    again = ms.grad(poly)
    np.testing.assert_allclose(again(x, y), first)
    assert again.path == g.path and __import__("os").path.getmtime(g.path) == mtime


def test_a_module_compiled_at_another_numba_level_has_another_file(tmp_path, monkeypatch):
    """Numba's cache key does not hold NUMBA_OPT: code compiled unoptimised (the suite's
    level) must not be loaded by a process at the default level, so the level is part of
    the module's hash."""
    paths = {}
    for level in ("0", "3", "0"):
        monkeypatch.setenv("NUMBA_OPT", level)
        monkeypatch.setattr(cache, "_fingerprint", None)
        paths.setdefault(level, set()).add(cache.module_path("f", "def f(): pass", str(tmp_path)))
    monkeypatch.setattr(cache, "_fingerprint", None)
    assert len(paths["0"]) == 1 and paths["0"].isdisjoint(paths["3"])


@pytest.mark.parametrize("damage", ["truncate", "garbage", "other-code"])
def test_corrupt_cache_file_is_rewritten_not_used(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    x, y = np.array([0.5, 1.5]), np.array([2.0, -1.0])
    built = ms.grad(fresh_function(poly))
    built(x, y)                       # the code built for these arguments' types
    source = built.source
    path = cache.module_path("poly_value_and_grad", source, str(tmp_path))
    with open(path, "w") as f:
        f.write({"truncate": source[: len(source) // 2], "garbage": "\x00\x01 not python",
                 "other-code": source.replace("np.sin", "np.cos")}[damage])
    g = ms.grad(fresh_function(poly))      # a new object: it reads the file
    a = x * y + np.sin(x)
    np.testing.assert_allclose(g(x, y), 2 * a * (y + np.cos(x)))
    assert open(path).read() == source


def test_astor_and_ast_unparse_give_the_same_code():
    src = "y = np.sum(a[1:, None] * b ** 2.0, axis=(0, 1), keepdims=True) - (-c) @ d.T"
    node = gast.ast_to_gast(ast.parse(src)).body[0]
    with_astor = to_source(node, use_astor=True)
    with_unparse = to_source(node, use_astor=False)
    assert ast.dump(ast.parse(with_astor)) == ast.dump(ast.parse(with_unparse)) == \
        ast.dump(ast.parse(src))


def shape_clash(x, y):
    z = x @ y
    return np.sum(z)


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_error_inside_generated_code_names_the_user_line(monkeypatch, backend):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    with pytest.raises(ValueError) as info:
        ms.grad(shape_clash)(np.ones((2, 3)), np.ones((2, 3)))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "z = x @ y" in notes and "test_cache_and_emit.py:" in notes


def test_tutorial_gradient_compiles_with_numba(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")   # loop-free: only compiled when asked
    from examples_loader import load_functional_autodiff
    ex = load_functional_autodiff()
    g = ms.grad(ex.function, (2, 3))
    dw, db = g(ex.x, ex.y, ex.w, ex.b)
    assert g.backend == "numba", g.fallback_reason
    np.testing.assert_allclose(db.asnumpy(), [0.32618925, 0.01589146, 0.04216455], rtol=2e-6)
    assert dw.dtype == ms.float32
