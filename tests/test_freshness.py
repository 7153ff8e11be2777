"""A derivative never depends on what was true at its first call (issue 19, item 4).

A derivative's code is built for what its function read from outside: a module-level
number becomes a literal, a helper function or a sub-cell is inlined, a branch on
``self.training`` is decided, a global array is passed in.  Every call checks those reads
(``s2sgrad/api/guards.py``) and builds again when one changed; arrays are read again at
each call and need no new build.  Here each way of changing state between two calls
(rebinding a module-level float, int, bool, array or helper function, a closure
variable, an item of a module-level list or dict, an attribute of a config object or a
user module, ``self.k`` under a decorated method, a Cell's attribute, ``set_train``, a
replaced sub-cell) is applied under each transform: after the change the derivative
object built before it must give what a derivative built after it gives, and the change
must make a difference (so the test can fail).
"""
import sys
import types

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import Parameter, Tensor, nn, ops
from s2sgrad.errors import UnsupportedConstructError
from s2sgrad.testing import fresh_function, numerical_grad

HERE = sys.modules[__name__]
X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, 0.5, -2.0])

SCALE = 2.0
POWER = 1
FLIP = False
WEIGHTS = np.array([1.0, 2.0, 3.0])
COEFFS = [1.0, 0.5, 0.25]      # changed in place (restored by _state_restored)
SETTINGS = {"gain": 1.5}
CONFIG = types.SimpleNamespace(rate=0.5)
PARAMS = types.ModuleType("params")     # a user module read through its attribute
PARAMS.shift = 0.25


def helper(x):
    return np.sin(x)


def scaled(x):
    return np.sum(SCALE * np.exp(x) * x)


def differenced(x):
    return np.sum(np.diff(np.exp(x), POWER) ** 2)


def flipped(x):
    if FLIP:
        return np.sum(np.cos(x) * x)
    return np.sum(np.sin(x) * x)


def weighted(x):
    return np.sum(WEIGHTS * np.exp(x))


def through_helper(x):
    return np.sum(helper(x) * x)


def polynomial(x):
    total = 0.0
    for c in COEFFS:
        total = total * x + c
    return np.sum(total * x)


def from_dict(x):
    return np.sum(SETTINGS["gain"] * np.exp(x))


def from_config(x):
    return np.sum(np.exp(CONFIG.rate * x))


def from_module(x):
    return np.sum(np.exp(x + PARAMS.shift) * x)


def make_closure():
    rate = 1.0

    def closed(x):
        return np.sum(np.exp(rate * x))

    def set_rate(value):
        nonlocal rate
        rate = value
    return closed, set_rate


closed, set_rate = make_closure()


def _transforms():
    """name -> (make, how): ``make(fn)`` gives a function of x computing the transform."""
    return {
        "grad": lambda fn: ms.grad(fn),
        "value_and_grad": lambda fn: ms.value_and_grad(fn),
        "jvp": lambda fn: lambda x: ms.jvp(fn, (x,), (V,)),
        "vjp": lambda fn: lambda x: ms.vjp(fn, x)[1](1.0),
        "jacfwd": lambda fn: ms.jacfwd(fn),
        "jacrev": lambda fn: ms.jacrev(fn),
        "hessian": lambda fn: ms.hessian(fn),
        "hvp": lambda fn: lambda x: ms.hvp(fn, (x,), (V,)),
        # what the inner derivative's code read is checked by the outer one's
        "jvp of grad": lambda fn: (lambda g: lambda x: ms.jvp(g, (x,), (V,)))(ms.grad(fn)),
        "jacfwd of jacrev": lambda fn: ms.jacfwd(ms.jacrev(fn)),
        # a gradient called inside: its code inlined into the outer derivative's
        "grad over a grad inside": lambda fn: ms.grad(_calling(ms.grad(fn))),
        "jacfwd over a grad inside": lambda fn: ms.jacfwd(_calling(ms.grad(fn))),
    }


def _calling(gradient):
    """A function of x that calls ``gradient`` inside (its code is inlined)."""
    def outer(x):
        return np.sum(gradient(x) * x)
    return outer


TRANSFORMS = _transforms()


#: a new function object with ``fn``'s code: derivatives of it are built afresh, reading
#: the state as it is now
copy_of = fresh_function


def flat(result):
    """A result (array, number, tuple of them) as one float vector."""
    if isinstance(result, (tuple, list)):
        return np.concatenate([flat(r) for r in result])
    return np.ravel(np.asarray(result, dtype=float))


