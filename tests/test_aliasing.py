"""In-place writes through aliases and views of arrays: every spelling either
differentiates correctly (reverse and forward mode against central finite differences
in float64, and the same value as running the function) or is refused with an
UnsupportedConstructError naming the user's file and line.

Each case is the body of ``def f(x, v)`` (x a 2x3 array, v a float; ``x3`` cases take a
2x3x4 array), written to a file so messages name it.  A refused case marks the line the
error must name with ``# <-``.  Cases with loops run on both backends.
"""
import importlib.util
import itertools
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import alias_programs
import s2sgrad
from s2sgrad.errors import UnsupportedConstructError

HELPERS = '''
def first_row(a):
    return a[0]


def put_in_row(a, v):
    r = a[0]
    r[1] = v  # <- helper


def bump(a, v):
    a += v
    return 0.0


def set_corner(a, v):
    a[1, 1] = v
'''

# (id, body); every body computes a float from x and v
DIFFERENTIATED = [
    ("copy_of_row_written", """
        m = x * 1.0
        r = m[0].copy()
        r[1] = v * 3.0
        return np.sum(m * m) + np.sum(r * r)"""),
    ("rebinding_is_the_same_array", """
        m = x * 1.0
        r = m
        r[1] = v * 3.0
        return np.sum(m * m) + np.sum(r)"""),
    ("rebinding_element_write", """
        m = x * 1.0
        r = m
        r[0, 1] = v * 3.0
        return np.sum(m * m * r)"""),
    ("view_read_only", """
        m = x * 1.0
        r = m[0]
        return np.sum(r * v) + np.sum(m.T[1] * v)"""),
    ("view_taken_after_write", """
        m = x * 1.0
        m[0, 1] = v * 2.0
        r = m[0]
        return np.sum(r * r)"""),
    ("view_read_before_write", """
        m = x * 1.0
        r = m[0]
        s = np.sum(r * r)
        m[0, 1] = v
        return s + np.sum(m * m)"""),
    ("view_read_by_an_adjoint_before_the_base_is_written", """
        r = x[None][0]
        m = r * v + 0.5
        x[0, 2] = v * 1.5
        return np.sum(np.sin(m)) + v"""),
    ("branch_alias_read_by_an_adjoint_before_the_write", """
        m = x * 1.0
        if v > 0.0:
            r = m
        else:
            r = m * 2.0
        s = np.sum(np.sin(r))
        m[0, 0] = v
        return s + np.sum(m)"""),
    ("view_read_in_a_loop_before_the_base_is_written", """
        m = x * 1.0
        r = m[0]
        s = 0.0
        for i in range(2):
            s = s + np.sum(np.sin(r) * v)
        m[0, 1] = v
        return s + np.sum(m)"""),
    ("element_read_is_a_copy", """
        m = x * 1.0
        a = m[0, 1]
        m[0, 1] = v
        return a * np.sum(m * m)"""),
    ("element_of_1d_is_a_copy", """
        y = x[0] * 1.0
        a = y[1]
        y[1] = v
        return a + np.sum(y * y)"""),
    ("fancy_index_is_a_copy", """
        m = x * 1.0
        r = m[[0, 1]]
        r[0, 1] = v
        return np.sum(m * m) + np.sum(r * r)"""),
    ("augmented_on_fresh_array", """
        m = x * 1.0
        m += v
        m *= 2.0
        return np.sum(m * m)"""),
    ("augmented_on_argument", """
        x += v
        x *= x
        return np.sum(x)"""),
    ("augmented_scalars_are_numbers", """
        a = v * 1.0
        b = a
        a += 1.0
        return a * b + np.sum(x)"""),
    ("augmented_element_of_base", """
        m = x * 1.0
        m[0] += v
        m[1, 2] -= v * v
        return np.sum(m * m)"""),
    ("accumulate_in_loop", """
        acc = np.zeros(3)
        for i in range(2):
            acc += x[i] * v
        return np.sum(acc * acc)"""),
    ("rows_read_in_loop", """
        m = x * v
        s = 0.0
        for row in m:
            s = s + np.sum(row * row)
        return s"""),
    ("base_written_in_loop_then_read", """
        m = x * 1.0
        for i in range(2):
            m[i, 0] = v * (i + 1.0)
        return np.sum(m * m)"""),
    ("carried_array_written_and_rebound", """
        m = x * 1.0
        for i in range(2):
            m[i] = m[i] * v
            m = m + 1.0
        return np.sum(m * m)"""),
    ("carried_alias_of_argument_written", """
        m = x
        for i in range(2):
            m[i] = m[i] * v
            m = m + 1.0
        return np.sum(m * m)"""),
    ("branch_alias_of_argument_written", """
        if v > 0.5:
            m = x
        else:
            m = x * 2.0
        m[0, 1] = v
        return np.sum(m * m)"""),
    ("element_of_made_array_is_a_copy", """
        z = np.zeros(3)
        a = z[0]
        z[0] = v
        return a + np.sum(z * v) + np.sum(x)"""),
    ("rows_unpacked_read_only", """
        a, b = x * v
        return np.sum(a * b)"""),
    ("einsum_of_two_is_fresh", """
        y = np.einsum("ij,kj->ik", x, x)
        y[0, 1] = v
        return np.sum(y * y)"""),
    ("augmented_alias_in_place", """
        m = x * 1.0
        r = m
        r += v
        r *= r
        return np.sum(m * m)"""),
    ("augmented_argument_with_alias", """
        y = x
        x += v
        return np.sum(y * y)"""),
    ("helper_augments_parameter", """
        m = x * 1.0
        bump(m, v)
        return np.sum(m * m)"""),
    ("helper_augments_parameter_in_loop", """
        m = x * 1.0
        for i in range(2):
            bump(m, v * m[0, i])
        return np.sum(m * m)"""),
    ("split_read_only", """
        a, b = np.split(x * v, 2)
        return np.sum(a * b)"""),
    ("helper_writes_the_callers_array", """
        m = x * 1.0
        set_corner(m, v * 2.0)
        return np.sum(m * m)"""),
]

