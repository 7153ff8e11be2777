"""Large elementwise results written into arrays kept between calls (``rt.Buffers``,
``compiler/optimize/buffers.py``): which calls get that code (arguments of the large size
class only: some array of ``KEEP_BYTES`` or more), the generated code, the memory a
repeated call allocates, and that no result depends on an earlier call (other sizes,
shapes and dtypes, results of earlier calls left alone, calls in flight together) or
breaks a composition.

The arrays here are just large enough (``N`` rows of 8 float64: ``KEEP_BYTES``)."""
import threading
import tracemalloc

import numpy as np
import pytest

import s2sgrad
from s2sgrad.api.arguments import argument_types, large_array, large_arguments
from s2sgrad.api.forward import forward_function
from s2sgrad.runtime import buffers

#: rows of 8 float64 that make an array of exactly ``KEEP_BYTES``: the large size class
N = buffers.KEEP_BYTES // 64


def centred(x, mu):
    d = x[:, None, :] - mu[None, :, :]
    e = np.exp(-0.5 * d ** 2) * d
    return np.sum(np.log(np.sum(e * e, axis=2) + 1.0))


def centred_grad(x, mu):
    """The gradient of ``centred`` w.r.t. ``mu``, by hand."""
    d = x[:, None, :] - mu[None, :, :]
    e = np.exp(-0.5 * d ** 2) * d
    s = np.sum(e * e, axis=2) + 1.0
    de = 2 * e / s[:, :, None]
    dd = de * np.exp(-0.5 * d ** 2) * (1 - d ** 2)
    return -np.sum(dd, axis=0)


def with_aux(x):
    y = np.tanh(x) * 3.0
    return np.sum(y ** 2), y[1:]


GRAD = s2sgrad.grad(centred, 1)
AUX = s2sgrad.grad(with_aux, has_aux=True)
rng = np.random.default_rng(0)


def data(n, k, d, dtype=np.float64):
    return rng.normal(size=(n, d)).astype(dtype), rng.normal(size=(k, d)).astype(dtype)


def kept_code(source):
    return "kept." in source and "rt.Buffers()" in source


def test_the_generated_code_writes_elementwise_results_into_kept_arrays():
    x, mu = data(N, 3, 8)
    GRAD(x, mu)
    source = GRAD.source
    assert "= rt.Buffers()" in source and "kept = _centred_buffers.take()" in source
    assert "d_1 = kept.subtract(x[:, None, :], mu[None, :, :])" in source
    assert "kept." in source.split("# sensitivity of the output")[1]     # adjoints too
    assert "return _centred_buffers.give(kept, (" in source
    # the returned gradient is assigned as written: a kept array would be copied
    last = [line for line in source.splitlines() if line.strip().startswith("dmu =")][-1]
    assert not last.split("=", 1)[1].strip().startswith("kept.")


SMALL, LARGE = (6, 3, 8), (N, 3, 8)


@pytest.mark.parametrize("order", [(SMALL, LARGE, SMALL), (LARGE, SMALL, LARGE)])
def test_each_size_class_runs_its_own_code_whatever_came_first(order):
    """Small arguments: numpy's operators, as a person writes them; large: kept arrays.
    Each call twice (the second runs its call plan), each checked by hand."""
    g = s2sgrad.grad(centred, 1)
    # what s2sgrad.jvp runs along (zeros, v): the code of mu's tangent alone
    f = forward_function(centred, (1,), False, False)
    for sizes in order:
        x, mu = data(*sizes)
        v = rng.normal(size=mu.shape)
        large = sizes is LARGE
        for _ in range(2):
            np.testing.assert_allclose(g(x, mu), centred_grad(x, mu), rtol=1e-10)
            assert kept_code(g.source) == large, g.source
            assert ("d_1 = x[:, None, :] - mu[None, :, :]" in g.source) != large
            _, tangent = s2sgrad.jvp(centred, (x, mu), (np.zeros_like(x), v))
            np.testing.assert_allclose(tangent, np.sum(centred_grad(x, mu) * v),
                                       rtol=1e-10)
            assert kept_code(f.source) == large, f.source


@pytest.mark.parametrize("shape, dtype", [((N, 8), np.float64), ((N - 1, 8), np.float64),
                                          ((2 * N, 8), np.float32), ((N, 8), np.float32),
                                          ((0, 8), np.float64)])
def test_the_size_class_of_the_builds_key_and_of_the_build_agree(shape, dtype):
    a = np.zeros(shape, dtype)
    assert large_arguments(argument_types([a, 1.0, None])) == large_array(a) == \
        (a.nbytes >= buffers.KEEP_BYTES)


def test_a_repeated_call_allocates_a_fraction_of_the_first():
    x, mu = data(N, 20, 8)
    fresh = s2sgrad.grad(centred, 1)
    peaks = []
    for _ in range(2):
        tracemalloc.start()
        fresh(x, mu)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < peaks[0] / 4, peaks


@pytest.mark.parametrize("sizes", [[(2 * N, 3, 8), (2 * N, 4, 8), (2 * N, 3, 8)],
                                   [(2 * N, 2, 8), (2 * N, 2, 1), (1, 2, 8)]])
def test_other_shapes_and_dtypes_between_calls_give_their_own_gradients(sizes):
    calls = [data(*s) for s in sizes] + [data(*sizes[0], dtype=np.float32)]
    results = [GRAD(x, mu) for x, mu in calls]
    for (x, mu), result in zip(calls, results):
        tol = 1e-4 if x.dtype == np.float32 else 1e-10
        assert result.dtype == x.dtype and result.shape == mu.shape
        np.testing.assert_allclose(result, centred_grad(x, mu), rtol=tol, atol=tol)


