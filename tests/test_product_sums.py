"""A loop's sum of matrix products made as one product after it (GradBench's ht):
``compiler/optimize/product_sums.py`` writes ``acc = acc + c * (a @ b)[index]`` in a
batched Jacobian's loop as ``acc_sum.add(c, a, b, index)``, and ``rt.ProductSum``
(``runtime/product_sums.py``) stacks the steps' operands into one product, falling back
to each step's own product where they do not fit; a value's and its tangent's sums of
the same weighted operands share their blocks (``add_as``).

Checked: the generated code, the Jacobian against central differences (GradBench's ht
itself; jacfwd, jacrev and jacobian, bone and vertex counts changing between calls of
one object), its compositions (grad of a function of it, vmap, jacfwd of it), the
runtime against the loop it replaces for every kind of operand, and the loops the pass
must leave alone.
Also: a batched sweep run as numpy sets glibc's malloc thresholds (``backend/heap.py``),
as a compiled call does; a batch of matrices times a matrix keeps the batch's layout
(``rt.batch_matmul``)."""
import pathlib
import sys

import gast
import numpy as np
import pytest

import s2sgrad
from s2sgrad import runtime as rt
from s2sgrad.backend import heap
from s2sgrad.compiler.optimize.product_sums import product_sums
from s2sgrad.compiler.syntax.source import to_source
from s2sgrad.runtime import product_sums as runtime_sums
from s2sgrad.testing import fresh_function, numerical_jacobian

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
                       / "gradbench"))
import ht  # noqa: E402


def skin(theta, rest, base, weights, points):
    """ht in small: posed bones, then positions as a weighted sum of moved points."""
    n = weights.shape[1]
    transforms = []
    for i in range(n):
        c = np.cos(theta[i])
        s = np.sin(theta[i] * theta[-1])
        turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        transforms.append(rest[i] @ turn)
    positions = np.zeros((base.shape[0], 2))
    for i in range(n):
        moved = base @ transforms[i].T
        positions = positions + weights[:, i:i + 1] * moved[:, :2]
    spin = np.array([[np.cos(theta[0]), -np.sin(theta[0])],
                     [np.sin(theta[0]), np.cos(theta[0])]])
    return (points - positions @ spin.T).ravel()


def data(bones, vertices, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=bones), rng.normal(size=(bones, 3, 3)),
            rng.normal(size=(vertices, 3)), rng.random((vertices, bones)),
            rng.normal(size=(vertices, 2)))


#: one object for every test: its code is built once per signature
JACFWD = s2sgrad.jacfwd(skin)


def test_the_loop_adds_operands_and_one_product_follows_it():
    JACFWD(*data(3, 50))
    source = JACFWD.source
    assert JACFWD.last is JACFWD.batched          # the batched sweep, as numpy
    assert "positions_1_dot_sum = rt.ProductSum(positions_1_dot)" in source
    assert "positions_1_dot_sum.add_as(positions_1_sum, t" in source and ".total()" in source
    loop = source.split("positions_1_dot_sum = rt.ProductSum")[1].split(".total()")[0]
    assert "matmul_batch_sliced" not in loop and "positions_1_dot +" not in loop
    # the batch of positions times a matrix keeps its layout (rt.matmul_both, by
    # rt.batch_matmul's product)
    assert "rt.matmul_both(positions_1_dot, " in source


@pytest.mark.parametrize("rows, columns", [(40, 2), (2, 40), (5, 5)])
def test_a_batch_times_a_matrix_is_numpys_product(rows, columns):
    rng = np.random.default_rng(rows)
    batch = rt.zeros_batch(np.zeros((rows, 3)), 4)      # by columns where (40, 3)
    batch[...] = rng.normal(size=batch.shape)
    matrix = rng.normal(size=(3, columns))
    got = rt.batch_matmul(batch, matrix)
    assert np.allclose(got, batch @ matrix, rtol=1e-13, atol=1e-13)
    if rows == 40:
        assert got.strides[1] < got.strides[2]          # laid out as the batch is