REFUSED = [
    ("int_index_row", """
        m = x * 1.0
        r = m[0]
        r[1] = v * 3.0  # <-
        return np.sum(m * m)""", "writing into `r`"),
    ("int_index_in_loop", """
        m = x * 1.0
        for i in range(2):
            r = m[i]
            r[0] = v  # <-
        return np.sum(m * m)""", "writing into `r`"),
    ("for_row_in_array", """
        m = x * 1.0
        for row in m:
            row[0] = v  # <-
        return np.sum(m * m)""", "writing into `row`"),
    ("unknown_rank", """
        m = np.stack([x[0], x[1]]) * 1.0
        r = m[0]
        r[1] = v  # <-
        return np.sum(m * m)""", "writing into `r`"),
    ("slice", """
        m = x * 1.0
        r = m[:, 1]
        r[0] = v  # <-
        return np.sum(m * m)""", "writing into `r`"),
    ("run_time_slice", """
        m = x * 1.0
        k = x.shape[1] - 1
        r = m[0, 0:k]
        r[0] = v  # <-
        return np.sum(m * m)""", "writing into `r`"),
    ("none_index", """
        m = x * 1.0
        r = m[None]
        r[0, 0, 1] = v  # <-
        return np.sum(m * m)""", "writing into `r`"),
    ("ellipsis", """
        m = x * 1.0
        r = m[...]
        r[0, 1] = v  # <-
        return np.sum(m * m)""", "writing into `r`"),
    ("empty_tuple_index", """
        m = x * 1.0
        r = m[()]
        r[0, 1] = v  # <-
        return np.sum(m * m)""", "writing into `r`"),
] + [(f"view_{name}", f"""
        m = x * 1.0
        r = {spelling}
        r[{index}] = v  # <-
        return np.sum(m * m)""", "writing into `r`") for name, spelling, index in [
    ("np_reshape", "np.reshape(m, (3, 2))", "1, 1"),
    ("reshape_method", "m.reshape(3, 2)", "1, 1"),
    ("ravel", "np.ravel(m)", "1"),
    ("ravel_method", "m.ravel()", "1"),
    ("T", "m.T", "1, 1"),
    ("np_transpose", "np.transpose(m)", "1, 1"),
    ("transpose_method", "m.transpose()", "1, 1"),
    ("swapaxes", "np.swapaxes(m, 0, 1)", "1, 1"),
    ("swapaxes_method", "m.swapaxes(0, 1)", "1, 1"),
    ("squeeze", "np.squeeze(m[None])", "1, 1"),
    ("squeeze_method", "m[None].squeeze()", "1, 1"),
    ("expand_dims", "np.expand_dims(m, 0)", "0, 1, 1"),
    ("asarray", "np.asarray(m)", "1, 1"),
    ("atleast_2d", "np.atleast_2d(m)", "1, 1"),
    ("atleast_3d", "np.atleast_3d(m)", "1, 1, 0"),
    ("view_method", "m.view()", "1, 1"),
    ("real", "m.real", "1, 1"),
    ("flat", "m.flat", "4"),
    ("flip", "np.flip(m)", "1, 1"),
    ("flipud", "np.flipud(m)", "1, 1"),
    ("moveaxis", "np.moveaxis(m, 0, 1)", "1, 1"),
    ("array_copy_false", "np.array(m, copy=None)", "1, 1"),
    ("astype_copy_false", "m.astype(np.float64, copy=False)", "1, 1"),
    ("row_of_transpose", "m.T[1]", "1"),
    ("chained_slices", "m[:, 1:][0]", "1"),
]] + [
    ("augmented_write_into_view", """
        m = x * 1.0
        r = m[0]
        r[1] += v  # <-
        return np.sum(m * m)""", "writing into `r`"),
    ("augmented_view_in_place", """
        m = x * 1.0
        r = m[0]
        r += v
        return np.sum(m * m)  # <-""", "`m` is a view of an array that was updated in place"),
    ("augmented_base_then_view_read", """
        m = x * 1.0
        r = m[1]
        m *= v
        return np.sum(r)  # <-""", "`r` is a view of an array"),
    ("view_of_argument", """
        r = x[0]
        r[1] = v  # <-
        return np.sum(x * x)""", "writing into `r`"),
    ("write_base_then_read_view", """
        m = x * 1.0
        r = m[0]
        m[0, 1] = v
        return np.sum(r)  # <-""", "`r` is a view of an array"),
    ("stale_view_returned", """
        m = x * v
        r = m[0]
        m[0, 1] = v
        out = r
        return out  # <-""", "is a view of an array"),
    ("stale_view_written_into_other", """
        m = x * 1.0
        r = m[0]
        m[0, 1] = v
        z = np.zeros(3)
        z[:] = r  # <-
        return np.sum(z)""", "`r` is a view of an array"),
    ("stale_view_in_list_call", """
        m = x * 1.0
        r = m[0]
        m[0, 1] = v
        return np.sum(np.stack([r, r]))  # <-""", "`r` is a view of an array"),
    ("helper_writes_into_view", """
        m = x * 1.0
        put_in_row(m, v)
        return np.sum(m * m)""", "writing into `r`"),
    ("helper_returns_view", """
        m = x * 1.0
        r = first_row(m)
        r[1] = v  # <-
        return np.sum(m * m)""", "writing into `r`"),
    ("list_of_views", """
        m = x * 1.0
        parts = [m[0], m[1]]
        p = parts[0]
        p[1] = v  # <-
        return np.sum(m * m)""", "writing into `p`"),
    ("list_of_views_nested_write", """
        m = x * 1.0
        parts = [m[0], m[1]]
        parts[0][1] = v  # <-
        return np.sum(m * m)""", "nested subscript"),
    ("run_time_list_of_views", """
        m = x * 1.0
        rows = []
        for i in range(2):
            rows.append(m[i])
        m[0, 0] = v
        return np.sum(rows[0])  # <-""", "`rows` is a view of an array"),
    ("split_written", """
        m = x * 1.0
        a, b = np.split(m, 2)
        a[0, 1] = v  # <-
        return np.sum(m * m)""", "writing into `a`"),
    ("array_split_read_after_base_write", """
        m = x * 1.0
        parts = np.array_split(m, 2, axis=1)
        m[0, 0] = v
        return np.sum(parts[0])  # <-""", "is a view of an array"),
    ("loop_carried_view", """
        m = x * 1.0
        r = m[0]
        s = 0.0
        for i in range(2):
            m[1, i] = v
            s = s + np.sum(r)  # <-
        return s""", "`r` is a view of an array"),
    ("loop_carried_alias", """
        m = x * 1.0
        keep = m
        for i in range(2):
            m[i, 0] = v * i
            m = m * 1.5
        return np.sum(keep)  # <-""", "`keep` is a view of an array"),
    ("branch_alias_written", """
        m = x * 1.0
        if v > 0.0:
            r = m
        else:
            r = m * 2.0
        r[0, 0] = v
        return np.sum(m * m)  # <-""", "`m` is a view of an array"),
    ("loop_reads_alias_before_in_place", """
        m = x * 1.0
        y = m
        s = 0.0
        for i in range(2):  # <-
            s = s + np.sum(y)
            m += v
        return s""", "a loop that reads `y`"),
    ("loop_reads_view_before_helper_write", """
        m = x * 1.0
        r = m[0]
        s = 0.0
        for i in range(2):  # <-
            s = s + np.sum(r * v)
            set_corner(m, v)
        return s + np.sum(m)""", "a loop that reads `r`"),
    ("rows_unpacked_then_written", """
        m = x * 1.0
        a, b = m
        a[1] = v  # <-
        return np.sum(m * m)""", "writing into `a`"),
    ("enumerate_rows_written", """
        m = x * 1.0
        for k, row in enumerate(m):
            row[k] = v  # <-
        return np.sum(m * m)""", "writing into `row`"),
    ("conditional_view_written", """
        m = x * 1.0
        r = m[0] if v > 0.0 else m[1]
        r[1] = v  # <-
        return np.sum(m * m)""", "writing into `r`"),
    ("einsum_diagonal_view", """
        m = np.ones((3, 3)) * v
        d = np.einsum("ii->i", m)
        d[1] = v  # <-
        return np.sum(m * m) + np.sum(x)""", "writing into `d`"),
    ("broadcast_arrays_second_operand", """
        m = x * 1.0
        a, b = np.broadcast_arrays(v, m)
        m[0, 0] = v
        return np.sum(b)  # <-""", "`b` is a view of an array"),
    ("ufunc_positional_out", """
        m = x * 1.0
        y = np.multiply(m, v, m)  # <-
        return np.sum(y)""", "out="),
    ("clip_out", """
        m = x * 1.0
        y = np.clip(m, 0.0, v, out=m)  # <-
        return np.sum(y)""", "out="),
    ("out_keyword", """
        m = x * 1.0
        y = np.add(m, v, out=m)  # <-
        return np.sum(y)""", "out="),
    ("sort_method_assigned", """
        m = x * v
        y = m.sort()  # <-
        return np.sum(m)""", "in place"),
    ("copyto", """
        m = x * 1.0
        y = np.copyto(m, x * v)  # <-
        return np.sum(m)""", "in place"),
    ("fill_diagonal", """
        m = x * 1.0
        y = np.fill_diagonal(m, v)  # <-
        return np.sum(m)""", "in place"),
    ("ufunc_at", """
        m = x * 1.0
        y = np.add.at(m, 0, v)  # <-
        return np.sum(m)""", "in place"),
]

