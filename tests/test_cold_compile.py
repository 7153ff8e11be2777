"""What Numba is given to compile on a gradient's first call (issue 20's cold-compile target):
the runtime helpers every loop's adjoint calls link no string formatting and no general
reduction they do not need, and give the Python helpers' values bit for bit.

``benchmarks/bench_cold_compile.py`` measures where the seconds go."""
import numba
import numpy as np

from s2sgrad import runtime as rt
from s2sgrad.backend import numba_support  # noqa: F401 - the helpers' Numba versions

#: libraries whose presence means Numba compiled a message (str/repr of ints, string
#: concatenation: about 3 s of a cold compile) or the general ``_sum_to_shape``
COSTLY = ("raise_with_shape_context", "unicode", "integer_str", "ol_str_generic",
          "ol_repr_generic", "_sum_to_shape")


def adjoint_helpers(g5, g23, a1, a4, b2, b21):
    """The helpers a loop over vectors calls: a concatenate's adjoint (axis 0 and 1),
    unbroadcast of a vector onto a vector, onto one element and of a scalar, add_into."""
    p = rt.split_like(g5, (a1, a4), 0)
    q = rt.split_like(g23, (b21, b2), 1)
    same = rt.unbroadcast(p[1], a4)
    one = rt.unbroadcast(p[1], a1)
    filled = rt.unbroadcast(2.5, a4)
    view = np.zeros(5)
    rt.add_into(view[1:], same)
    return p[0], p[1], q[0], q[1], same, one, filled, view


def _linked(library, seen):
    for lib in library._linking_libraries:
        if lib.name not in seen:
            seen.add(lib.name)
            _linked(lib, seen)
    return seen


ARGS = (np.arange(1.0, 6.0) / 7.0, np.arange(6.0).reshape(2, 3) / 5.0, np.ones(1),
        np.ones(4), np.ones((2, 2)), np.ones((2, 1)))


def test_loop_adjoint_helpers_link_no_messages_and_match_python():
    jitted = numba.njit(adjoint_helpers)
    got = jitted(*ARGS)
    want = adjoint_helpers(*ARGS)
    for g, w in zip(got, want):
        assert g.shape == np.shape(w) and g.dtype == np.asarray(w).dtype
        assert np.array_equal(g, w)
    linked = _linked(jitted.overloads[jitted.signatures[0]].library, set())
    assert any("split_like" in name for name in linked)      # the walk sees the helpers
    costly = sorted(name for name in linked if any(c in name for c in COSTLY))
    assert not costly, costly


# ------------------------------------------------ one list tape per loop (records)

def recurrent(W, xs):
    """An LSTM-like loop: a join, a product and three transcendental values per step."""
    h = np.zeros(W.shape[0])
    for t in range(xs.shape[0]):
        z = W @ np.concatenate((xs[t], h))
        h = np.tanh(z) * np.exp(-z * z)
    return np.sum(h * h)


def branchy(x, n):
    """Values pushed in a branch, in a nested loop and before a break keep their own
    place in the iteration (only what the body pushes at its own level is merged)."""
    s = x * 0.0
    k = 0
    while k < n:
        y = np.sin(x + k)
        if np.sum(y) > 0.0:
            w = np.cos(y) * x
        else:
            w = np.exp(y)
        for j in range(2):
            w = np.tanh(w * x + j)
        s = s + w * y
        k += 1
        if k > 3:
            break
        s = s * np.cos(s)
    return np.sum(s)


def _list_tapes(source):
    return [line.strip() for line in source.splitlines() if line.strip().endswith("= []")]


def test_a_loop_keeps_its_list_tapes_as_one_record(monkeypatch):
    import s2sgrad
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")     # the source is what is looked at
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((4, 7)) * 0.4, rng.standard_normal((3, 3)))
    g = s2sgrad.value_and_grad(recurrent, 0)
    g(*args)
    src = g.source
    assert _list_tapes(src) == ["tape = []"], _list_tapes(src)
    assert src.count(".append(") == 1 and src.count("tape.pop()") == 1
    b = s2sgrad.value_and_grad(branchy, 0)
    b(np.linspace(-0.9, 1.3, 3), 6)
    # the while loop's record (7 values, ints and flags too); the nested loop's one
    # value and the branches' three values on their own tapes (was 11 lists)
    assert len(_list_tapes(b.source)) == 5, b.source
    assert b.source.count("tape = []") == 1