def test_results_of_an_earlier_call_are_not_written_by_a_later_one():
    x = rng.normal(size=(N, 8))
    g1, (aux1,) = AUX(x)
    kept = (g1.copy(), aux1.copy())
    for _ in range(2):
        AUX(x * 2.0)                      # same shapes: the kept arrays are written
    np.testing.assert_array_equal(g1, kept[0])
    np.testing.assert_array_equal(aux1, kept[1])   # a view of a kept array was copied
    np.testing.assert_allclose(aux1, 3.0 * np.tanh(x)[1:])
    assert "kept." in AUX.source


def test_calls_in_flight_together_each_have_their_own_arrays():
    x, mu = data(N, 5, 8)
    expected = centred_grad(x, mu)
    errors = []

    def run():
        for _ in range(8):
            if not np.allclose(GRAD(x, mu), expected, rtol=1e-10, atol=1e-10):
                errors.append("wrong")
    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert kept_code(GRAD.source)
    pool = buffers.Buffers()
    a, b = pool.take(), pool.take()
    assert a is not b                     # a second call in flight gets its own
    pool.give(a, None), pool.give(b, None)
    assert len(pool.pool) == 1            # one call's arrays are kept


def test_operators_of_numbers_and_sequences_run_as_written():
    kept = buffers.Buffers().take()
    assert kept.add((1, 2), (3,)) == (1, 2, 3)
    assert kept.multiply(2, 3) == 6 and type(kept.multiply(2, 3)) is int
    assert kept.negative(1.5) == -1.5
    a = np.arange(float(8 * N))           # KEEP_BYTES: kept
    kept.at = 0
    first = kept.multiply(a, 2.0)
    kept.at = 0
    again = kept.multiply(a, 3.0)
    assert again is first and again[3] == 9.0
    kept.at = 0
    other = kept.multiply(a[:-1], 3.0)            # another shape: a new array
    assert other is not first and other.shape == (8 * N - 1,) and other[3] == 9.0
    kept.at = 0
    assert kept.multiply(a[:-1], 3) is not other  # an int (an axis, to a helper): its value
    kept.at = 0
    small = kept.multiply(a[:10], 2.0)            # under KEEP_BYTES: left to numpy
    kept.at = 0
    assert kept.multiply(a[:10], 2.0) is not small


def test_jvp_and_compositions_over_code_with_kept_arrays():
    x, mu = data(N, 3, 8)
    v = rng.normal(size=mu.shape)
    step = 1e-6
    for _ in range(2):
        _, tangent = s2sgrad.jvp(GRAD, (x, mu), (np.zeros_like(x), v))
        numeric = (centred_grad(x, mu + step * v) - centred_grad(x, mu - step * v)) / (2 * step)
        np.testing.assert_allclose(tangent, numeric, rtol=1e-5, atol=1e-7)
    assert "kept." in s2sgrad.show(GRAD, x, mu, mode="jvp")
    # a gradient called inside a differentiated function, and vmap of a gradient
    outer = s2sgrad.grad(lambda m: np.sum(GRAD(x, m) ** 2))
    GRAD(x, mu)
    h = 1e-6
    e = np.zeros_like(mu)
    e[1, 0] = 1.0
    fd = (np.sum(centred_grad(x, mu + h * e) ** 2) -
          np.sum(centred_grad(x, mu - h * e) ** 2)) / (2 * h)
    np.testing.assert_allclose(outer(mu)[1, 0], fd, rtol=1e-5)
    batched = s2sgrad.vmap(GRAD, in_axes=(None, 0))(x, np.stack([mu, 2 * mu]))
    np.testing.assert_allclose(batched[1], centred_grad(x, 2 * mu), rtol=1e-10)


def test_code_compiled_by_numba_keeps_no_arrays(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    source = s2sgrad.show(s2sgrad.grad(with_aux, has_aux=True), rng.normal(size=(N, 8)))
    assert "kept." not in source and "Buffers" not in source


def test_code_that_could_keep_a_value_elsewhere_keeps_no_arrays():
    import gast
    from s2sgrad.compiler.optimize.buffers import kept_results
    plain = gast.parse("y = a * b\nz = np.exp(y)").body
    assert kept_results(plain, set(), lambda name: False, "kept")[1] == 2
    for escape in ("obj.attr = y", "seen.append(y)", "cache.update(k=y)"):
        statements = gast.parse(f"y = a * b\n{escape}").body
        assert kept_results(statements, set(), lambda name: False, "kept") == (statements, 0)


def flattened(x, w):
    """A shape joined from parts of another (``Flatten``): tuples, never kept arrays."""
    z = np.reshape(x, x.shape[:1] + (-1,) + x.shape[-1:][1:]) @ w
    return np.sum(np.tanh(z) ** 2)


def test_shape_arithmetic_is_left_as_written_in_kept_code():
    x = rng.normal(size=(N, 2, 4))
    w = rng.normal(size=(8, 3))
    g = s2sgrad.grad(flattened, 1)
    got = g(x, w)
    assert kept_code(g.source), g.source
    code = [line for line in g.source.splitlines() if not line.strip().startswith("#")]
    assert any("np.reshape(x, x.shape[:1] + (-1,) + x.shape[-1:][1:])" in line
               for line in code), g.source
    assert not any("kept.add(" in line and "shape" in line for line in code), g.source
    z = x.reshape(N, -1) @ w
    np.testing.assert_allclose(got, x.reshape(N, -1).T @ (2 * np.tanh(z) / np.cosh(z) ** 2),
                               rtol=1e-10)
