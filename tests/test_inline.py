"""Single-use temporaries written into their reader (s2sgrad/compiler/optimize/substitute.py):
inlining in straight-line code, fusion of elementwise temporaries in loop bodies.

The MLP class of programs (dense layers, an activation, a loss) gets no named array
that numpy could have reused: ``x @ W + b`` is one statement, and the adjoint a matmul
gives the layer below is multiplied by the activation's derivative in the statement
that makes it (numpy then updates it in place): ``dz @ W3.T * (a2 >= 0.0)``.  The gradients stay those of central
finite differences.  The pass itself moves a definition only where the meaning stays.
"""
import ast
import importlib
import inspect
import pkgutil
import re

import gast
import numpy as np
import pytest

import s2sgrad
from s2sgrad import nn
from s2sgrad import runtime
from s2sgrad.compiler.syntax.nodes import Comment, name_uses
from s2sgrad.compiler.syntax.source import to_source
from s2sgrad.compiler.optimize.substitute import RUNTIME_WRITERS, fused_forward, \
    inline_temporaries
from s2sgrad.testing import check_grad


def relu(a):
    return np.maximum(a, 0.0)


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def softmax_cross_entropy(z, onehot):
    m = np.max(z, axis=1, keepdims=True)
    logp = z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))
    return -np.sum(onehot * logp) / z.shape[0]


def relu_mlp(W1, b1, W2, b2, W3, b3, x, y):
    h1 = np.maximum(x @ W1 + b1, 0.0)
    h2 = np.maximum(h1 @ W2 + b2, 0.0)
    z = h2 @ W3 + b3
    m = np.max(z, axis=1, keepdims=True)
    logp = z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))
    return -np.sum(y * logp) / x.shape[0]


def tanh_mse(W1, b1, W2, b2, W3, b3, x, y):
    h1 = np.tanh(x @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    return np.mean((h2 @ W3 + b3 - y) ** 2)


def sigmoid_mse(W1, b1, W2, b2, W3, b3, x, y):
    h1 = 1.0 / (1.0 + np.exp(-(x @ W1 + b1)))
    h2 = 1.0 / (1.0 + np.exp(-(h1 @ W2 + b2)))
    out = h2 @ W3 + b3
    return np.sum((out - y) ** 2) / x.shape[0]


def mlp_arguments(sizes, batch, dtype, seed=0):
    rng = np.random.default_rng(seed)
    weights = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        weights += [rng.normal(size=(fan_in, fan_out)) / np.sqrt(fan_in),
                    rng.normal(size=fan_out) * 0.1]
    x = rng.normal(size=(batch, sizes[0]))
    y = np.eye(sizes[-1])[rng.integers(0, sizes[-1], size=batch)]
    return tuple(np.asarray(a, dtype=dtype) for a in weights + [x, y])


def _code_lines(source):
    return [line.strip() for line in source.splitlines()
            if line.strip() and not line.strip().startswith("#")]


@pytest.mark.parametrize("fn", [relu_mlp, tanh_mse, sigmoid_mse])
@pytest.mark.parametrize("sizes, batch", [((7, 6, 5, 3), 4), ((12, 9, 4, 2), 5)])
def test_mlp_class_names_no_array_numpy_could_reuse(fn, sizes, batch):
    args = mlp_arguments(sizes, batch, np.float64)
    g = s2sgrad.value_and_grad(fn, (0, 1, 2, 3, 4, 5))
    g(*args)
    lines = _code_lines(g.source)
    # the forward sweep: no product named only to have a bias added
    assert not [line for line in lines if re.fullmatch(r"\w+ = \w+ @ \w+", line)], g.source
    assert "x @ W1 + b1" in g.source and "h1 @ W2 + b2" in g.source
    # the adjoint sweep: the adjoint a matmul gives a hidden layer is not named before
    # the activation's derivative multiplies it (its only reader)
    values = [ast.parse(line).body[0].value for line in lines if " = " in line
              and not line.startswith("return")]
    alone = [v for v in values if isinstance(v, ast.BinOp) and isinstance(v.op, ast.MatMult)
             and ast.unparse(v.right).endswith(".T")]
    assert not alone, g.source
    inside = [v for v in values if isinstance(v, ast.BinOp) and
              re.search(r"@ W[23]\.T\)? [*/]", ast.unparse(v))]
    assert len(inside) == 2, g.source
    # the matrices' adjoints are plain products, as one writes them by hand
    assert "h1.T @ " in g.source and "x.T @ " in g.source and "rt.matmul" not in g.source
    check_grad(fn, args, grad_position=(0, 1, 2, 3, 4, 5))


@pytest.mark.parametrize("fn", [relu_mlp, tanh_mse])
def test_float32_mlp_gradients_stay_float32_and_agree_with_float64(fn):
    args64 = mlp_arguments((10, 8, 6, 3), 4, np.float64)
    args32 = tuple(a.astype(np.float32) for a in args64)
    g = s2sgrad.value_and_grad(fn, (0, 1, 2, 3, 4, 5))
    _, grads64 = g(*args64)
    _, grads32 = g(*args32)
    for a, b in zip(grads32, grads64):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-5)


