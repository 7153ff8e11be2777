"""Repeated calls take the planned path (no re-checking), and it gives what the full path
gives whenever the arguments' types change between calls."""
import collections

import numpy as np
import pytest

import s2sgrad
from s2sgrad import Tensor
from s2sgrad.api.forward import ForwardFunction, forward_function
from s2sgrad.backend.numba_backend import restorer_like
from s2sgrad.api.call_plan import plan_key
from s2sgrad.api.reverse import GradFunction
from s2sgrad.errors import GradientTypeError
from s2sgrad.api.split import SplitFunction


def scaled_sum(x, w, mode=None):
    y = x * w
    if mode is None:
        return np.sum(y * y)
    return np.sum(y)


def loop_sum(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(w * x[i])
    return s


def _full_path(gradient, *args):
    """The gradient a fresh GradFunction gives (always the full path)."""
    fresh = type(gradient)(gradient.fn, gradient.grad_position, gradient.weights,
                           gradient.has_aux, gradient.return_ids, gradient.with_value)
    return fresh(*args)


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for p, q in zip(a, b):
            _same(p, q)
        return
    assert type(a) is type(b)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert np.asarray(a).dtype == np.asarray(b).dtype
    assert np.shape(a) == np.shape(b)


CALLS = [
    (np.arange(3.0), 2.0),
    (np.arange(3.0), 2.0),                                  # a repeat: planned
    (np.arange(5.0), 0.5),                                  # other shape, same types
    (np.arange(4, dtype=np.float32), np.float32(2.0)),      # other dtypes
    (Tensor(np.arange(3.0)), 2.0),                          # a Tensor
    (Tensor(np.arange(3.0)), 2.0),
    (np.arange(6.0).reshape(2, 3), 2.0),                    # other rank
    (np.arange(3.0), np.arange(3.0)),                       # w an array now
    (np.arange(3.0), 2.0),                                  # back to the first types
]


@pytest.mark.parametrize("fn", [scaled_sum, loop_sum])
def test_planned_calls_match_the_full_path_as_types_change(fn):
    grad = s2sgrad.value_and_grad(fn, (0, 1))
    for args in CALLS:
        if fn is loop_sum and np.ndim(args[1]) > 0:
            continue
        _same(grad(*args), _full_path(grad, *args))


def test_an_option_value_is_part_of_the_plan():
    grad = s2sgrad.grad(scaled_sum, 0)
    x = np.arange(3.0)
    full = grad(x, 2.0, None)
    summed = grad(x, 2.0, "sum")
    again = grad(x, 2.0, None)
    np.testing.assert_allclose(full, 2 * x * 4.0)
    np.testing.assert_allclose(summed, np.full(3, 2.0))
    np.testing.assert_allclose(again, full)


def test_a_repeated_call_skips_the_checks_and_a_new_signature_does_not(monkeypatch):
    grad = s2sgrad.grad(loop_sum, 0)
    x = np.arange(3.0)
    first = grad(x, 2.0)
    calls = []
    prepare = type(grad)._prepare

    def counting(self, args, kwargs):
        calls.append(args)
        return prepare(self, args, kwargs)

    monkeypatch.setattr(type(grad), "_prepare", counting)
    np.testing.assert_array_equal(grad(x, 2.0), first)
    assert calls == []
    grad(x.astype(np.float32), 2.0)
    assert len(calls) == 1
    with pytest.raises(GradientTypeError):
        grad(np.arange(3), 2.0)         # integers at a differentiated position: checked


def test_a_planned_call_still_names_the_users_line_on_a_runtime_error():
    def take(x, i):
        return x[i] * 2.0

    grad = s2sgrad.grad(take, 0)
    x = np.arange(3.0)
    grad(x, 1)
    with pytest.raises(IndexError) as info:
        grad(x, 7)
    assert any("test_call_plan.py" in note for note in getattr(info.value, "__notes__", []))


def test_weights_gradients_follow_updated_parameters():
    w = s2sgrad.Parameter(Tensor(np.array([1.0, 2.0])), name="w")

    def loss(x):
        return s2sgrad.ops.sum(x * w * w)

    grad = s2sgrad.grad(loss, None, [w])
    x = Tensor(np.array([3.0, 4.0]))
    (g1,) = grad(x)
    w.set_data(Tensor(np.array([2.0, 3.0])))
    (g2,) = grad(x)
    np.testing.assert_allclose(np.asarray(g1), 2 * np.array([3.0, 4.0]) * [1.0, 2.0])
    np.testing.assert_allclose(np.asarray(g2), 2 * np.array([3.0, 4.0]) * [2.0, 3.0])


# ---------------------------------------------------------------- the planned path, counted

def with_aux(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(w * x[i])
    return s, x * 2.0


def loop_2d(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            s = s + np.sin(w * x[i, j])
    return s


def flat_squares(x, w):
    y = x.reshape(-1)          # Numba reshapes contiguous arrays only
    s = 0.0
    for i in range(y.shape[0]):
        s = s + w * y[i] * y[i]
    return s


def _readonly(array):
    array = array.copy(order="K")
    array.setflags(write=False)
    return array


_X = np.linspace(0.1, 1.0, 6)
_M = np.arange(12.0).reshape(3, 4) / 7
ARGUMENTS = {   # name -> (function, arguments): each argument kind the plan key tells apart
    "float64, float": (loop_sum, (_X, 2.0)),
    "float32, float": (loop_sum, (_X.astype(np.float32), 2.0)),
    "float32, np.float32": (loop_sum, (_X.astype(np.float32), np.float32(2.0))),
    "float64, np.float64": (loop_sum, (_X, np.float64(2.0))),
    "Tensor, float": (loop_sum, (Tensor(_X), 2.0)),
    "float32 Tensor, Tensor": (loop_sum, (Tensor(_X.astype(np.float32)), Tensor(2.0))),
    "strided, float": (loop_sum, (_X[::2], 2.0)),
    "readonly, float": (loop_sum, (_readonly(_X), 2.0)),
    "C 2-D, float": (loop_2d, (_M, 0.5)),
    "Fortran 2-D, float": (loop_2d, (np.asfortranarray(_M), 0.5)),
    "non-contiguous 2-D, float": (loop_2d, (_M[:, ::2], 0.5)),
}
OPTIONS = {
    "value_and_grad": (s2sgrad.value_and_grad, dict(grad_position=(0, 1))),
    "grad, return_ids": (s2sgrad.grad, dict(grad_position=(0, 1), return_ids=True)),
    "grad of w": (s2sgrad.grad, dict(grad_position=1)),
}


#: where ``jvp`` keeps a function's hot call (``api/forward.py``)
HOT_JVP = "__s2sgrad_hot_jvp__"


@pytest.fixture
def planned(monkeypatch):
    """The plans run (each a CallPlan: by ``_run_plan`` for grad and jvp, by
    ``_planned_inputs`` alone for vjp), and the arguments of each full-path call."""
    runs, full, inside = [], [], []
    cls = s2sgrad.api.derivative.Derivative
    run_plan, planned_inputs, prepare = cls._run_plan, cls._planned_inputs, cls._prepare

    def counting_run(self, plan, arrays, extra=()):
        runs.append(plan)
        inside.append(plan)
        try:
            return run_plan(self, plan, arrays, extra)
        finally:
            inside.pop()

    def counting_inputs(self, plan, arrays):
        if not inside:
            runs.append(plan)
        return planned_inputs(self, plan, arrays)

    def counting_prepare(self, args, kwargs):
        full.append(args)
        return prepare(self, args, kwargs)

    grad_call = GradFunction.__call__

    def counting_call(self, *args, **kwargs):
        # a gradient's last plan run at once (``hot_call``): neither a plan run nor the
        # full path was taken
        hot, before = self._hot, (len(runs), len(full))
        result = grad_call(self, *args, **kwargs)
        if hot is not None and (len(runs), len(full)) == before:
            runs.append(hot)
        return result

    jvp = s2sgrad.jvp

    def counting_jvp(fn, *rest, **kwargs):
        # a jvp's hot call (``forward.HotJvp``, kept on the function): the same
        hot, before = vars(fn).get(HOT_JVP), (len(runs), len(full))
        result = jvp(fn, *rest, **kwargs)
        if hot is not None and (len(runs), len(full)) == before:
            runs.append(hot)
        return result

    monkeypatch.setattr(GradFunction, "__call__", counting_call)
    monkeypatch.setattr(s2sgrad, "jvp", counting_jvp)
    monkeypatch.setattr(cls, "_run_plan", counting_run)
    monkeypatch.setattr(cls, "_planned_inputs", counting_inputs)
    monkeypatch.setattr(cls, "_prepare", counting_prepare)
    return runs, full


def _repeated_and_full(planned, call, fresh_call):
    """(a repeated call's result, asserted to take the planned path; the full path's)."""
    runs, full = planned
    call()
    runs.clear(), full.clear()
    repeated = call()
    assert len(runs) == 1 and full == [], "a repeated call took the full path"
    reference = fresh_call()
    assert len(full) == 1
    return repeated, reference


@pytest.mark.parametrize("backend", ["auto", "python"])
@pytest.mark.parametrize("option", list(OPTIONS))
@pytest.mark.parametrize("kind", list(ARGUMENTS))
def test_a_planned_call_gives_exactly_what_the_full_path_gives(kind, option, backend,
                                                               planned, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    fn, args = ARGUMENTS[kind]
    make, options = OPTIONS[option]
    grad = make(fn, **options)
    repeated, reference = _repeated_and_full(planned, lambda: grad(*args),
                                             lambda: _full_path(grad, *args))
    _same(repeated, reference)
    assert grad.backend == ("numba" if backend == "auto" else "python")


@pytest.mark.parametrize("positions", [(0, 1), 0])
def test_a_planned_call_with_aux_matches_the_full_path(positions, planned):
    for make in (s2sgrad.grad, s2sgrad.value_and_grad):
        grad = make(with_aux, positions, has_aux=True)
        for args in [(_X, 2.0), (Tensor(_X.astype(np.float32)), np.float32(2.0))]:
            repeated, reference = _repeated_and_full(planned, lambda: grad(*args),
                                                     lambda: _full_path(grad, *args))
            _same(repeated, reference)


def test_python_float_gradients_stay_python_floats_and_numpy_scalars_keep_their_type():
    grad = s2sgrad.grad(loop_sum, 1)
    for _ in range(2):
        assert type(grad(_X, 2.0)) is float
        assert type(grad(_X.astype(np.float32), np.float32(2.0))) is np.float32
        assert type(grad(_X, np.float64(2.0))) is np.float64


def test_layouts_and_writeability_get_their_own_plans():
    c = np.arange(6.0).reshape(2, 3)
    keys = {plan_key((a,)) for a in (c, np.asfortranarray(c), c[:, ::2], _readonly(c),
                                     _readonly(np.asfortranarray(c)))}
    assert len(keys) == 5
    # a 1-D contiguous array is C and Fortran at once: one key for both spellings
    assert plan_key((np.arange(3.0),)) == plan_key((np.asfortranarray(np.arange(3.0)),))


def test_a_layout_numba_cannot_compile_falls_back_without_breaking_the_planned_calls(planned):
    grad = s2sgrad.value_and_grad(flat_squares, (0, 1))
    m = np.arange(12.0).reshape(3, 4)
    repeated, reference = _repeated_and_full(planned, lambda: grad(m, 2.0),
                                             lambda: _full_path(grad, m, 2.0))
    _same(repeated, reference)
    assert grad.backend == "numba"
    view = m[:, ::2]                # reshape of a non-contiguous view: not compiled
    _same(grad(view, 2.0), _full_path(grad, view, 2.0))
    assert grad.backend == "python"
    _same(grad(view, 2.0), _full_path(grad, view, 2.0))
    _same(grad(m, 2.0), reference)  # the contiguous plan again, now as Python
    assert grad.backend == "python"


def test_a_parameter_argument_is_planned_by_its_dtype(planned):
    def loss(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + x[i] * x[i]
        return s

    grad = s2sgrad.grad(loss)
    for dtype in (np.float64, np.float32, np.float64):
        p = s2sgrad.Parameter(Tensor(np.arange(3, dtype=dtype)), name="p")
        repeated, reference = _repeated_and_full(planned, lambda: grad(p),
                                                 lambda: _full_path(grad, p))
        _same(repeated, reference)
        assert np.asarray(repeated).dtype == dtype


Pair = collections.namedtuple("Pair", "x")


def test_a_namedtuple_argument_takes_the_full_path():
    def loss(pair, w):
        return w * np.sum(pair.x * pair.x)

    grad = s2sgrad.grad(loss, (0, 1))
    pair = Pair(np.arange(3.0))
    first = grad(pair, 2.0)
    again = grad(pair, 2.0)
    assert not grad._plans
    assert isinstance(again[0], Pair)
    _same(tuple(again[0]) + again[1:], tuple(first[0]) + first[1:])


SCALE = np.array([1.0, 2.0, 3.0])


def scaled(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sum(x[i] * SCALE)
    return s


def test_a_planned_call_rebuilds_when_a_free_array_changes_its_unit_dimensions(planned):
    grad = s2sgrad.value_and_grad(scaled)
    x = np.arange(3.0)
    repeated, reference = _repeated_and_full(planned, lambda: grad(x),
                                             lambda: _full_path(grad, x))
    _same(repeated, reference)
    runs, full = planned
    try:
        SCALE.shape = (3, 1)            # the code was specialised on no dimension of 1
        runs.clear(), full.clear()
        value, gradient = grad(x)
        assert len(runs) == 1 and len(full) == 1    # the plan saw it and built again
        _same((value, gradient), _full_path(grad, x))
        np.testing.assert_allclose(gradient, [6.0, 6.0, 6.0])
    finally:
        SCALE.shape = (3,)


def test_parameters_are_read_afresh_by_planned_calls_with_weights(planned):
    w = s2sgrad.Parameter(Tensor(np.array([1.0, 2.0, 3.0])), name="w")

    def loss(x, scale):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + scale * x[i] * w[i] * w[i]
        return s

    for options in (dict(grad_position=None, weights=w), dict(grad_position=(0, 1),
                                                              weights=[w], return_ids=True)):
        grad = s2sgrad.value_and_grad(loss, **options)
        for args in [(np.arange(3.0), 2.0), (Tensor(np.arange(3.0)), 2.0)]:
            w.set_data(Tensor(np.array([1.0, 2.0, 3.0])))
            grad(*args)
            w.set_data(Tensor(np.array([2.0, 1.0, 0.5])))
            repeated, reference = _repeated_and_full(planned, lambda: grad(*args),
                                                     lambda: _full_path(grad, *args))
            _same(repeated, reference)


# ---------------------------------------------------------------- jvp


def _fresh_jvp(fn, args, v, has_aux=False):
    """What a jvp gives on the full path (a new ForwardFunction, no plans)."""
    return ForwardFunction(fn, tuple(range(len(args))), has_aux, False).jvp_call(
        tuple(args), tuple(v))


TANGENTS = {    # name -> (function, arguments, tangents)
    "float64, float": (loop_sum, (_X, 2.0), (np.ones(6), 0.5)),
    "float32, np.float32": (loop_sum, (_X.astype(np.float32), np.float32(2.0)),
                            (np.ones(6, np.float32), np.float32(0.5))),
    "float32 input, float64 tangent, int": (loop_sum, (_X.astype(np.float32), 2.0),
                                            (np.ones(6), 1)),
    "Tensor, Tensor": (loop_sum, (Tensor(_X), 2.0), (Tensor(np.ones(6)), 0.5)),
    "strided tangent": (loop_sum, (_X, 2.0), (np.ones(12)[::2], 0.5)),
    "readonly input and tangent": (loop_sum, (_readonly(_X), 2.0), (_readonly(_X), 0.5)),
    "Fortran input and tangent": (loop_2d, (np.asfortranarray(_M), 0.5),
                                  (np.asfortranarray(_M + 1), 1.0)),
    "non-contiguous": (loop_2d, (_M[:, ::2], 0.5), (_M[:, 1::2], 1.0)),
}


@pytest.mark.parametrize("backend", ["auto", "python"])
@pytest.mark.parametrize("kind", list(TANGENTS))
def test_a_planned_jvp_gives_exactly_what_the_full_path_gives(kind, backend, planned,
                                                              monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    fn, args, v = TANGENTS[kind]
    repeated, reference = _repeated_and_full(planned, lambda: s2sgrad.jvp(fn, args, v),
                                             lambda: _fresh_jvp(fn, args, v))
    _same(repeated, reference)


def test_every_tangent_of_an_input_reaches_the_code_as_one_numba_type():
    x = np.arange(6.0)
    tangents = [np.ones(6), np.ones(12)[::2], _readonly(np.ones(6)), np.ones(6, np.float32),
                Tensor(np.ones(6)), np.asfortranarray(np.ones((6, 1)))[:, 0]]
    for v in tangents:
        value, tangent = s2sgrad.jvp(loop_sum, (x, 2.0), (v, 0.5))
        _same((value, tangent), _fresh_jvp(loop_sum, (x, 2.0), (v, 0.5)))
    compiled = forward_function(loop_sum, (0, 1), False, False)._compiled
    assert compiled.backend == "numba"
    # (x, w, x's tangent, w's tangent): every x's tangent had one type (other tests may
    # have run the same code on other kinds of x)
    tangent_types = {signature[2] for signature in compiled._jitted.signatures}
    assert len(tangent_types) == 1, tangent_types
    assert next(iter(tangent_types)).layout == "C"


def test_a_planned_jvp_follows_the_tangents_and_keeps_aux(planned):
    args = (_X, 2.0)
    repeated, reference = _repeated_and_full(
        planned, lambda: s2sgrad.jvp(with_aux, args, (np.ones(6), 0.5), has_aux=True),
        lambda: _fresh_jvp(with_aux, args, (np.ones(6), 0.5), has_aux=True))
    _same(repeated, reference)
    # other tangents of the same types: the same plan, other values
    other = s2sgrad.jvp(with_aux, args, (np.zeros(6), 1.0), has_aux=True)
    _same(other, _fresh_jvp(with_aux, args, (np.zeros(6), 1.0), has_aux=True))
    np.testing.assert_allclose(other[1], np.sum(_X * np.cos(2.0 * _X)))


def test_a_planned_jvp_still_checks_the_tangents():
    x = np.arange(3.0)
    s2sgrad.jvp(loop_sum, (x, 2.0), (np.ones(3), 1.0))
    s2sgrad.jvp(loop_sum, (x, 2.0), (np.ones(3), 1.0))
    with pytest.raises(s2sgrad.errors.GradientArgumentError):
        s2sgrad.jvp(loop_sum, (x, 2.0), (np.ones(4), 1.0))


def index_twice(x, w):
    s = 0.0
    for i in range(3):
        s = s + w * x[i + 3]
    return s


def test_a_planned_jvp_error_names_the_users_line(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    x = np.arange(6.0)
    s2sgrad.jvp(index_twice, (x, 2.0), (np.ones(6), 1.0))
    with pytest.raises(IndexError) as info:
        s2sgrad.jvp(index_twice, (np.arange(5.0), 2.0), (np.ones(5), 1.0))
    assert any("test_call_plan.py" in note for note in getattr(info.value, "__notes__", []))


def product_sum(x, y):
    s = 0.0
    for k in range(2):
        z = x @ y
        s = s + np.sum(z)
    return s


def test_a_planned_compiled_call_names_the_users_line(monkeypatch, planned):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    grad = s2sgrad.grad(product_sum, (0, 1))
    grad(np.ones((2, 3)), np.ones((3, 2)))
    runs, _ = planned
    with pytest.raises(ValueError) as info:
        grad(np.ones((2, 3)), np.ones((2, 3)))      # the same plan; shapes that clash
    assert len(runs) == 1 and grad.backend == "numba"
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "z = x @ y" in notes and "test_call_plan.py:" in notes, notes


# ---------------------------------------------------------------- vjp


def _vjp_both(fn, args, cotangent):
    """(outputs, the vjp_fn's gradients) of a vjp: a tuple to compare."""
    out, vjp_fn = s2sgrad.vjp(fn, *args)
    return out, vjp_fn(cotangent)


def _fresh_vjp(fn, args, cotangent):
    out, vjp_fn = SplitFunction(fn, tuple(range(len(args)))).vjp(args)
    return out, vjp_fn(cotangent)


@pytest.mark.parametrize("kind", ["float64, float", "float32, np.float32", "Tensor, float",
                                  "readonly, float", "Fortran 2-D, float"])
def test_a_planned_vjp_gives_exactly_what_the_full_path_gives(kind, planned):
    # (one backend: vjp reuses its code object per function whatever S2SGRAD_BACKEND says)
    fn, args = ARGUMENTS[kind]
    repeated, reference = _repeated_and_full(planned, lambda: _vjp_both(fn, args, 1.0),
                                             lambda: _fresh_vjp(fn, args, 1.0))
    _same(repeated, reference)


def test_a_planned_vjp_rebuilds_when_a_free_array_changes_its_unit_dimensions(planned):
    x = np.arange(3.0)
    repeated, reference = _repeated_and_full(planned, lambda: _vjp_both(scaled, (x,), 1.0),
                                             lambda: _fresh_vjp(scaled, (x,), 1.0))
    _same(repeated, reference)
    runs, full = planned
    try:
        SCALE.shape = (3, 1)
        runs.clear(), full.clear()
        out, grads = _vjp_both(scaled, (x,), 1.0)
        assert len(runs) == 1 and len(full) == 1
        np.testing.assert_allclose(grads[0], [6.0, 6.0, 6.0])
    finally:
        SCALE.shape = (3,)


def test_a_restorer_leaves_alone_what_the_compiled_code_already_gives_right():
    reference = (np.float64(1.0), (np.zeros(3, np.float32), np.float32(2.0), np.ones(2)))
    right = (np.float64(1.0), (np.zeros(3, np.float32), np.float32(2.0), np.ones(2)))
    assert restorer_like(reference, right)(right) is right
    # what Numba gives: Python floats, float32 promoted to float64
    compiled = (1.0, (np.zeros(3), 2.0, np.ones(2)))
    restore = restorer_like(reference, compiled)
    _same(restore(compiled), reference)
    again = (3.0, (np.full(3, 4.0), 5.0, np.ones(2)))
    _same(restore(again), (np.float64(3.0), (np.full(3, 4.0, np.float32), np.float32(5.0),
                                             np.ones(2))))
    assert restore(again)[1][2] is again[1][2]      # right already: left as it is