def test_the_value_and_its_tangent_share_their_steps():
    # the same weights times the same points, added to the value's sum and the tangent's
    JACFWD(*data(3, 50))
    source = JACFWD.source
    assert "positions_1_dot_sum.add_as(positions_1_sum, t" in source
    assert "positions_1_sum.add(t" in source and "positions_1_dot_sum.add(" not in source


@pytest.mark.parametrize("bones, vertices", [(3, 50), (5, 64), (1, 130), (3, 50)])
def test_jacobian_against_central_differences(bones, vertices):
    args = data(bones, vertices, seed=bones + vertices)
    expected = numerical_jacobian(skin, args)
    assert np.allclose(JACFWD(*args), expected, rtol=1e-6, atol=1e-7)
    assert JACFWD.last is JACFWD.batched


def test_the_ht_eval_against_central_differences():
    # GradBench's ht itself (benchmarks/gradbench/ht.py), small: 22 bones, 40 vertices
    theta, rest = ht.data(n_points=12, n_vertices=40, seed=4)
    jac = s2sgrad.jacobian(ht.ht_objective)
    got = jac(theta, *rest)
    assert jac.last is jac.forward and jac.last.last is jac.last.batched
    assert "positions_1_dot_sum.add_as(" in jac.source
    assert np.allclose(got, numerical_jacobian(ht.ht_objective, (theta, *rest)),
                       rtol=1e-6, atol=1e-7)


def test_both_modes_and_the_choice_agree(monkeypatch):
    args = data(4, 40, seed=3)
    forward = JACFWD(*args)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")      # (no Numba compile of jacrev)
    assert np.allclose(s2sgrad.jacrev(skin)(*args), forward, rtol=1e-10, atol=1e-12)
    monkeypatch.delenv("S2SGRAD_BACKEND")
    assert np.allclose(s2sgrad.jacobian(skin)(*args), forward, rtol=1e-10, atol=1e-12)


def test_a_batched_sweep_as_numpy_keeps_freed_memory(monkeypatch):
    # its batches are fresh arrays of the sweep's size every call (backend/heap.py)
    calls = []
    monkeypatch.setattr(heap, "keep_freed_memory", lambda: calls.append(1) or "set")
    jac = s2sgrad.jacfwd(fresh_function(skin))       # (its code loaded afresh)
    jac(*data(2, 70))
    assert jac.last is jac.batched and jac.backend == "numpy" and calls