#: how each scenario changes state (``monkeypatch`` restores module globals after)
SCENARIOS = {
    "module float": (scaled, lambda mp: mp.setattr(HERE, "SCALE", 5.0)),
    "module int": (differenced, lambda mp: mp.setattr(HERE, "POWER", 2)),
    "module bool": (flipped, lambda mp: mp.setattr(HERE, "FLIP", True)),
    "module array": (weighted, lambda mp: mp.setattr(HERE, "WEIGHTS",
                                                     np.array([-1.0, 4.0, 0.5]))),
    "helper function": (through_helper, lambda mp: mp.setattr(HERE, "helper", np.cos)),
    "list item": (polynomial, lambda mp: COEFFS.__setitem__(1, -3.0)),
    "dict item": (from_dict, lambda mp: mp.setitem(SETTINGS, "gain", -0.5)),
    "config attribute": (from_config, lambda mp: mp.setattr(CONFIG, "rate", 2.0)),
    "module attribute": (from_module, lambda mp: mp.setattr(PARAMS, "shift", -1.0)),
    "closure variable": (closed, lambda mp: set_rate(-0.5)),
}
#: every transform meets these; the others are met by grad and jvp (the two code paths
#: of reverse and forward mode: each transform checks through the same Derivative base),
#: the derivatives of derivatives by a number and an array
EVERY_TRANSFORM = ("module float", "module array", "helper function", "closure variable")
NESTED = ("jvp of grad", "jacfwd of jacrev", "grad over a grad inside",
          "jacfwd over a grad inside")
CASES = [(s, t) for s in SCENARIOS for t in TRANSFORMS
         if (s in EVERY_TRANSFORM and t not in NESTED) or t in ("grad", "jvp") or
         (t in NESTED and s in ("module float", "module array"))]


@pytest.fixture(autouse=True)
def _state_restored():
    yield
    set_rate(1.0)
    COEFFS[:] = [1.0, 0.5, 0.25]


@pytest.mark.parametrize("scenario, transform", CASES)
def test_a_change_between_calls_is_seen(scenario, transform, monkeypatch):
    fn, change = SCENARIOS[scenario]
    make = TRANSFORMS[transform]
    derivative = make(fn)
    before = flat(derivative(X))
    np.testing.assert_allclose(before, flat(make(copy_of(fn))(X)), rtol=1e-12)
    change(monkeypatch)
    after = flat(derivative(X))
    expected = flat(make(copy_of(fn))(X))
    assert not np.allclose(before, expected), "the change must matter for the test to fail"
    np.testing.assert_allclose(after, expected, rtol=1e-12, atol=1e-14)


def test_a_global_array_rebound_is_passed_in_without_a_new_build(monkeypatch):
    """An array read from outside is read again at each call: a new array of the same
    dtype and rank is used at once, with the code already built."""
    g = ms.grad(weighted)
    g(X)
    builds = []
    original = g.build_code
    monkeypatch.setattr(g, "build_code", lambda *a: builds.append(a) or original(*a))
    for k in range(3):
        w = np.array([1.0, -2.0, 0.5]) * (k + 1)
        monkeypatch.setattr(HERE, "WEIGHTS", w)
        np.testing.assert_allclose(g(X), w * np.exp(X))
    assert builds == []
    # another rank is code of another specialisation: built again, and right
    monkeypatch.setattr(HERE, "WEIGHTS", np.ones((2, 3)))
    np.testing.assert_allclose(g(X), 2 * np.exp(X))
    assert len(builds) == 1


def test_a_value_changed_back_finds_its_earlier_build(monkeypatch):
    """Alternating values (train / eval, a flag) build once each, not at every change."""
    # a new function object: grad(flipped) is kept per function, and may have built before
    g = ms.grad(fresh_function(flipped))
    builds = []
    original = g.build_code
    monkeypatch.setattr(g, "build_code", lambda *a: builds.append(a) or original(*a))
    results = []
    for flag in (False, True, False, True):
        monkeypatch.setattr(HERE, "FLIP", flag)
        results.append(g(X))
    assert len(builds) == 2
    np.testing.assert_allclose(results[0], results[2])
    np.testing.assert_allclose(results[1], -np.sin(X) * X + np.cos(X))


def test_a_deleted_global_is_an_error_naming_it(monkeypatch):
    g = ms.grad(scaled)
    g(X)
    monkeypatch.delattr(HERE, "SCALE")
    with pytest.raises(UnsupportedConstructError, match="SCALE"):
        g(X)


class Model:
    def __init__(self, k):
        self.k = k

    @ms.grad
    def loss(self, x):
        return np.sum(self.k * x ** 2)


def test_an_attribute_under_a_decorated_method():
    m = Model(1.0)
    np.testing.assert_allclose(m.loss(X), 2 * X)
    m.k = 3.0
    np.testing.assert_allclose(m.loss(X), 6 * X)
    other = Model(-1.0)            # another instance: its own value, the first unchanged
    np.testing.assert_allclose(other.loss(X), -2 * X)
    np.testing.assert_allclose(m.loss(X), 6 * X)


class Halve(nn.Cell):
    def construct(self, x):
        return x * 0.5


class Negate(nn.Cell):
    def construct(self, x):
        return -x