# ---------------------------------------------------------------- the pass itself


def _statements(text):
    """gast statements (and ``Comment`` for lines ``# ...``) of a function body."""
    out = []
    for line in text.strip().splitlines():
        line = line.strip()
        out.append(Comment(line[2:]) if line.startswith("#") else gast.parse(line).body[0])
    return out


def _text(items):
    return [f"# {i.text}" if isinstance(i, Comment) else to_source(i) for i in items]


def _inline(forward, backward="", invented=None, keep=frozenset()):
    forward, backward = _statements(forward), _statements(backward) if backward else []
    names = {n.id for s in forward + backward if not isinstance(s, Comment)
             for n in gast.walk(s) if isinstance(n, gast.Name)}
    fw, bw = inline_temporaries(forward, backward, names if invented is None else invented,
                                keep)
    return _text(fw), _text(bw)


def test_a_single_use_temporary_moves_past_pure_assignments_into_its_reader():
    fw, _ = _inline("""
        t1 = x @ w
        n = x.shape[0]
        y = t1 + b
        out = y / n
    """, invented={"t1"})
    assert fw == ["n = x.shape[0]", "y = x @ w + b", "out = y / n"]


def test_user_variables_kept_names_and_names_read_twice_stay():
    fw, _ = _inline("""
        a = x @ w
        y = a + b
        t2 = y * 2
        out = t2 + t2
    """, invented={"t2"})
    assert fw == ["a = x @ w", "y = a + b", "t2 = y * 2", "out = t2 + t2"]
    fw, _ = _inline("""
        t1 = x @ w
        y = t1 + b
    """, invented={"t1"}, keep={"t1"})
    assert fw == ["t1 = x @ w", "y = t1 + b"]


@pytest.mark.parametrize("between", [
    "rt.add_at(x, i, g)",          # updates x in place
    "x += 1.0",                    # in place
    "x = x * 2",                   # rebinds a name the temporary reads
    "u = helper(x)",               # a call that may have effects
    "u = np.random.normal(size=3)",  # draws: the order of draws would change
    "x[0] = 1.0",
])
def test_a_definition_never_moves_past_what_may_change_its_value(between):
    fw, _ = _inline(f"""
        t1 = x * 3.0
        {between}
        y = t1 + b
    """, invented={"t1", "u"})
    assert fw[0] == "t1 = x * 3.0", fw


def test_an_impure_definition_stays():
    fw, _ = _inline("""
        t1 = np.random.normal(size=3)
        y = t1 + b
    """, invented={"t1"})
    assert fw == ["t1 = np.random.normal(size=3)", "y = t1 + b"]


def test_the_forward_sweep_keeps_each_line_s_block_and_the_adjoint_sweep_may_cross():
    forward = """
        # a = f(x)  (f.py:2)
        t1 = x * 3.0
        # y = a + b  (f.py:3)
        y = t1 + b
    """
    fw, _ = _inline(forward, invented={"t1"})
    assert "t1 = x * 3.0" in fw
    backward = """
        # grad of: z = h @ w  (f.py:4)
        dw = rt.matmul_right(dz, h, w)
        dh = rt.matmul_left(dz, h, w)
        # grad of: h = np.tanh(a)  (f.py:3)
        da = dh * (1 - h * h)
    """
    _, bw = _inline("y = x", backward, invented={"dh"})
    assert bw == ["# grad of: z = h @ w  (f.py:4)", "dw = rt.matmul_right(dz, h, w)",
                  "# grad of: h = np.tanh(a)  (f.py:3)",
                  "da = rt.matmul_left(dz, h, w) * (1 - h * h)"]