def test_records_give_the_gradient_at_every_trip_count(monkeypatch):
    """Python and Numba, each trip count after another (zero trips too), against central
    differences: the record's tuple holds whatever the first call held."""
    from s2sgrad.testing import check_grad
    rng = np.random.default_rng(4)
    W = rng.standard_normal((4, 7)) * 0.4
    for backend in ("python", "numba"):
        monkeypatch.setenv("S2SGRAD_BACKEND", backend)
        for steps in (3, 0, 5):
            g = check_grad(recurrent, (W, rng.standard_normal((steps, 3))), 0)
        assert g.backend == backend
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    for n in (6, 0, 2):
        check_grad(branchy, (np.linspace(-0.9, 1.3, 3), n), 0)


# ------------------------------------------------ what one gradient makes Numba compile

def _libraries(library, seen=None):
    """Every library linked into ``library`` (each once, however often it is linked)."""
    seen = {} if seen is None else seen
    for lib in library._linking_libraries:
        if id(lib) not in seen:
            seen[id(lib)] = lib
            _libraries(lib, seen)
    return list(seen.values())


def _compiled_fresh(monkeypatch, tmp_path, fn, args, wrt):
    """``fn``'s value and gradient compiled by Numba into an empty cache (never loaded:
    a loaded function links nothing to look at), checked against central differences;
    gives the gradient and the libraries Numba linked into its code."""
    from s2sgrad.testing import check_grad
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    g = check_grad(fn, args, wrt)
    assert g.backend == "numba", g.fallback_reason
    jitted = g._compiled._jitted
    return g, _libraries(jitted.overloads[jitted.signatures[0]].library)


def rows(state, xs):
    """Rows of a matrix written in a loop, as GradBench's lstm eval writes its cells."""
    cell = state.copy()
    for t in range(xs.shape[0]):
        for j in range(cell.shape[0]):
            cell[j] = np.tanh(xs[t] * cell[j, 0] + cell[j, 1])
    return np.sum(cell * cell)


def test_a_row_write_links_no_message_and_its_error_is_numpys(monkeypatch, tmp_path):
    """``cell[j] = ...`` compiles Numba's plain slice-assignment check (no str/repr of the
    shapes: ~2.5 s of a cold compile); a wrong shape still raises ValueError, shown as
    numpy's with the user's line; code compiled afterwards has Numba's own message."""
    import pytest
    rng = np.random.default_rng(5)
    state = rng.standard_normal((2, 3)) * 0.5
    g, libraries = _compiled_fresh(monkeypatch, tmp_path, rows,
                                   (state, rng.standard_normal((3, 3)) * 0.5), 0)
    names = [lib.name for lib in libraries]
    assert "_shape_mismatch.<locals>.impl" in names, names     # the check is there
    costly = sorted(name for name in names if any(c in name for c in COSTLY))
    assert not costly, costly
    with pytest.raises(ValueError, match="could not broadcast") as raised:
        g(state, rng.standard_normal((3, 4)))
    assert "test_cold_compile.py" in "\n".join(getattr(raised.value, "__notes__", []))
    # Numba's own message and lowering are back for code compiled afterwards
    import numba.np.arrayobj
    from numba.core.registry import cpu_target
    from numba.np.ufunc import array_exprs
    assert numba.np.arrayobj.raise_with_shape_context.__module__ == "numba.np.arrayobj"
    numbas = cpu_target.target_context.special_ops.get("arrayexpr", array_exprs._lower_array_expr)
    assert numbas is array_exprs._lower_array_expr     # (absent until Numba's first compile)



def gates(W, xs):
    """A gated recurrence: a product, two sigmoids (the same forms twice) and a tanh."""
    n = W.shape[0] // 3
    h = np.zeros(n)
    for t in range(xs.shape[0]):
        z = W @ np.concatenate((xs[t], h))
        i = 1.0 / (1.0 + np.exp(-z[:n]))
        f = 1.0 / (1.0 + np.exp(-z[n:2 * n]))
        h = f * h + i * np.tanh(z[2 * n:])
    return np.sum(h * h)