class Tempered(nn.Cell):
    """A Cell with a temperature, a train-only branch and a sub-cell."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([0.5, -1.0, 2.0])), name="w")
        self.temperature = 1.0
        self.post = Halve()

    def construct(self, x):
        h = ops.tanh(self.w * x / self.temperature)
        if self.training:
            h = h * 3.0
        return ops.sum(self.post(h) * h)


@pytest.mark.parametrize("change", ["temperature", "set_train", "sub-cell", "parameter"])
def test_a_cell_changed_between_calls(change):
    net = Tempered()
    grad_fn = ms.value_and_grad(net, None, net.trainable_params())
    x = Tensor(X)
    before = grad_fn(x)
    if change == "temperature":
        net.temperature = 0.25
    elif change == "set_train":
        net.set_train(True)
    elif change == "sub-cell":
        net.post = Negate()
    else:   # a new Parameter in place of the one the gradient was asked for
        net.w = Parameter(Tensor(np.array([1.0, 1.0, 1.0])), name="w")
    after = grad_fn(x)
    fresh = ms.value_and_grad(net, None, net.trainable_params())(x)
    if change == "parameter":
        # the gradient is for the Parameter it was given, no longer read: zero
        np.testing.assert_allclose(after[0].asnumpy(), fresh[0].asnumpy())
        np.testing.assert_allclose(after[1][0].asnumpy(), 0.0)
        return
    assert not np.allclose(before[0].asnumpy(), fresh[0].asnumpy())
    np.testing.assert_allclose(after[0].asnumpy(), fresh[0].asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(after[1][0].asnumpy(), fresh[1][0].asnumpy(), rtol=1e-12)


STEPS = 20


def loop_scaled(x):
    s = 0.0
    for i in range(STEPS):
        s = s + SCALE * np.sin(x[i % 3] * s + 1.0)
    return s


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_a_compiled_loop_sees_a_changed_number(backend, monkeypatch):
    """Loop code (Numba) reads literals too: a changed number builds it again."""
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    g = ms.grad(loop_scaled)
    g(X)
    for scale, steps in ((3.0, STEPS), (3.0, 7)):
        monkeypatch.setattr(HERE, "SCALE", scale)
        monkeypatch.setattr(HERE, "STEPS", steps)
        np.testing.assert_allclose(g(X), ms.grad(copy_of(loop_scaled))(X), rtol=1e-12)



class Solver:
    """Calls its own methods (``self.rhs``): a bound method is a new object at each read."""

    def __init__(self, h):
        self.h = h

    def rhs(self, x, y):
        return x * np.sin(y)

    def step(self, x, y):
        return y + self.h * self.rhs(x, y + self.h * self.rhs(x, y))

    def last(self, x):
        y = x * 0.5
        for _ in range(3):
            y = self.step(x, y)
        return np.sum(y)


def _double_rhs(self, x, y):
    return 2.0 * x * np.sin(y)


def test_methods_called_on_self_are_built_once_and_checked(monkeypatch):
    """``self.rhs`` is guarded as the same function bound to the same object (it was an
    identity check a new method object never passed: a build at every call, the RK4
    class spelling of GradBench's ode 87 ms against 18 ms); rebinding the method on the
    class or the instance still builds again."""
    solver = Solver(0.1)
    g = ms.grad(solver.last)
    first = g(X)
    np.testing.assert_allclose(first, numerical_grad(solver.last, (X,), 0), rtol=1e-7)
    builds = []
    original = g.build_code
    monkeypatch.setattr(g, "build_code", lambda *a: builds.append(a) or original(*a))
    np.testing.assert_allclose(g(X), first)
    assert builds == []
    monkeypatch.setattr(Solver, "rhs", _double_rhs)
    changed = g(X)
    assert len(builds) == 1 and not np.allclose(changed, first)
    np.testing.assert_allclose(changed, numerical_grad(solver.last, (X,), 0), rtol=1e-7)
    monkeypatch.setattr(solver, "step", lambda x, y: y * x)
    np.testing.assert_allclose(g(X), 2 * X ** 3, rtol=1e-13)    # (y = x ** 4 / 2)


@pytest.mark.parametrize("transform", [lambda f: ms.jit(ms.grad(f)),
                                       lambda f: ms.grad(ms.jit(f)),
                                       lambda f: ms.vmap(ms.grad(f))])
def test_methods_called_on_self_under_other_transforms(transform, monkeypatch):
    solver = Solver(0.1)
    g = transform(solver.last)
    xs = np.stack([X, 2 * X]) if "vmap" in repr(g) or hasattr(g, "in_axes") else None
    args = (X,) if xs is None else (xs,)
    first = g(*args)
    np.testing.assert_allclose(g(*args), first)
    monkeypatch.setattr(Solver, "rhs", _double_rhs)
    want = ms.grad(Solver(0.1).last)
    expected = want(X) if xs is None else np.stack([want(r) for r in xs])
    np.testing.assert_allclose(g(*args), expected, rtol=1e-12)