def test_a_block_keeps_its_last_statement():
    _, bw = _inline("y = x", """
        # sensitivity of the output
        dt6 = rt.ones_like(t6)
        # grad of: return t6 / n  (f.py:3)
        dt5 = dt6 / n
        dx = dt5 * 2
    """, invented={"dt6", "dt5"})
    assert bw[1] == "dt6 = rt.ones_like(t6)"
    assert bw[3:] == ["dx = dt6 / n * 2"]


def test_chains_stop_at_two_operations_and_negations_read_as_subtractions():
    fw, _ = _inline("""
        t1 = np.exp(x)
        t2 = t1 + 1.0
        t3 = t2 * y
        t4 = -t3
        out = z + t4
    """, invented={"t1", "t2", "t3", "t4"})
    # t2 takes in t1 and t3 takes in t2 (two operations); t3 (three) stays named
    assert fw == ["t3 = (np.exp(x) + 1.0) * y", "out = z - t3"], fw


def test_a_definition_is_not_inlined_into_a_lambda_or_a_compound_statement():
    fw, _ = _inline("""
        t1 = x * 3.0
        f = lambda: t1 + 1
    """, invented={"t1"})
    assert fw[0] == "t1 = x * 3.0"


def test_a_definition_is_not_inlined_into_a_comprehension_nor_past_a_line_s_end():
    fw, _ = _inline("""
        t1 = x * 3.0
        ys = [t1 + v for v in vs]
    """, invented={"t1"})
    assert fw[0] == "t1 = x * 3.0"
    long = "a_rather_long_variable_name_that_fills_the_line"
    fw, _ = _inline(f"""
        t1 = {long} * 3.0
        y = {long} + t1 + {long}
    """, invented={"t1"})
    assert fw[0] == f"t1 = {long} * 3.0", fw
    fw, _ = _inline("""
        t1 = -b * c
        a += t1
    """, invented={"t1"})
    assert fw == ["a -= b * c"]


def _inline_block(text, invented):
    fw, _ = inline_temporaries(gast.parse(inspect.cleandoc(text)).body, [], invented)
    return ast.unparse(gast.gast_to_ast(gast.Module(body=fw, type_ignores=[])))


def test_a_definition_moves_within_its_if_block_only_and_loop_bodies_are_left_alone():
    assert _inline_block("""
        t1 = x * 3.0
        if c:
            t2 = x * 2.0
            y = t2 + 1.0
            z = t1 + 1.0
        for i in r:
            t3 = x * 2.0
            w = t3 + 1.0
    """, {"t1", "t2", "t3"}) == inspect.cleandoc("""
        t1 = x * 3.0
        if c:
            y = x * 2.0 + 1.0
            z = t1 + 1.0
        for i in r:
            t3 = x * 2.0
            w = t3 + 1.0
    """)


def test_a_definition_moves_past_a_tape_s_push_unless_it_reads_the_tape():
    fw, _ = _inline("""
        t1 = x * 3.0
        top = rt.push(tape, top, x)
        x_stack.append(x)
        y = t1 + b
    """, invented={"t1"})
    assert fw == ["top = rt.push(tape, top, x)", "x_stack.append(x)", "y = x * 3.0 + b"]
    for read, push in [("tape[0]", "top = rt.push(tape, top, x)"),    # writes tape
                       ("top", "top = rt.push(tape, top, x)"),        # rebinds top
                       ("tape_stack[0]", "tape_stack.append(x)")]:
        fw, _ = _inline(f"""
            t1 = {read} * 3.0
            {push}
            y = t1 + b
        """, invented={"t1"})
        assert fw[0] == f"t1 = {read} * 3.0", fw


