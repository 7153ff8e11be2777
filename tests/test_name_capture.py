"""The generator's own names never capture the user's.

Generated code names adjoints (``dx``), temporaries (``t1``), tape stacks (``s_stack``),
iteration counters (``n_iter``), the output (``value``), modules (``np``, ``rt``,
``math``)...  A user variable with one of those names must keep its meaning.  The
property test renames every variable of random programs (tests/test_random_programs.py)
to the names s2sgrad itself emitted for them, and requires the same gradients, matching
finite differences, under both backends.
"""
import ast
import builtins
import importlib.util
import itertools
import keyword
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import s2sgrad
from s2sgrad.testing import check_grad

from test_random_programs import programs

HELPER = ("import numpy as np\n\n\ndef helper(v, c):\n"
          "    t = np.sum(np.sin(v) * c)\n    if t > 0.0:\n        return t * t\n"
          "    return -t\n\n\n")
#: names any generated module reads: a user variable named so must still work
ALWAYS = ["value", "out", "dout", "rt", "math", "n_iter", "dx", "dvalue", "t1", "t2", "_",
          "x_stack", "s_stack", "stop", "i_1", "d_parts", "x_1", "dt1", "f_value_and_grad",
          "returned", "result", "broke", "items", "choice", "n"]
_counter = itertools.count()


def load(text, directory, name="f"):
    path = directory / f"capture_program_{next(_counter)}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def user_names(text):
    """The variables of a module's functions (parameters and assigned/read names), except
    the modules and functions it reads."""
    tree = ast.parse(text)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return sorted(n for n in names if n not in ("np", "helper", "f") and
                  not hasattr(builtins, n))


def generated_names(source):
    """Every identifier the generated source uses (its own names and the user's)."""
    body = "\n".join(line.split("#", 1)[0] for line in source.splitlines())
    return sorted({n for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", body)
                   if not keyword.iskeyword(n) and n not in ("np", "import", "from")
                   and not hasattr(builtins, n)})


def rename(text, mapping):
    """``text`` with the variables in ``mapping`` renamed (parameters included)."""
    tree = ast.parse(text)

    class Renamer(ast.NodeTransformer):
        def visit_Name(self, node):
            node.id = mapping.get(node.id, node.id)
            return node

        def visit_arg(self, node):
            node.arg = mapping.get(node.arg, node.arg)
            return node
    return ast.unparse(Renamer().visit(tree)) + "\n"


def captured_variant(text, source, draw_order):
    """``text`` with its variables renamed to names the generated ``source`` (and every
    generated module) uses, in an order picked by ``draw_order``."""
    own = user_names(text)
    pool = [n for n in dict.fromkeys(ALWAYS + generated_names(source)) if n not in own]
    pool = draw_order(pool)
    mapping = dict(zip(own, pool))
    return rename(text, mapping), mapping


def gradients(fn, x, a):
    g = s2sgrad.grad(fn, (0, 1))
    gx, ga = g(x, a)
    return np.asarray(gx), float(ga), g


def check_renamed(source, seed, order_seed, directory):
    """The renamed program's gradient, under the backend the test set, against the
    original's under Python (the reference: compiling it too is a second Numba compile
    per program that checks nothing about names) and against finite differences."""
    text = HELPER + source
    rng = np.random.default_rng(seed)
    x, a = rng.uniform(-1.0, 1.0, 4), float(rng.uniform(-1.0, 1.0))
    fn = load(text, directory)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("S2SGRAD_BACKEND", "python")
        gx, ga, g = gradients(fn, x, a)
    order = np.random.default_rng(order_seed)
    renamed, mapping = captured_variant(text, g.source,
                                        lambda pool: [pool[k] for k in order.permutation(len(pool))])
    fn2 = load(renamed, directory)
    try:
        gx2, ga2, _ = gradients(fn2, x, a)
        np.testing.assert_allclose(gx2, gx, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ga2, ga, rtol=1e-9, atol=1e-12)
        check_grad(fn2, (x, a), grad_position=(0, 1), rtol=1e-4, atol=1e-6)
    except Exception as exc:   # any failure: show both programs, ready to paste
        raise AssertionError(f"{type(exc).__name__}: {exc}\nrenamed {mapping}\n"
                             f"--- program ---\n{renamed}") from None