def test_compositions(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")      # (no Numba compiles)
    theta, rest, base, weights, points = data(3, 50, seed=5)

    def jac(t):
        return JACFWD(t, rest, base, weights, points)
    moved = theta * 1.5
    mapped = s2sgrad.vmap(jac)(np.stack([theta, moved]))
    assert np.allclose(mapped[1], jac(moved), rtol=1e-12, atol=1e-14)

    def energy(t):
        return np.sum(s2sgrad.jacfwd(skin)(t, rest, base, weights, points) ** 2)
    gradient = s2sgrad.grad(energy)(theta)
    assert np.allclose(gradient, numerical_jacobian(energy, (theta,)), rtol=1e-6, atol=1e-6)
    second = s2sgrad.jacfwd(jac)(theta)
    assert np.allclose(second, numerical_jacobian(jac, (theta,)), rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------ the runtime


def _steps(kind, rng):
    """Operands ``(c, a, b, index)`` of a few steps of one kind of loop."""
    a, w = rng.normal(size=(6, 4)), rng.random((6, 3))
    batch, single = rng.normal(size=(3, 4, 5)), rng.normal(size=(4, 5))
    columns = np.s_[:, :, :2]
    kinds = {
        "column": [(w[:, i:i + 1], a, batch, columns) for i in range(3)],
        "number": [(2.0, a, batch, None), (np.float64(-1.5), a, batch, None),
                   (np.array(0.5), a, batch, None)],
        "none": [(None, a, single, np.s_[:, 1:]), (None, a * 2, single, np.s_[:, 1:])],
        "row": [(w[:1, :1].T * np.ones((1, 5)), a, single, None)] * 2,   # (1, 5): falls back
        "element index": [(None, a, batch, np.s_[:, :, 1])] * 2,
        "fancy index": [(None, a, single, (slice(None), np.array([0, 2])))] * 2,
        "integers": [(None, np.arange(24).reshape(6, 4), np.arange(20).reshape(4, 5), None)],
        "shapes change": [(w[:, :1], a, batch, columns), (None, a, single, np.s_[:, :2]),
                          (None, a[:, :2], batch[:, :2], columns)],
        "mixed dtypes": [(None, a.astype(np.float32), single, None), (None, a, single, None)],
    }
    return kinds[kind]


@pytest.mark.parametrize("kind", ["column", "number", "none", "row", "element index",
                                  "fancy index", "integers", "shapes change",
                                  "mixed dtypes"])
def test_product_sum_is_the_loop(kind):
    rng = np.random.default_rng(11)
    steps = _steps(kind, rng)
    start = rng.normal()
    expected = start
    for c, a, b, index in steps:
        product = (a @ b) if index is None else (a @ b)[index]
        expected = expected + (product if c is None else c * product)
    total = rt.ProductSum(start)
    for step in steps:
        total.add(*step)
    got = total.total()
    assert got.shape == np.shape(expected) and got.dtype == np.asarray(expected).dtype
    assert np.allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_product_sum_keeps_copies_and_flushes(monkeypatch):
    monkeypatch.setattr(runtime_sums, "STACKED_NUMBERS", 50)    # a product every step
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(2, 3, 4))
    expected = np.zeros((2, 5, 4))
    total = rt.ProductSum(np.zeros((2, 5, 4)))
    for step in range(4):
        expected = expected + a @ b
        total.add(None, a, b)
        a += 1.0                       # written after the step: the step's values count
        b *= -0.5
    assert np.allclose(total.total(), expected, rtol=1e-12, atol=1e-12)
    assert rt.ProductSum(expected).total() is expected        # no step: the start


def test_tied_sums_share_their_blocks_and_stack(monkeypatch):
    rng = np.random.default_rng(6)
    a, w = rng.normal(size=(30, 4)), rng.random((30, 5))
    steps = [(w[:, i:i + 1], rng.normal(size=(4, 3)), rng.normal(size=(2, 4, 3)))
             for i in range(5)]
    stacks = []
    concatenate = np.concatenate
    monkeypatch.setattr(np, "concatenate", lambda items, axis=0: stacks.append(axis) or
                        concatenate(items, axis=axis))
    value, tangent = rt.ProductSum(np.zeros((30, 2))), rt.ProductSum(np.zeros((2, 30, 2)))
    for c, b, b_dot in steps:
        value.add(c, a, b, np.s_[:, :2])
        tangent.add_as(value, b_dot, np.s_[:, :, :2])
        assert tangent.left[-1] is value.left[-1]            # one block of c * a
    got_value, got_tangent = value.total(), tangent.total()
    monkeypatch.undo()
    assert stacks.count(0) == 1                  # the blocks stacked once, for both
    assert np.allclose(got_value, sum(c * (a @ b)[:, :2] for c, b, _ in steps),
                       rtol=1e-12, atol=1e-12)
    assert np.allclose(got_tangent, sum(c * (a @ b_dot)[:, :, :2] for c, _, b_dot in steps),
                       rtol=1e-12, atol=1e-12)


def test_a_tie_to_a_step_that_did_not_stack():
    # the first sum's step fell back (an element index): the second makes its own block
    rng = np.random.default_rng(8)
    a, b, b_dot = rng.normal(size=(6, 4)), rng.normal(size=(4, 3)), rng.normal(size=(2, 4, 3))
    value, tangent = rt.ProductSum(0.0), rt.ProductSum(np.zeros((2, 6, 3)))
    for scale in (1.0, -2.0):
        value.add(scale, a, b, (slice(None), 1))
        tangent.add_as(value, b_dot)
    assert np.allclose(value.total(), -(a @ b)[:, 1], rtol=1e-12, atol=1e-12)
    assert np.allclose(tangent.total(), -(a @ b_dot), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------ the pass


def _rewritten(body):
    statements = gast.parse(body).body
    names = iter(f"made{k}" for k in range(9))
    return "\n".join(to_source(s).strip() for s in product_sums(
        statements, {"out"}, lambda hint: next(names)) if isinstance(s, gast.AST))


SUM = """
for i in range(n):
    p = rt.matmul_batch_sliced(base, t_dot, np.s_[:, :, :3])
    acc_new = acc + w * p
    acc = acc_new
out = acc
"""


def test_the_pass_rewrites_a_sum_of_products():
    made = SUM.replace("    acc_new = acc",
                       "    m = np.zeros(3)\n    m[0] = 1.0\n    acc_new = acc")
    assert "ProductSum" in _rewritten(made)      # written into what the step made
    text = _rewritten(SUM)
    assert "made0 = rt.ProductSum(acc)" in text
    assert "made0.add(w, base, t_dot, np.s_[:, :, :3])" in text
    assert text.rstrip().endswith("acc = made0.total()\nout = acc")


TIED = """
for i in range(n):
    p = rt.matmul_sliced(base, t, np.s_[:, :3])
    acc_new = acc + w * p
    p_dot = rt.matmul_batch_sliced(base, t_dot, np.s_[:, :, :3])
    acc_dot_new = acc_dot + w * p_dot
    acc = acc_new
    acc_dot = acc_dot_new
out = acc, acc_dot
"""


def test_the_pass_ties_a_value_and_its_tangent():
    text = _rewritten(TIED)
    assert "made0.add(w, base, t, np.s_[:, :3])\n    made1.add_as(made0, t_dot, " \
        "np.s_[:, :, :3])" in text
    # a statement between the steps, or other operands: each sum on its own
    between = _rewritten(TIED.replace("    acc_dot_new", "    q = i * 2\n    acc_dot_new"))
    assert "add_as" not in between and "made1.add(w, base, t_dot" in between
    assert "add_as" not in _rewritten(TIED.replace("acc_dot + w * p_dot", "acc_dot + v * p_dot"))


@pytest.mark.parametrize("change", [
    ("    acc = acc_new\n", "    acc = acc_new\n    seen = acc\n"),          # acc read again
    ("    acc_new = acc", "    if i > 2:\n        break\n    acc_new = acc"),  # a break
    ("    acc_new = acc", "    base = base * 2\n    acc_new = acc"),          # operand rebound
    ("    acc_new = acc", "    base[0] = 1.0\n    acc_new = acc"),            # written in place
    ("    acc_new = acc", "    rt.add_into(w, base)\n    acc_new = acc"),     # by a helper
    ("out = acc", "else:\n    acc = acc * 2\nout = acc"),                 # for ... else
    ("for i in", "for acc in"),                                            # the loop's name
    ("    acc_new = acc", "    other[0] = 1.0\n    acc_new = acc"),          # in place (an
    ("    acc_new = acc", "    other += 1.0\n    acc_new = acc"),             # alias of acc?)
    ("    acc_new = acc", "    other.fill(0.0)\n    acc_new = acc"),
    ("    acc_new = acc", "    other[0] = 1.0\n    other = np.zeros(3)\n    acc_new = acc"),
    ("acc + w * p", "acc + w * p + 1.0"),                                  # not a product sum
    ("acc + w * p", "acc + w * p[0]"),
])
def test_the_pass_leaves_other_loops_alone(change):
    body = SUM.replace(*change)
    assert body != SUM
    assert "ProductSum" not in _rewritten(body)