def test_runtime_writers_lists_every_helper_that_updates_an_argument():
    """A helper that writes into an argument must be in RUNTIME_WRITERS: the inliner
    never moves a definition past a call of one."""
    writers = set()
    modules = [runtime] + [importlib.import_module(f"{runtime.__name__}.{info.name}")
                           for info in pkgutil.iter_modules(runtime.__path__)]
    assert len(modules) >= 8, modules
    for module in modules:
        tree = ast.parse(inspect.getsource(module))
        for fn in tree.body:
            if isinstance(fn, ast.FunctionDef) and not fn.name.startswith("_") \
                    and _writes_argument(fn):
                writers.add(fn.name)
    # rollaxis_adjoint's ``axis %= n`` rebinds an int argument: it writes nothing
    assert writers - {"rollaxis_adjoint"} <= RUNTIME_WRITERS, writers - RUNTIME_WRITERS
    assert {"add_at", "push", "item_added", "add_into", "add_matmul_left"} <= writers


def _writes_argument(fn):
    params = {a.arg for a in fn.args.args}

    def base(node):
        while isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    for node in ast.walk(fn):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AugAssign) else []
        if any(isinstance(t, ast.Subscript) and base(t) in params for t in targets):
            return True
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and \
                node.target.id in params:
            return True       # out += value: in place when out is an array
        if isinstance(node, ast.Call):
            if any(k.arg == "out" and base(k.value) in params for k in node.keywords):
                return True
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "at" and node.args \
                    and base(node.args[0]) in params:
                return True
            if isinstance(func, ast.Attribute) and func.attr in (
                    "append", "extend", "fill", "sort", "insert", "pop") \
                    and base(func.value) in params:
                return True
    return False


# ---------------------------------------------------------------- broadcasting for rt.unreduce


def scaled_sum(x, w):
    return np.sum(x * w)


def softmax_of_rows(z, w):
    e = np.exp(z)
    return np.sum(e / np.sum(e, axis=1, keepdims=True) * w)


def test_a_reduction_s_adjoint_is_broadcast_by_the_array_it_meets():
    args = mlp_arguments((7, 6, 5, 3), 4, np.float64)
    g = s2sgrad.value_and_grad(relu_mlp, (0, 1, 2, 3, 4, 5))
    g(*args)
    # the full sum's adjoint times y, the max's adjoint times its mask: no rt.unreduce
    assert "rt.unreduce" not in g.source, g.source
    z, w = np.random.default_rng(3).normal(size=(2, 4, 5))
    g = s2sgrad.grad(softmax_of_rows, 0)    # (with dw too, the sum's adjoint is read twice)
    g(z, w)
    assert "dt2 = dt4 * w" in g.source, g.source      # the full sum's adjoint, times w
    check_grad(softmax_of_rows, (z, w), grad_position=(0, 1))


def test_a_reduction_s_adjoint_stays_spread_where_the_other_operand_is_smaller():
    # d(x * w)/dx: the sum's adjoint times w, which has fewer elements than x * w
    x, w = np.random.default_rng(4).normal(size=(3, 4)), np.arange(1.0, 5.0)
    g = s2sgrad.grad(scaled_sum, (0, 1))
    dx, dw = g(x, w)
    assert dx.shape == (3, 4) and dw.shape == (4,)
    check_grad(scaled_sum, (x, w), grad_position=(0, 1))
    _, bw = _inline("y = x", """
        dt = rt.unreduce(g, t, None, False)
        dx = dt * w
        dm = rt.unreduce(g, t, 1, False)
        dy = dm * t
        dk = rt.unreduce(g, t, 1, True)
        dv = dk / t
    """, invented={"dt", "dm", "dk"})
    assert bw == ["dx = rt.unreduce(g, t, None, False) * w",   # w is not known to be t's shape
                  "dy = rt.unreduce(g, t, 1, False) * t",      # g lacks axis 1: not broadcast
                  "dv = g / t"]


# ---------------------------------------------------------------- a Cell-style network


class _DenseNet(nn.Cell):
    def __init__(self, sizes):
        super().__init__()
        self.fc1 = nn.Dense(sizes[0], sizes[1], activation="relu")
        self.fc2 = nn.Dense(sizes[1], sizes[2], activation="tanh")
        self.fc3 = nn.Dense(sizes[2], sizes[3])

    def construct(self, x):
        return self.fc3(self.fc2(self.fc1(x)))