THREE_D = [
    ("two_ints_on_3d", """
        t = x3 * 1.0
        r = t[0, 1]
        r[2] = v  # <-
        return np.sum(t * t)""", "writing into `r`"),
    ("int_and_loop_index_on_3d", """
        t = x3 * 1.0
        for i in range(2):
            r = t[i, 0]
            r[1] = v  # <-
        return np.sum(t * t)""", "writing into `r`"),
]

_counter = itertools.count()


def load(body, tmp_path, params="x, v"):
    """``f`` made of ``body`` in a file of its own; the line numbers of its ``# <-`` marks."""
    source = "import numpy as np\n" + HELPERS + f"\n\ndef f({params}):\n" + \
        textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"
    path = tmp_path / f"alias_case_{next(_counter)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    marks = [n for n, line in enumerate(source.splitlines(), 1)
             if line.rstrip().endswith("# <-")]
    return module.f, path, marks


def backends(cases):
    """Each case once per backend when it has a loop (the compiled one too), else once."""
    out = []
    for case in cases:
        body = case[1]
        for backend in (("python", "numba") if "for " in body else ("python",)):
            out.append(pytest.param(backend, *case[1:], id=f"{case[0]}-{backend}"))
    return out


def args():
    rng = np.random.default_rng(3)
    return rng.uniform(-1.0, 1.0, (2, 3)), float(rng.uniform(0.2, 1.0))