def test_a_gated_loop_compiles_one_kernel_per_form_and_one_blas_product(monkeypatch,
                                                                        tmp_path):
    """Numba compiles one scalar kernel per array-expression form, not one per statement
    (the same bits as its own lowering), and ``W @ x``'s adjoint w.r.t. ``x`` (``W.T @ g``)
    is a loop over W's rows, not a second BLAS product (a Fortran-layout gemv: ~0.6 s of
    a cold compile), within rounding of Python's values, float32 too."""
    import s2sgrad
    rng = np.random.default_rng(6)
    args = (rng.standard_normal((6, 4)) * 0.5, rng.standard_normal((4, 2)))
    g, libraries = _compiled_fresh(monkeypatch, tmp_path, gates, args, (0, 1))
    names = [lib.name for lib in libraries]
    assert "_transposed_times" in names and names.count("dot_impl") == 1, sorted(names)
    assert not [name for name in names if name.startswith("__numba_array_expr")], names
    plain = numba.njit(g._compiled.py_func)           # Numba's own lowering, same code
    ours, theirs = g._compiled._jitted(*args), plain(*args)
    assert ours[0] == theirs[0]
    for a, b in zip(ours[1], theirs[1]):
        assert np.array_equal(a, b)
    statements = [lib.name for lib in _libraries(plain.overloads[plain.signatures[0]].library)
                  if lib.name.startswith("__numba_array_expr")]
    kernels = [name for name in names if name.startswith("array_expression_kernel_")]
    assert 0 < len(kernels) < len(statements), (names, statements)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    for a, b in zip(g(*args), s2sgrad.grad(gates, (0, 1))(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    product = numba.njit(lambda g, a, b: rt.matmul_right(g, a, b))
    for dtype in (np.float64, np.float32):          # W.T @ g by rows, in W's dtype
        W, gv = args[0].astype(dtype), rng.standard_normal(6).astype(dtype)
        got = product(gv, W, np.ones(4, dtype))
        assert got.dtype == dtype
        np.testing.assert_allclose(got, W.T @ gv, rtol=1e-12 if dtype == np.float64 else 1e-5)


def test_each_shared_kernel_form_has_its_own_name():
    """Numba names a compiled function by module, name, argument types and a counter of
    the process, and machine code loaded from its disk cache brings the kernels it linked
    under the names they had in the process that compiled them (weak symbols): were every
    shared kernel called the same, a kernel of another form compiled here under the same
    counter would be linked in its place, a silently wrong gradient depending on what the
    process compiled before.  One name is one form, parameters and flags."""
    from numba.core import compiler

    from s2sgrad.backend import numba_compile
    flags = compiler.Flags()
    add = numba_compile._kernel("(a0 + a1)", ("a0", "a1"), flags)
    assert numba_compile._kernel("(a0 + a1)", ("a0", "a1"), flags) is add
    others = [numba_compile._kernel("(a0 * a1)", ("a0", "a1"), flags),
              numba_compile._kernel("(a0 + 2.0)", ("a0",), flags)]
    fast = flags.copy()
    fast.fastmath = True
    others.append(numba_compile._kernel("(a0 + a1)", ("a0", "a1"), fast))
    names = {k.__name__ for k in [add] + others}
    assert len(names) == 4 and all(n.startswith("array_expression_kernel_") for n in names)
    assert add(2.0, 3.0) == 5.0 and others[0](2.0, 3.0) == 6.0


# ------------------------------------------------ one build of a helper per process

def probe(x):
    """A helper with a Numba overload that counts its builds (``_probe``)."""
    return x + 1.0


PROBE_BUILDS = []


@numba.extending.overload(probe)
def _probe(x):
    PROBE_BUILDS.append(x)
    return lambda x: x + 1.0


def outer(x):
    """A helper whose Numba version calls ``probe`` (as rt helpers call numpy's)."""
    return probe(x) * 2.0


@numba.extending.overload(outer)
def _outer(x):
    return lambda x: probe(x) * 2.0


def test_a_helper_called_by_generated_code_and_by_a_helper_is_built_once():
    """Numba keys an overload's implementation by the caller's whole compile flags: a
    helper called both from generated code and from another helper's implementation (whose
    flags differ in wrapper options only: ``np.zeros_like`` from a gradient and from
    ``rt.zeros_like``) was typed, lowered and optimised twice.  Inside s2sgrad's compiles
    it is built once per options the implementation inherits (a caller with fast-math gets
    its own build), with the same result."""
    from s2sgrad.backend.numba_compile import generated_code
    del PROBE_BUILDS[:]
    both = numba.njit(lambda x: probe(x) + outer(x))
    fast = numba.njit(fastmath=True)(lambda x: probe(x) - outer(x))
    with generated_code():
        assert both(0.5) == 1.5 + 3.0
        assert len(PROBE_BUILDS) == 1, PROBE_BUILDS        # was 2: from both and _outer
        assert fast(0.5) == 1.5 - 3.0
    assert len(PROBE_BUILDS) == 2, PROBE_BUILDS            # fast-math: its own build
    from numba.core.typing import templates                # Numba's own keys are back
    assert templates._OverloadFunctionTemplate._get_impl.__module__ == templates.__name__


def _allocations(fn):
    """Each ``np.zeros``/``np.empty`` call of ``fn`` (Numba's IR of it, untyped): whether
    its shape is a tuple it builds and its dtype positional."""
    from numba.core import ir
    from numba.core.compiler import run_frontend
    func_ir = run_frontend(fn)
    found = []
    for block in func_ir.blocks.values():
        for stmt in block.find_exprs("call"):
            called = func_ir.get_definition(stmt.func)
            if isinstance(called, ir.Expr) and called.op == "getattr" and \
                    called.attr in ("zeros", "empty"):
                shape = func_ir.get_definition(stmt.args[0])
                found.append(isinstance(shape, ir.Expr) and shape.op == "build_tuple"
                             and not stmt.kws)
    return found


def test_loop_helpers_allocate_vectors_by_a_shape_tuple():
    """The helpers of an LSTM's adjoint (and a tape's growth) allocate a vector as
    ``np.zeros((n,), dtype)``,
    the spelling Numba's own ``@`` uses: ``np.zeros(n, dtype=...)`` is another
    signature of ``np.zeros`` and of ``np.empty`` to compile in every process."""
    from numba import types

    from s2sgrad.backend.numba_support import _reserve, _transposed_times, _unbroadcast
    vector = types.float64[::1]
    assert _allocations(_transposed_times) + _allocations(_unbroadcast(vector, vector)) + \
        _allocations(_reserve(vector, types.int64, types.int64)) == [True, True, True]


# ------------------------------------------------ a fused loop's else, left out (rt.SKIP_ELSE)

def sliced(x, y, k):
    """A fused loop over a run-time slice: k = 1 broadcasts it against y, the loop's guard
    fails and numpy's statements (the else) give the values."""
    total = 0.0
    for i in range(3):
        a = x[i:i + k]
        b = np.sin(a) * y
        d = np.tanh(b * a + y) * b
        total = total + np.sum(d * d)
    return total


SLICED = (np.linspace(0.1, 1.0, 8), np.linspace(1.0, 2.0, 4))


def test_numba_compiles_a_fused_loop_without_its_numpy_else(monkeypatch, tmp_path):
    """The else of a fused loop's guard is ``elif SKIP_ELSE: raise`` then numpy's
    statements; Numba's copy reads SKIP_ELSE True and prunes them (GradBench lstm's
    first call: 7.6 -> 4.3 s of CPU): nothing of them is linked (``rt.stacked_rows``,
    which only the else calls).  Where the guard fails later the call runs again, by the
    code compiled with the else, which takes the place of the other from then on (its
    plans dropped); each call's gradient is central differences'.  (The other order,
    a failed guard at the first call: test_fused_rows.py's broadcast slices.)"""
    from s2sgrad.testing import numerical_grad
    g, libraries = _compiled_fresh(monkeypatch, tmp_path, sliced, (*SLICED, 4), 0)
    assert "        elif SKIP_ELSE:\n            raise rt.FusedGuardFailed(" in g.source
    assert "\nSKIP_ELSE = False\n" in g.source          # as Python: numpy's statements
    names = [lib.name for lib in libraries]
    assert any("_pass" in name for name in names), names
    assert not any("stacked_rows" in name for name in names), names
    assert g._compiled.skips_else
    for k in (1, 1, 4):
        np.testing.assert_allclose(g(*SLICED, k), numerical_grad(sliced, (*SLICED, k), 0),
                                   rtol=1e-6, atol=1e-9)
    assert g.backend == "numba" and not g._compiled.skips_else     # the code with it
