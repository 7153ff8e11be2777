"""Reverse mode through run-time control flow and in-place updates (finite differences, float64).

Every function here runs under both backends: Numba (the default) and plain Python."""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.errors import UnsupportedConstructError
from s2sgrad.testing import check_grad, numerical_grad

RNG = np.random.default_rng(7)


def helper(a, b):
    return np.sin(a) * b


# ------------------------------------------------------------ the cases


def branch_on_value(x):
    if np.sum(x) > 0:
        y = x * x
    else:
        y = np.exp(x)
    return np.sum(y)


def elif_chain(a, x):
    s = np.sum(x)
    if s > 10.0:
        r = a * s
    elif s > 0.0:
        r = a * a * s
    else:
        r = -a
    return r


def defined_in_one_branch(a, x):
    y = a * 2.0
    if a > 0.0:
        y = y * np.sum(x)
        z = a
    return y


def conditional_expression(a, b):
    c = a * b if a > b else a + b
    return c * c


def early_and_multiple_returns(a, b):
    if a > 1.0:
        return a * b
    t = a + b
    if b > 0.0:
        return t * t
    return t


def recurrence(w, x):
    h = 0.0
    for i in range(x.shape[0]):
        h = np.tanh(w * h + x[i])
    return h


def range_with_runtime_bounds(x, start, stop, step):
    s = 0.0
    for i in range(start, stop, step):
        s = s + x[i] * x[i - 1]
    return s


def loop_over_rows(m, v):
    total = 0.0
    for row in m:
        total = total + np.sum(row * v) ** 2
    return total


def enumerate_and_zip(a, b):
    s = 0.0
    for i, row in enumerate(a):
        s = s + (i + 1.0) * np.sum(row)
    for p, q in zip(a, b):
        s = s + np.sum(p * q)
    return s


def while_data_dependent(x):
    y = x
    n = 0
    while np.sum(y * y) < 100.0 and n < 50:
        y = y * 1.5 + 0.1
        n = n + 1
    return np.sum(y)