RELAXED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("capture")


@settings(max_examples=60, deadline=None, suppress_health_check=RELAXED)
@given(source=programs(), seed=st.integers(0, 2 ** 16), order=st.integers(0, 2 ** 16))
def test_user_names_equal_to_generated_names_keep_gradients(source, seed, order, program_dir,
                                                            monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    check_renamed(source, seed, order, program_dir)


@settings(max_examples=3, deadline=None, suppress_health_check=RELAXED)
@given(source=programs(), seed=st.integers(0, 2 ** 16), order=st.integers(0, 2 ** 16))
def test_user_names_equal_to_generated_names_under_numba(source, seed, order, program_dir,
                                                         monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")    # seconds of compiling per program
    check_renamed(source, seed, order, program_dir)


# ---------------------------------------------------------------- direct regressions


def test_issue_example_value_is_not_overwritten(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")

    def f(x, value):
        s = 0.0
        for i in range(3):
            s = s + x * value
        return s * value
    gx, gv = s2sgrad.grad(f, (0, 1))(2.0, 1.5)
    assert gx == pytest.approx(6.75) and gv == pytest.approx(18.0)


SOURCE = """
import numpy as np

def f({a}, {b}):
    {c} = 0.0
    for {d} in range(3):
        {c} = {c} + np.sin({a}) * {b}
    {e} = np.zeros(3)
    {e}[1] = {c} * {b}
    if {c} > 0.0:
        {c} = {c} * {a}
    return np.sum({e}) + {c} * {b}
"""

NAMES = ["out", "dout", "rt", "value", "n_iter", "dx", "math", "t1", "s_stack", "dvalue",
         "d", "_", "stop", "f_value_and_grad", "value_1", "dt1", "e_saved", "e_old"]


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_arguments_and_locals_named_like_generated_names(backend, monkeypatch, tmp_path):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    plain = load(SOURCE.format(a="a", b="b", c="c", d="i", e="e"), tmp_path)
    want = s2sgrad.grad(plain, (0, 1))(0.7, 1.3)
    groups = [NAMES[k:k + 5] for k in range(0, len(NAMES), 5)]
    if backend == "numba":
        groups = groups[:1]        # a compile costs seconds
    for group in groups:
        group = (group + ["z1", "z2", "z3", "z4"])[:5]
        fn = load(SOURCE.format(a=group[0], b=group[1], c=group[2], d=group[3], e=group[4]),
                  tmp_path)
        got = s2sgrad.grad(fn, (0, 1))(0.7, 1.3)
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=str(group))
        check_grad(fn, (0.7, 1.3), grad_position=(0, 1))


def test_generated_names_avoid_every_user_name(monkeypatch):
    """A name the generator invents is never one of the user's: the output is
    ``value_1`` when the user has a ``value``, the counter ``n_iter_1``..."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")

    def f(x, value, n_iter, dx):
        s = x
        for k in range(2):
            s = s * value + dx
        return s + n_iter
    source = s2sgrad.grad(f, (0, 1, 3))
    gx, gv, gdx = source(0.5, 2.0, 1.0, 0.25)
    text = source.source
    assert "n_iter_1 = 0" in text            # the counter: the user has an n_iter
    assert "(x, value, n_iter, dx):" in text  # the user's names stay the arguments'
    # f = ((x*v + dx)*v + dx) + n:  df/dx = v^2, df/dv = 2 x v + dx, df/ddx = v + 1
    assert (gx, gv, gdx) == pytest.approx((4.0, 2 * 0.5 * 2.0 + 0.25, 3.0))


def test_helper_locals_named_like_generated_names(monkeypatch, tmp_path):
    """An inlined helper's names are claimed too."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    fn = load("import numpy as np\n\n"
              "def helper(value, stop):\n"
              "    n_iter = 0.0\n"
              "    for k in range(3):\n"
              "        if value > 10.0:\n"
              "            break\n"
              "        n_iter = n_iter + value * stop\n"
              "        value = value * 1.5\n"
              "    return n_iter\n\n"
              "def f(x, y):\n"
              "    stop_1 = x * 2.0\n"
              "    return helper(x, y) + stop_1\n", tmp_path)
    check_grad(fn, (1.1, 0.7), grad_position=(0, 1))
    check_grad(fn, (4.1, 0.7), grad_position=(0, 1))


def test_globals_and_cell_attributes_named_like_generated_names(monkeypatch, tmp_path):
    """Arrays read from globals and Cell attributes become arguments of the generated
    function; their names must not capture either."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    fn = load("import numpy as np\n\n"
              "value = np.array([0.5, -1.0, 2.0])\n"
              "dx = np.array([1.5, 0.25, -0.5])\n"
              "rt = np.array([0.1, 0.2, 0.3])\n\n"
              "def f(x, n_iter):\n"
              "    s = x * value\n"
              "    for k in range(2):\n"
              "        s = np.sin(s) * dx + rt * n_iter\n"
              "    return np.sum(s * value)\n", tmp_path)
    x = np.array([0.3, 0.7, -0.2])
    check_grad(fn, (x, 1.3), grad_position=(0, 1))

    from s2sgrad import Parameter, Tensor, nn

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.value = Parameter(Tensor(np.array([0.5, -1.0, 2.0])), name="value")
            self.out = Parameter(Tensor(np.array([1.5, 0.25, -0.5])), name="out")

        def construct(self, dout):
            h = dout * self.value
            for k in range(2):
                h = np.tanh(h) + self.out
            return np.sum(h * self.value)
    net = Net()
    grads = s2sgrad.grad(net, 0, net.trainable_params())(Tensor(x))
    eps = 1e-6
    base = [p.asnumpy().copy() if hasattr(p, "asnumpy") else np.asarray(p).copy()
            for p in net.trainable_params()]

    def loss(v, o, d):
        h = d * v
        for k in range(2):
            h = np.tanh(h) + o
        return np.sum(h * v)
    want = [np.array([(loss(*[b + eps * np.eye(3)[i] * (j == m) for m, b in
                                enumerate(base)], x) -
                        loss(*[b - eps * np.eye(3)[i] * (j == m) for m, b in
                               enumerate(base)], x)) / (2 * eps) for i in range(3)])
            for j in range(2)]
    got = grads[1]
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g.asnumpy() if hasattr(g, "asnumpy") else g),
                                   w, rtol=1e-5, atol=1e-7)


def skip_else_named(x, tape):
    # (hypothesis found it: a local named like the generated module's SKIP_ELSE global,
    # which a fused loop's guard reads: its array was read as the flag and the guard's
    # rt.FusedGuardFailed escaped to the caller)
    parts = []
    for i in range(3):
        parts.append(x * x[i])
    if np.sum(x) > -0.57:
        tape = tape * 1.5 + tape
        SKIP_ELSE = tape + tape + np.sum(x) * 0.1
        tape = tape + 0.1 * SKIP_ELSE
    out = np.zeros((3, 4))
    for i in range(3):
        for j in range(4):
            out[i, j] += np.stack(parts)[-1][j] * (i + 1.0) + tape
        out[i] = np.tanh(out[i])
    return np.sum(np.sum(out, axis=0)) + tape


def test_a_local_named_like_the_fused_loops_flag_keeps_its_gradient():
    x = np.linspace(-0.4, 0.6, 4)
    g = s2sgrad.grad(skip_else_named, (0, 1))
    check_grad(skip_else_named, (x, 0.3), grad_position=(0, 1))
    assert "SKIP_ELSE_1" in g.source or "SKIP_ELSE" not in g.source