def fresh(values):
    return tuple(np.array(a, dtype=np.float64) if isinstance(a, np.ndarray) else a
                 for a in values)


def central(f, values, position, eps=1e-6):
    """Central differences of ``f`` at ``values`` w.r.t. argument ``position`` (each call
    gets fresh copies: a case may update its arguments in place)."""
    base = fresh(values)
    if not isinstance(base[position], np.ndarray):
        plus, minus = list(base), list(base)
        plus[position] += eps
        minus[position] -= eps
        return (f(*fresh(plus)) - f(*fresh(minus))) / (2 * eps)
    grad = np.zeros_like(base[position])
    for k in np.ndindex(grad.shape):
        plus, minus = list(fresh(base)), list(fresh(base))
        plus[position][k] += eps
        minus[position][k] -= eps
        grad[k] = (f(*plus) - f(*minus)) / (2 * eps)
    return grad


@pytest.mark.parametrize("backend, body", backends(DIFFERENTIATED))
def test_aliasing_that_is_differentiated_matches_finite_differences(backend, body, tmp_path,
                                                                     monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    f, _, _ = load(body, tmp_path)
    values = args()
    want = f(*fresh(values))
    given = fresh(values)
    value, (gx, gv) = s2sgrad.value_and_grad(f, (0, 1))(*given)
    np.testing.assert_array_equal(given[0], values[0])   # the caller's array is kept
    assert np.allclose(value, want, rtol=1e-12, atol=1e-12), (value, want)
    np.testing.assert_allclose(gx, central(f, values, 0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gv, central(f, values, 1), rtol=1e-5, atol=1e-7)
    # forward mode: the directional derivative along (dx, dv)
    rng = np.random.default_rng(5)
    dx, dv = rng.normal(size=(2, 3)), 0.7
    given = fresh(values)
    tangents = (dx.copy(), dv)
    out, tangent = s2sgrad.jvp(f, given, tangents)
    np.testing.assert_array_equal(given[0], values[0])
    np.testing.assert_array_equal(tangents[0], dx)       # and the caller's tangent
    eps = 1e-6
    numeric = (f(values[0] + eps * dx, values[1] + eps * dv) -
               f(values[0] - eps * dx, values[1] - eps * dv)) / (2 * eps)
    assert np.allclose(out, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-5, atol=1e-7)


def _refused(f, path, marks, construct, call):
    with pytest.raises(UnsupportedConstructError) as info:
        call(f)
    message = str(info.value)
    assert construct in message, message
    assert f"{path}:" in message, message
    if marks:
        assert f"{path}:{marks[0]}:" in message, message
    assert len(message.splitlines()) >= 3    # the place, the line's text, what to do
    return message


@pytest.mark.parametrize("backend, body, construct", backends(REFUSED))
def test_aliasing_that_would_be_wrong_is_refused_naming_the_line(backend, body, construct,
                                                                  tmp_path, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    f, path, marks = load(body, tmp_path)
    if "# <- helper" in (path.read_text()) and "put_in_row" in body:
        marks = [n for n, line in enumerate(path.read_text().splitlines(), 1)
                 if line.rstrip().endswith("# <- helper")]
    x, v = args()
    _refused(f, path, marks, construct, lambda f: s2sgrad.grad(f, (0, 1))(x, v))
    _refused(f, path, marks, construct, lambda f: s2sgrad.jvp(f, (x, v), (x, 1.0)))


@pytest.mark.parametrize("backend, body, construct", backends(THREE_D))
def test_views_of_three_dimensional_arrays_are_refused(backend, body, construct, tmp_path,
                                                       monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    f, path, marks = load(body, tmp_path, "x3, v")
    x3 = np.random.default_rng(0).uniform(size=(2, 3, 4))
    _refused(f, path, marks, construct, lambda f: s2sgrad.grad(f, (0, 1))(x3, 0.5))
    _refused(f, path, marks, construct, lambda f: s2sgrad.jvp(f, (x3, 0.5), (x3, 1.0)))


def test_the_reported_row_write_is_refused_not_zero(tmp_path):
    """The report that found the class: ``r = m[0]; r[1] = v * 3.0`` gave 0.0 for v."""
    f, path, marks = load(REFUSED[0][1], tmp_path)
    x, v = args()
    message = _refused(f, path, marks, "writing into `r`, which may be a view of `m`",
                       lambda f: s2sgrad.grad(f, 1)(x, v))
    assert "copy" in message.splitlines()[-1]


def shared_adjoint_then_loop(x, a):
    s = np.sum(np.sin(x) * a)
    u = np.sum(np.sin(x) * s)
    for i in range(1):
        a = np.sum(x) * 0.1 * 1.0
    w = np.sum(np.sin(x) * s)
    for i in range(1):
        s = a * 1.5 * 1.0
    return np.sum(np.sin(x)) + s + u + w


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_a_loop_carried_adjoint_does_not_share_another_adjoints_name(backend, monkeypatch):
    """Found by the alias fuzzer (not a memory alias): the adjoint of the loop-carried
    ``s`` took the name of the output's adjoint (``s`` is used once, in ``... + s + u + w``),
    and the adjoint loop's reset of it to zeros then dropped u's and w's gradients."""
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    x = np.random.default_rng(0).uniform(-1.0, 1.0, (3, 4))
    gx, ga = s2sgrad.grad(shared_adjoint_then_loop, (0, 1))(x, 0.3)
    np.testing.assert_allclose(gx, central(shared_adjoint_then_loop, (x, 0.3), 0),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ga, central(shared_adjoint_then_loop, (x, 0.3), 1),
                               rtol=1e-5, atol=1e-7)


def stacked_cells(w, state, c):
    """An LSTM's shape: the inner loop writes row j of ``hidden`` and carries ``x =
    hidden[j]``, a view of the row, into the next row's step and out to the outer loop; the
    adjoint reads the row itself for its size only (the split of the concatenation)."""
    n = w.shape[0]
    hidden = state.copy()
    total = 0.0
    for t in range(3):
        x = w * 1.5
        for j in range(hidden.shape[0]):
            z = np.concatenate((x, hidden[j])) * c
            hidden[j] = np.tanh(z[:n] + z[n:])
            x = hidden[j]
        total = total + np.sum(x * w)
    return total


@pytest.mark.parametrize("backend", ["python", "auto"])
def test_a_loop_carried_view_of_a_row_written_in_the_loop_keeps_its_values(backend,
                                                                          monkeypatch):
    """GradBench's lstm gradient went wrong when the adjoint stopped reading ``hidden[j]``
    by value: the writes into ``hidden`` were no longer undone, while the taped ``x`` (a
    view of a row, made after the write in the body, so the aliasing seen at the write
    did not hold it) is read by value; the outer loop's reversed iterations then read
    the last iteration's rows.  What may share a written array's memory is now what
    shares it anywhere in the function, not only at the write."""
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    rng = np.random.default_rng(5)
    args = (rng.normal(size=4), rng.normal(size=(2, 4)), rng.normal(size=8))
    g = s2sgrad.grad(stacked_cells, (0, 1))
    for k, got in enumerate(g(*args)):
        np.testing.assert_allclose(got, central(stacked_cells, args, k), rtol=1e-6,
                                   atol=1e-8)


RELAXED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("alias_programs")


@settings(max_examples=150, deadline=None, suppress_health_check=RELAXED)
@given(source=alias_programs.programs(), seed=st.integers(0, 2 ** 16))
def test_random_alias_programs_are_differentiated_or_refused(source, seed, program_dir,
                                                             monkeypatch):
    """Random views, aliases and in-place writes (tests/alias_programs.py): numpy's value
    and finite-difference gradients (reverse and forward), or a refusal naming the file."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    alias_programs.check(source, seed, program_dir)


@settings(max_examples=6, deadline=None, suppress_health_check=RELAXED)
@given(source=alias_programs.programs(), seed=st.integers(0, 2 ** 16))
def test_random_alias_programs_compiled_by_numba(source, seed, program_dir, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")     # ~1 s of compiling per program
    alias_programs.check(source, seed, program_dir, forward=False)