def break_and_continue(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            continue
        s = s + a * x[i] * x[i]
        if s > 3.0:
            break
        s = s * 1.1
    return s


def zero_trip_loop(x, a):
    s = a * 2.0
    for i in range(x.shape[0], 2):
        s = s * x[i]
    return s


def nested_loops_with_helper(a, b):
    total = 0.0
    for i in range(a.shape[0]):
        inner = 0.0
        for j in range(b.shape[0]):
            inner = inner + helper(a[i], b[j])
        total = total + inner * a[i]
    return total


def branch_in_loop_loop_in_branch(x, w):
    s = 0.0
    if w > 0.0:
        for i in range(x.shape[0]):
            if x[i] > 0.0:
                s = s + w * x[i]
            else:
                s = s - x[i] * x[i]
    else:
        s = w * w
    return s


def overwritten_arrays_and_tuples(x):
    pair = (x, x * 2.0)
    for k in range(3):
        pair = (pair[1] * 0.5, np.sin(pair[0]))
    a, b = pair
    return np.sum(a * b)


def reassigned_argument(x, y):
    x = x * y
    y = np.exp(x)
    x = x + y
    return np.sum(x)


def inplace_elements(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = x[i] * x[i]
    z = x.copy()
    z[0] = 3.0 * z[1]
    return np.sum(y * z)


def inplace_2d_augmented(m):
    acc = np.zeros((2, 3))
    for i in range(2):
        for j in range(3):
            acc[i, j] += m[i, j] * m[j, i]
    return np.sum(acc * acc)


def inplace_slices(x):
    y = np.empty(6)
    y[0:3] = x[:3] * 2.0
    y[3:] = np.sin(x[3:])
    y[1:4] += x[0:3] * x[1:4]
    return np.sum(y ** 2)


def heat_stencil(u0, k):
    u = u0.copy()
    un = u0.copy()
    for step in range(5):
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = un.copy()
    return np.sum(u ** 2)


def list_of_states(x, w):
    hs = []
    h = 0.0
    for i in range(x.shape[0]):
        h = np.tanh(w * h + x[i])
        hs.append(h)
    total = 0.0
    for i in range(len(hs)):
        total = total + hs[i] * (i + 1.0)
    return total + hs[-1]


def list_stacked(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i] * x)
    return np.sum(np.stack(rows) ** 2)


def loop_over_a_list(x):
    parts = []
    for i in range(x.shape[0]):
        parts.append(np.sin(x[i]) * x)
    total = 0.0
    for p in parts:
        total = total + np.sum(p * p)
    for k, p in enumerate(parts):
        total = total + k * np.sum(p)
    return total


def list_built_without_loop(a, b):
    parts = []
    parts.append(a * b)
    parts.append(np.sin(a))
    return np.sum(np.concatenate(parts))


def last_iteration_value(x):
    for i in range(3):
        y = x[i] * 2.0
    return y * y


def return_inside_loop(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + a * x[i]
        if s > 1.0:
            return s * s
    return -s


def return_inside_nested_loops(m):
    acc = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            acc = acc + m[i, j] * m[i, j]
            if acc > 2.0:
                return acc * m[i, j]
    return acc


def comprehensions(x, w):
    squares = [x[i] * x[i] * w for i in range(x.shape[0]) if i != 1]
    return sum(squares) + sum(np.sin(v) for v in squares) + np.sum(np.stack([x * w, x]))


def local_functions(x, w):
    scale = 2.0

    def affine(v, shift=1.0):
        return v * w * scale + shift
    cube = lambda v: v * v * v  # noqa: E731
    return np.sum(cube(affine(x))) + affine(w, shift=0.0)


def loop_else(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 5.0:
            break
        s = s + x[i] * x[i]
    else:
        s = s * 10.0
    return s


CASES = [
    (comprehensions, (RNG.normal(size=4), 0.8), (0, 1)),
    (local_functions, (RNG.normal(size=3), 0.6), (0, 1)),
    (loop_else, (np.array([1.0, 2.0, 3.0]),), 0),
    (loop_else, (np.array([1.0, 7.0, 3.0]),), 0),
    (last_iteration_value, (np.array([1.0, 2.0, 3.0]),), 0),
    (return_inside_loop, (np.array([0.3, 0.4, 0.5, 0.6]), 0.9), (0, 1)),
    (return_inside_loop, (np.array([0.1, 0.2, 0.1]), 0.9), (0, 1)),
    (return_inside_nested_loops, (np.array([[0.5, 0.9, 1.0], [0.7, 1.1, 0.2]]),), 0),
    (return_inside_nested_loops, (np.array([[0.1, 0.2], [0.3, 0.1]]),), 0),
    (list_of_states, (np.linspace(-1.0, 1.0, 5), 0.7), (0, 1)),
    (list_stacked, (np.linspace(-1.0, 1.0, 4),), 0),
    (list_built_without_loop, (RNG.normal(size=3), RNG.normal(size=3)), (0, 1)),
    (loop_over_a_list, (RNG.normal(size=3),), 0),
    (branch_on_value, (RNG.normal(size=4) + 1.0,), 0),
    (branch_on_value, (RNG.normal(size=4) - 2.0,), 0),
    (elif_chain, (1.3, np.array([4.0, 7.0])), (0, 1)),
    (elif_chain, (1.3, np.array([1.0, 2.0])), (0, 1)),
    (elif_chain, (1.3, np.array([-1.0, -2.0])), (0, 1)),
    (defined_in_one_branch, (0.7, np.array([1.0, 2.0])), (0, 1)),
    (defined_in_one_branch, (-0.7, np.array([1.0, 2.0])), (0, 1)),
    (conditional_expression, (2.0, 0.5), (0, 1)),
    (conditional_expression, (0.5, 2.0), (0, 1)),
    (early_and_multiple_returns, (2.0, 3.0), (0, 1)),
    (early_and_multiple_returns, (0.5, 3.0), (0, 1)),
    (early_and_multiple_returns, (0.5, -3.0), (0, 1)),
    (recurrence, (0.8, RNG.normal(size=9)), (0, 1)),
    (range_with_runtime_bounds, (RNG.normal(size=8), 1, 8, 2), 0),
    (loop_over_rows, (RNG.normal(size=(3, 4)), RNG.normal(size=4)), (0, 1)),
    (enumerate_and_zip, (RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2))), (0, 1)),
    (while_data_dependent, (np.array([0.3, -0.2]),), 0),
    (break_and_continue, (np.array([1.0, -2.0, 1.5, 0.5, 2.0, 1.0]), 0.9), (0, 1)),
    (zero_trip_loop, (np.array([1.0, 2.0, 3.0]), 1.5), (0, 1)),
    (nested_loops_with_helper, (RNG.normal(size=3), RNG.normal(size=4)), (0, 1)),
    (branch_in_loop_loop_in_branch, (np.array([1.0, -2.0, 0.5]), 0.7), (0, 1)),
    (branch_in_loop_loop_in_branch, (np.array([1.0, -2.0, 0.5]), -0.7), (0, 1)),
    (overwritten_arrays_and_tuples, (RNG.normal(size=3),), 0),
    (reassigned_argument, (RNG.normal(size=3) * 0.3, RNG.normal(size=3)), (0, 1)),
    (inplace_elements, (RNG.normal(size=4),), 0),
    (inplace_2d_augmented, (RNG.normal(size=(3, 3)),), 0),
    (inplace_slices, (RNG.normal(size=6),), 0),
    (heat_stencil, (RNG.normal(size=10), 0.2), (0, 1)),
]


@pytest.mark.parametrize("backend", ["numba", "python"])
@pytest.mark.parametrize("fn, args, positions", CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_control_flow_gradient_matches_finite_differences(fn, args, positions, backend,
                                                          monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    check_grad(fn, args, grad_position=positions, rtol=1e-5, atol=1e-7)


def test_caller_arrays_are_never_mutated():
    x = RNG.normal(size=4)
    before = x.copy()

    def f(x):
        x[0] = x[1] * 2.0
        return np.sum(x * x)

    g = ms.grad(f)(x)
    assert np.array_equal(x, before)
    expected = 2 * np.array([before[1] * 2.0, before[1], before[2], before[3]])
    expected[1] += 2 * (2 * before[1]) * 2.0
    expected[0] = 0.0
    np.testing.assert_allclose(g, expected)


def test_loop_values_are_kept_on_a_tape_not_recomputed():
    g = ms.grad(recurrence, (0, 1))
    g(0.5, np.ones(4))
    src = g.source
    import re
    # each value is stored once: h as each iteration starts; what an iteration left in
    # h_1 is what the next one started with, so the reversed loop takes it from there
    assert len(re.findall(r"^    (\w+) = \[\]$|np\.empty\(0", src, re.M)) == 1
    kept = re.search(r"(h_\d+) = h\n\s+h_tape_top -= 1\n\s+h = h_tape\[h_tape_top\]", src)
    assert kept, src
    assert "rt.unbroadcast" not in src        # all scalars: nothing was broadcast
    backward = src.split("# sensitivity of the output")[1]
    code = "\n".join(line.split("#")[0] for line in backward.splitlines())
    assert "np.tanh" not in code


def test_recurrence_compiles_with_numba():
    g = ms.grad(recurrence, (0, 1))
    g(0.5, np.ones(5))
    assert g.backend == "numba", g.fallback_reason


@pytest.mark.parametrize("source, construct", [
    ("def f(x):\n    out = []\n    for i in range(3):\n        out.sort()\n    return x\n",
     "a call whose result is not used"),
    ("def f(x):\n    for i in range(3):\n        out.append(x)\n    return x\n",
     "which is not a list made in this function"),
    ("def f(x):\n    return {i: x * i for i in range(3)}[1]\n", "a dict comprehension"),
    ("def f(x):\n    y = np.zeros(4)\n    v = y[1:3]\n    v[:] = x * 2.0\n    return np.sum(y)\n",
     "writing into `v`, which may be a view of `y`"),
    ("def f(x):\n    y = np.ones(4) * x\n    b = y[0:2]\n    y[0] = x * 5.0\n"
     "    return np.sum(b * x)\n", "`b` is a view of an array that was updated in place"),
])
def test_unsupported_constructs_name_the_line(tmp_path, source, construct):
    path = tmp_path / "user_code.py"
    path.write_text("import numpy as np\n" + source)
    import importlib.util
    spec = importlib.util.spec_from_file_location("user_code", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(UnsupportedConstructError) as info:
        ms.grad(module.f)(1.0)
    assert construct in str(info.value) and "user_code.py:" in str(info.value)


def recursive(x, n):
    if n <= 0:
        return x
    return recursive(x * 2.0, n - 1)


def test_recursion_is_rejected_with_the_line():
    with pytest.raises(UnsupportedConstructError, match="recursion into recursive"):
        ms.grad(recursive)(1.0, 3)


# ---- names bound only in a loop that may run zero times (or on one side of an if)


def rebound_loop_index(x, n):
    y = x * 1.0
    for i in range(n):
        y = y * 2.0
    for i in range(3):
        y = y + x * i
    return np.sum(y) * i


def rebound_array(x, n):
    for k in range(n):
        t = x * k
    s = 0.0
    for j in range(2):
        t = np.sin(x) * (j + 1.0)
        s = s + np.sum(t)
    return s + np.sum(t)


def rebound_after_while(x, n):
    k = 0
    while k < n:
        t = x * k
        k += 1
    for j in range(2):
        t = np.cos(x) * (j + 2.0)
    return np.sum(t)


def rebound_after_one_branch(x):
    if x[0] > 0:
        t = x * 2.0
    for j in range(2):
        t = x * (j + 1.0)
    return np.sum(t * x)


@pytest.mark.parametrize("fn, args", [
    (rebound_loop_index, (0,)), (rebound_loop_index, (2,)), (rebound_array, (0,)),
    (rebound_array, (3,)), (rebound_after_while, (0,)), (rebound_after_while, (2,)),
    (rebound_after_one_branch, ()), (rebound_after_one_branch, ("negated",))])
def test_a_name_bound_only_in_a_loop_that_ran_zero_times_can_be_bound_again(fn, args,
                                                                          monkeypatch):
    """The later loop binds it before reading it: no copy of its (missing) value is made
    on entry, which raised UnboundLocalError in both modes."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    x = np.array([-1.0, 2.0, 0.5])
    if args == ("negated",):
        x, args = -x, ()
    want = numerical_grad(fn, (x, *args))
    np.testing.assert_allclose(ms.grad(fn)(x, *args), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ms.jacfwd(fn)(x, *args), want, rtol=1e-6, atol=1e-8)


def index_read_after_an_inner_loop(x, a):
    for i in range(2):
        a = np.tanh(a * 0.7 + x[i] * a)
        for r in range(2):
            t = (x + x) * (r + 1.0)
            a = a + np.sum(t) * 0.1
        a = a + np.sum(t) * r * 0.1
    return np.sum(x + x) + a


def test_an_inner_loops_index_read_after_it_is_restored_in_each_outer_iteration(monkeypatch):
    """The reversed inner loop walks its range again and leaves its index at the first
    value: the outer loop tapes the index's last value for the adjoint of what read it."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    x = np.array([0.3, -0.8, 0.5, 0.9])
    check_grad(index_read_after_an_inner_loop, (x, 0.3), grad_position=(0, 1))


# ---- a value an inner loop's body computes, read after the inner loop in an outer loop


def body_value_read_after_inner_loop(x, a):
    for i in range(3):
        for r in range(2):
            t = np.sin(x) * (r + 1.0) * a
        a = a * np.sum(t * t)
    return a


def body_value_read_after_inner_while(x, a):
    for i in range(3):
        k = 0
        while k < 2:
            t = np.cos(x * a) + k
            k += 1
        a = np.tanh(np.sum(t * x) * a)
    return a


def branch_value_read_after_inner_loop(x, a):
    s = 0.0
    for i in range(2):
        for r in range(3):
            if x[r] > 0.0:
                t = x * a * (r + 1.0)
            else:
                t = x * x * a
        s = s + np.sum(np.exp(t) * x)
        a = a * 0.9 + s * 0.1
    return s + a


def zero_trip_inner_loop_then_rebound(x, a):
    for i in range(2):
        for r in range(x.shape[0] - 4):
            t = x * a
        for r in range(1):
            t = np.sin(x) * (r + 1.0) * a
        a = a * np.sum(t * t)
    return a


def last_value_passed_through(x, a):
    for k in range(2):
        t = np.cos(x * a) + k
    return np.sum(t * x)


def last_value_passed_through_a_while(x, a):
    k = 0
    while k < 2:
        t = np.cos(x * a) + k
        k += 1
    return np.tanh(np.sum(t * x) * a)


INNER_BODY_VALUES = [body_value_read_after_inner_loop, body_value_read_after_inner_while,
                     branch_value_read_after_inner_loop, zero_trip_inner_loop_then_rebound,
                     last_value_passed_through, last_value_passed_through_a_while]


@pytest.mark.parametrize("fn", INNER_BODY_VALUES)
def test_an_inner_loops_body_value_read_after_it_is_restored_per_outer_iteration(fn,
                                                                               monkeypatch):
    """A name each inner iteration binds before reading it is the inner body's own (not
    carried); the outer loop reads its last value after the inner loop.  Its adjoint needs
    that value per outer iteration: it is taped there (it was not: the reversed inner loop
    left the first iteration's value, a silent wrong gradient; and forward mode over the
    gradient read it unbound after a loop that ran zero times).  Gradient and Hessian-
    vector product, against finite differences.  The last two: the adjoint of ``t`` passed
    unchanged to ``cos(x * a)`` (read as ``dt`` itself) was reset to zero before that
    read, in every loop: a silent zero."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    x, a = np.array([0.3, -0.8, 0.5, 0.9]), 0.7
    check_grad(fn, (x, a), grad_position=(0, 1))
    v, eps = np.array([0.5, -1.0, 0.25, 0.75]), 1e-6
    gradient = ms.grad(fn, (0, 1))
    hv = ms.hvp(fn, (x, a), (v, 0.0))
    up, down = gradient(x + eps * v, a), gradient(x - eps * v, a)
    for got, u, d in zip(hv, up, down):
        np.testing.assert_allclose(got, (u - d) / (2 * eps), rtol=1e-5, atol=1e-7)


def test_an_inner_loops_body_value_is_restored_under_numba(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    check_grad(body_value_read_after_inner_loop, (np.array([0.3, -0.8, 0.5, 0.9]), 0.7),
               grad_position=(0, 1))