NET = _DenseNet((8, 7, 6, 3))
MSE = nn.MSELoss()


def cell_loss(x, y):
    return MSE(NET(x), y)


def dense_function(W1, b1, W2, b2, W3, b3, x, y):
    h1 = np.maximum(x @ W1.T + b1, 0.0)
    h2 = np.tanh(h1 @ W2.T + b2)
    return np.mean((h2 @ W3.T + b3 - y) ** 2)


def test_a_cell_network_adds_its_biases_to_unnamed_products():
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=(5, 8)), rng.normal(size=(5, 3))
    params = NET.trainable_params()
    g = s2sgrad.value_and_grad(cell_loss, None, weights=params)
    value, grads = g(x, y)
    # ops.add(x, bias) is np.add: written + so that numpy may add in place
    assert "np.add(" not in g.source, g.source
    assert re.search(r"= \w+ @ np\.transpose\(fc1_weight, \(1, 0\)\) \+ fc1_bias", g.source), \
        g.source
    arrays = tuple(np.asarray(p.asnumpy(), dtype=np.float64) for p in params)
    check_grad(dense_function, arrays + (x, y), grad_position=(0, 1, 2, 3, 4, 5))
    want_value, want = s2sgrad.value_and_grad(dense_function, (0, 1, 2, 3, 4, 5))(
        *arrays, x, y)
    np.testing.assert_allclose(value, want_value, rtol=1e-6)
    for got, expected in zip(grads, want):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- fusion of loop bodies


def _fuse(body, arrays=None, loop=True):
    """``body`` (lines; ``# @N``: the location comment of user line N) fused as the body
    of a loop (or as straight-line code) with every name an array (or ``arrays``)."""
    items = [Comment("", int(i.text[1:])) if isinstance(i, Comment) and i.text[:1] == "@"
             else i for i in _statements(body)]
    names = {n.id for s in items if not isinstance(s, Comment)
             for n in gast.walk(s) if isinstance(n, gast.Name)}
    if loop:
        loop = gast.parse("for i in r:\n    pass").body[0]
        loop.body, items = items, [loop]
    out = fused_forward(items, name_uses(items)[0], names if arrays is None else arrays)
    return _text(out[0].body if loop else out)


CHAIN = """
    t1 = u[1:] * k
    t2 = np.sin(t1)
    y = t2 + u[:-1]
"""


def test_a_loop_body_s_elementwise_chain_is_one_expression_in_its_reader():
    assert _fuse(CHAIN) == ["y = np.sin(u[1:] * k) + u[:-1]"]
    assert _fuse(CHAIN, loop=False) == _text(_statements(CHAIN))      # loop-free: numpy
    assert _fuse(CHAIN, arrays={"t2", "u", "y"}) == ["t1 = u[1:] * k", "y = np.sin(t1) + u[:-1]"]
    assert _fuse("t1 = u @ w\ny = t1 + 1.0") == ["t1 = u @ w", "y = t1 + 1.0"]


@pytest.mark.parametrize("between, crossed", [
    ("# @1", True), ("# a remark", True), ("# @2", False),     # the same user line only
    ("z = v * 2.0", True),
    ("top = rt.push(tape, top, v)", True), ("v_stack.append(v)", True),
    ("u = v * 2.0", False), ("u[0] = 1.0", False), ("u += 1.0", False), ("np.sum(u)", False),
    ("z = rt.add_at(u, i, g)", False), ("z = helper(u)", False), ("if c: z = 1.0", False),
])
def test_a_loop_body_s_temporary_moves_past_what_leaves_its_operands_be(between, crossed):
    fused = _fuse(f"""
        # @1
        t1 = u * k
        {between}
        y = t1 + 1.0
    """)
    assert ("t1 = u * k" not in fused) == crossed, fused


@pytest.mark.parametrize("reader", ["total += t1", "y = t1 + t1", "f = lambda: t1 + 1.0",
                                    "ys = [t1 + v for v in vs]"])
def test_a_loop_body_s_temporary_goes_into_one_assignment_s_value_only(reader):
    assert _fuse(f"t1 = u * k\n{reader}")[0] == "t1 = u * k"
