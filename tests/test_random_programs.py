"""Random small programs (straight-line code, branches, loops, in-place updates), each
differentiated by s2sgrad and checked against central finite differences, in three
profiles: reverse mode (``check``: the gradient), forward mode (``check_forward``: jvp
along a random direction, against a difference of the function) and second order
(``check_second_order``: hvp along a random direction, against a difference of the
gradient), and compositions (``check_composition``: grad, jacfwd or jacrev of a random
chain of transforms of depth 0-2 under any transform, the inner object made outside,
called inside or made inside a function being differentiated, against a difference of the
next-lower chain).

Hypothesis draws the programs; a failing one is printed as source, ready to paste.  The
Python backend keeps this fast; a few programs run under Numba.
``benchmarks/fuzz_programs.py --profile forward|second|compose`` runs the long profiles.
"""
import importlib.util
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import s2sgrad
from s2sgrad.errors import DerivativeCompositionError
from s2sgrad.testing import check_grad

UNARY = ["np.sin({})", "np.tanh({})", "np.cos({})", "({} * 0.5)", "np.exp(np.sin({}))",
         "({} * {} * 0.3)", "np.sqrt({} * {} + 1.0)"]
BINARY = ["({} + {})", "({} - {})", "({} * {})", "np.maximum({}, {} + 0.25)",
          "np.where({0} > {1}, {0}, {1} * 0.5)"]
_counter = itertools.count()


@st.composite
def programs(draw):
    """Source of ``def f(x, a)`` with x a 4-vector and a a float."""
    arrays, scalars = ["x"], ["a"]
    lines = ["def f(x, a):"]

    def pick(pool):
        return draw(st.sampled_from(pool))

    def expression(pool):
        if draw(st.booleans()):
            template = pick(UNARY)
            v = pick(pool)
            return template.format(v, v)
        template = pick(BINARY)
        return template.format(pick(pool), pick(pool))

    def statement(indent, depth):
        kind = draw(st.sampled_from(["array", "scalar", "index", "if", "loop", "setitem",
                                     "while", "break", "helper", "append", "return",
                                     "tuple", "grid", "stencil", "rows", "rebind", "last"]
                                    if depth < 2 else ["array", "scalar", "index", "helper"]))
        pad = "    " * indent
        if kind == "array":
            name = f"v{next(_counter)}"
            lines.append(f"{pad}{name} = {expression(arrays)}")
            arrays.append(name) if indent == 1 else None
        elif kind == "scalar":
            name = f"s{next(_counter)}"
            lines.append(f"{pad}{name} = {expression(scalars)} + np.sum({pick(arrays)}) * 0.1")
            scalars.append(name) if indent == 1 else None
        elif kind == "index":
            name = f"s{next(_counter)}"
            lines.append(f"{pad}{name} = {pick(arrays)}[{draw(st.integers(-4, 3))}] * "
                         f"{pick(scalars)}")
            scalars.append(name) if indent == 1 else None
        elif kind == "if":
            threshold = draw(st.floats(-1.5, 1.5)).__round__(3) + 0.0137
            lines.append(f"{pad}if np.sum({pick(arrays)}) > {threshold}:")
            target = pick(scalars)
            lines.append(f"{pad}    {target} = {target} * 1.5 + {pick(scalars)}")
            statement(indent + 1, depth + 1)
            lines.append(f"{pad}else:")
            lines.append(f"{pad}    {target} = np.sin({target}) - 0.2")
        elif kind == "loop":
            acc = pick(scalars)
            arr = pick(arrays)
            lines.append(f"{pad}for i in range({draw(st.integers(0, 4))}):")
            lines.append(f"{pad}    {acc} = np.tanh({acc} * 0.7 + {arr}[i] * {pick(scalars)})")
            statement(indent + 1, depth + 1)
        elif kind == "while":
            acc, counter = pick(scalars), f"n{next(_counter)}"
            lines.append(f"{pad}{counter} = 0")
            lines.append(f"{pad}while {acc} * {acc} < 2.0 and {counter} < 3:")
            lines.append(f"{pad}    {acc} = {acc} * 1.3 + np.sum({pick(arrays)}) * 0.05 + 0.1")
            lines.append(f"{pad}    {counter} = {counter} + 1")
        elif kind == "break":
            acc, arr = pick(scalars), pick(arrays)
            lines.append(f"{pad}for i in range(4):")
            lines.append(f"{pad}    if {arr}[i] > {draw(st.floats(-0.9, 0.9)).__round__(3) + 0.0071}:")
            lines.append(f"{pad}        {'break' if draw(st.booleans()) else 'continue'}")
            lines.append(f"{pad}    {acc} = {acc} + {arr}[i] * {pick(scalars)}")
        elif kind == "helper":
            name = f"s{next(_counter)}"
            lines.append(f"{pad}{name} = helper({pick(arrays)}, {pick(scalars)})")
            scalars.append(name) if indent == 1 else None
        elif kind == "append":
            name = f"l{next(_counter)}"
            arr = pick(arrays)
            lines.append(f"{pad}{name} = []")
            lines.append(f"{pad}for i in range({draw(st.integers(1, 4))}):")
            lines.append(f"{pad}    {name}.append({arr} * {arr}[i])")
            if indent == 1:
                arrays.append(f"np.stack({name})[-1]")
        elif kind == "tuple":
            p, q = f"p{next(_counter)}", f"q{next(_counter)}"
            lines.append(f"{pad}pair = ({pick(arrays)} * {pick(scalars)}, {pick(scalars)} + 1.0)")
            lines.append(f"{pad}for i in range({draw(st.integers(0, 3))}):")
            lines.append(f"{pad}    pair = (np.sin(pair[0]) + pair[1], pair[1] * 0.9)")
            lines.append(f"{pad}{p}, {q} = pair")
            if indent == 1:
                arrays.append(p)
                scalars.append(q)
        elif kind == "grid":
            m = f"m{next(_counter)}"
            arr = pick(arrays)
            lines.append(f"{pad}{m} = np.zeros((3, 4))")
            lines.append(f"{pad}for i in range(3):")
            lines.append(f"{pad}    for j in range(4):")
            lines.append(f"{pad}        {m}[i, j] += {arr}[j] * (i + 1.0) + {pick(scalars)}")
            lines.append(f"{pad}    {m}[i] = np.tanh({m}[i])")
            if indent == 1:
                arrays.append(f"np.sum({m}, axis=0)")
        elif kind == "stencil":
            # neighbours of the loop variable, walked down (x[i - 1] is recomputed in the
            # adjoint loop from i, which must then be walked again)
            acc, arr = pick(scalars), pick(arrays)
            header = pick(["for i in range(3, 0, -1):", "for i in reversed(range(1, 4)):",
                           "for i in reversed(range(1, x.shape[0], 2)):"])
            lines.append(f"{pad}{header}")
            lines.append(f"{pad}    {acc} = np.tanh({acc} * 0.7 + {arr}[i - 1] * {arr}[i] * "
                         f"{pick(scalars)})")
        elif kind == "rows":
            # loops over array rows: reversed, enumerate, zip and both nested
            acc, arr, other = pick(scalars), pick(arrays), pick(arrays)
            header, use = pick([
                ("for r in reversed({a}):", "r"),
                ("for k, r in enumerate({a}):", "r * (k + 1.0)"),
                ("for k, (r, q) in enumerate(zip({a}, {b})):", "r * q * (k - 1.5)"),
                ("for (k, r), q in zip(enumerate({a}, 1), reversed({b})):", "r * q * k")])
            lines.append(f"{pad}{header.format(a=arr, b=other)}")
            lines.append(f"{pad}    {acc} = np.tanh({acc} * 0.8 + {use} * {pick(scalars)} * 0.3)")
        elif kind == "rebind":
            # names bound only in a loop that runs zero times (its trip count known at
            # run time), bound again by a later loop and read after it
            r, t, acc = f"r{next(_counter)}", f"t{next(_counter)}", pick(scalars)
            lines.append(f"{pad}for {r} in range(x.shape[0] - 4):")
            lines.append(f"{pad}    {t} = {pick(arrays)} * {pick(scalars)}")
            lines.append(f"{pad}for {r} in range({draw(st.integers(1, 3))}):")
            lines.append(f"{pad}    {t} = {expression(arrays)} * ({r} + 1.0)")
            lines.append(f"{pad}    {acc} = {acc} + np.sum({t}) * 0.1")
            lines.append(f"{pad}{acc} = {acc} + np.sum({t}) * {r} * 0.1")
        elif kind == "last":
            # the last iteration's value, read after the loop: the adjoint passes through
            # the add of the index unchanged, and the reversed loop resets it per iteration
            t, acc, v = f"t{next(_counter)}", pick(scalars), pick(arrays)
            lines.append(f"{pad}for i in range({draw(st.integers(1, 3))}):")
            # one array twice, as expression() does: np.sqrt(v * v + 1.0) stays defined
            lines.append(f"{pad}    {t} = {pick(UNARY).format(v, v)} + i")
            lines.append(f"{pad}{acc} = {acc} + np.sum({t} * {pick(arrays)}) * 0.1")
        elif kind == "return":
            lines.append(f"{pad}if np.sum({pick(arrays)}) > {draw(st.floats(-2, 2)).__round__(2) + 0.013}:")
            lines.append(f"{pad}    return np.sum({pick(arrays)} * {pick(scalars)})")
        else:   # setitem on a copy
            name = f"w{next(_counter)}"
            src = pick(arrays)
            lines.append(f"{pad}{name} = {src}.copy()")
            lines.append(f"{pad}{name}[{draw(st.integers(0, 3))}] = {pick(scalars)} * 2.0")
            arrays.append(name) if indent == 1 else None

    for _ in range(draw(st.integers(2, 7))):
        statement(1, 0)
    lines.append(f"    return np.sum({arrays[-1]}) + {' + '.join(scalars[-3:])}")
    return "\n".join(lines) + "\n"


def load(source, directory):
    path = directory / f"random_program_{next(_counter)}.py"
    path.write_text("import numpy as np\n\n\ndef helper(v, c):\n"
                    "    t = np.sum(np.sin(v) * c)\n    if t > 0.0:\n        return t * t\n"
                    "    return -t\n\n\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("programs")


def check(source, seed, program_dir):
    fn = load(source, program_dir)
    rng = np.random.default_rng(seed)
    x, a = rng.uniform(-1.0, 1.0, 4), float(rng.uniform(-1.0, 1.0))
    try:
        check_grad(fn, (x, a), grad_position=(0, 1), rtol=1e-4, atol=1e-6)
    except Exception as exc:   # any failure: show the program, ready to paste
        raise AssertionError(f"{type(exc).__name__}: {exc}\n--- program ---\n{source}") \
            from None


def _point_and_direction(seed):
    rng = np.random.default_rng(seed)
    x, a = rng.uniform(-1.0, 1.0, 4), float(rng.uniform(-1.0, 1.0))
    vx, va = rng.normal(size=4), float(rng.normal())
    return (x, a), (vx, va)


def _moved(args, direction, eps):
    return tuple(np.asarray(p) + eps * np.asarray(d) if np.ndim(p) else p + eps * d
                 for p, d in zip(args, direction))


def _shown(check_one, source):
    """Run ``check_one()``; any failure is raised with the program, ready to paste."""
    try:
        check_one()
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}\n--- program ---\n{source}") \
            from None


def check_forward(source, seed, program_dir, eps=1e-6):
    """jvp of the program along a random direction against a central difference."""
    fn = load(source, program_dir)
    args, direction = _point_and_direction(seed)

    def one():
        value, tangent = s2sgrad.jvp(fn, args, direction)
        np.testing.assert_allclose(value, fn(*args), rtol=1e-12, atol=1e-12)
        up, down = fn(*_moved(args, direction, eps)), fn(*_moved(args, direction, -eps))
        np.testing.assert_allclose(tangent, (up - down) / (2 * eps), rtol=1e-4, atol=1e-6)
    _shown(one, source)


def check_second_order(source, seed, program_dir, eps=1e-6):
    """hvp of the program along a random direction against a central difference of its
    gradient."""
    fn = load(source, program_dir)
    args, direction = _point_and_direction(seed)

    def one():
        got = s2sgrad.hvp(fn, args, direction)
        grad = s2sgrad.grad(fn, (0, 1))
        up, down = grad(*_moved(args, direction, eps)), grad(*_moved(args, direction, -eps))
        for g, u, d in zip(got, up, down):
            np.testing.assert_allclose(g, (np.asarray(u) - np.asarray(d)) / (2 * eps),
                                       rtol=1e-4, atol=1e-5)
    _shown(one, source)


#: transforms that make a derivative object (a chain's links)
TRANSFORMS = {"grad": s2sgrad.grad, "value_and_grad": s2sgrad.value_and_grad,
              "jacfwd": s2sgrad.jacfwd, "jacrev": s2sgrad.jacrev, "hessian": s2sgrad.hessian}
#: every transform, as the outermost one (jvp, vjp and hvp evaluate at a point)
OUTER = ["grad", "value_and_grad", "jvp", "vjp", "jacfwd", "jacrev", "hessian", "hvp"]
#: where the chain's derivative object is used: differentiated itself, called inside a
#: function being differentiated (made outside it), or made and called inside it
PLACES = ["outside", "called", "made"]


def _flat(value):
    """All outputs of ``value`` (an array, a number, a tuple of them) as one vector."""
    if isinstance(value, tuple):
        return np.concatenate([_flat(v) for v in value]) if value else np.zeros(0)
    return np.ravel(np.asarray(value, dtype=float))


def _ones(value):
    """Ones in the structure of ``value`` (a cotangent giving the sum of its outputs)."""
    if isinstance(value, tuple):
        return tuple(_ones(v) for v in value)
    return np.ones_like(value)


def _along(jacobian, vx):
    """A Jacobian (of each output, ``out.shape + x.shape``) times ``vx``, flat."""
    if isinstance(jacobian, tuple):
        return np.concatenate([_along(j, vx) for j in jacobian])
    return np.reshape(np.asarray(jacobian, dtype=float), (-1, vx.size)) @ vx


def _leaf_paths(chain):
    """The index paths (``"[0][1]"``) of the arrays a chain's derivative object returns:
    ``value_and_grad`` of S gives ``(S, gradient)``, ``grad`` a gradient, and ``jacfwd``,
    ``jacrev``, ``hessian`` of S the structure of S."""
    structure = None                    # one array
    for name in reversed(chain):
        if name == "value_and_grad":
            structure = (structure, None)
        elif name == "grad":
            structure = None

    def paths(tree, prefix):
        if tree is None:
            return [prefix]
        return [p for i, t in enumerate(tree) for p in paths(t, f"{prefix}[{i}]")]
    return paths(structure, "")


def _inside_source(chain, place):
    """``def g(x, a)``, a scalar function of every array the chain's derivative object
    returns: the global ``INNER`` (made outside) or, ``made``, the chain written out in
    g's body."""
    inner = "INNER"
    if place == "made":
        inner = "f"
        for name in reversed(chain):
            inner = f"s2sgrad.{name}({inner})"
    terms = [f"np.sum(t{path} ** 2)" if k == 0 else f"np.sum(np.sin(t{path})) * a"
             for k, path in enumerate(_leaf_paths(chain))]
    return (f"\n\nimport s2sgrad\n\nINNER = None\n\n\ndef g(x, a):\n"
            f"    t = {inner}(x, a)\n    return {' + '.join(terms)} + a\n")


def _outer_along(outer, fn, args, vx):
    """What the transform ``outer`` of ``fn`` gives along ``vx`` (w.r.t. x), in the form
    ``_expected`` computes by differences: the directional derivative of every output
    (``jvp``, ``jacfwd``, ``jacrev``), of their sum (``grad``, ``value_and_grad``,
    ``vjp``), or the second derivative along vx (``hessian``, ``hvp``)."""
    x, a = args
    if outer in ("jacfwd", "jacrev"):
        return _along(TRANSFORMS[outer](fn)(*args), vx)
    if outer == "jvp":
        return _flat(s2sgrad.jvp(fn, (x, a), (vx, 0.0))[1])
    if outer == "grad":
        return np.asarray(s2sgrad.grad(fn)(*args), dtype=float) @ vx
    if outer == "value_and_grad":
        value, gradient = s2sgrad.value_and_grad(fn)(*args)
        np.testing.assert_allclose(_flat(value), _flat(fn(*args)), rtol=1e-12, atol=1e-12)
        return np.asarray(gradient, dtype=float) @ vx
    if outer == "vjp":
        value, back = s2sgrad.vjp(fn, x, a)
        return np.asarray(back(_ones(value))[0], dtype=float) @ vx
    if outer == "hessian":
        return vx @ np.asarray(s2sgrad.hessian(fn)(*args), dtype=float) @ vx
    return vx @ np.asarray(s2sgrad.hvp(fn, (x, a), (vx, 0.0))[0], dtype=float)


def _expected(outer, fn, args, vx, eps):
    """Central differences of ``fn`` along ``vx``: of every output, of their sum, or the
    second difference (``hessian``, ``hvp``)."""
    x, a = args
    up, down = _flat(fn(x + eps * vx, a)), _flat(fn(x - eps * vx, a))
    if outer in ("hessian", "hvp"):
        h = 1e-4
        return (float(fn(x + h * vx, a)) - 2 * float(fn(x, a)) +
                float(fn(x - h * vx, a))) / h ** 2
    first = (up - down) / (2 * eps)
    return np.sum(first) if outer in ("grad", "value_and_grad", "vjp") else first


#: the one composition refused today: a second derivative (hessian, hvp) of a function
#: that calls a derivative object inside it (the object runs as a Python call there)
SECOND_ORDER = ("hessian", "hvp")
NOT_BUILT = "inside it is not built (the object runs as a Python call there)"


def check_composition(source, seed, outer, chain, place, program_dir, eps=1e-5):
    """``outer`` (w.r.t. x) of the chain of transforms ``chain`` of the program (a list,
    innermost last; empty: the program itself), or of a function calling that chain's
    derivative object inside (``place``: made outside it, ``called``, or made inside it,
    ``made``), along a random direction against central differences of what it
    differentiates (the next-lower chain).  ``hessian`` and ``hvp`` need a scalar
    function: they are drawn only where the differentiated function is one; of a function
    calling the chain's object inside, they may be refused with the error that says so
    (``NOT_BUILT``), never anything else."""
    fn = load(source + (_inside_source(chain, place) if chain and place != "outside"
                        else ""), program_dir)
    args, (vx, _) = _point_and_direction(seed)
    lower = fn
    for name in reversed(chain):
        lower = TRANSFORMS[name](lower)
    if chain and place != "outside":
        fn.__globals__["INNER"] = lower
        lower = fn.__globals__["g"]

    def one():
        try:
            got = _outer_along(outer, lower, args, vx)
        except DerivativeCompositionError as exc:
            if outer in SECOND_ORDER and place != "outside" and NOT_BUILT in str(exc):
                return          # refused, clearly (issue 19: not built yet)
            raise
        want = _expected(outer, lower, args, vx, eps)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    where = {"outside": "", "called": " called inside g", "made": " made inside g"}[place]
    _shown(one, f"{outer} of {' of '.join(chain) or 'f'}{where}\n{source}")


@st.composite
def compositions(draw):
    """(outer, chain, place): a chain of up to two derivative-making transforms under any
    transform; ``hessian``/``hvp`` outermost only over a scalar function (the program
    itself, or g calling the chain)."""
    chain = draw(st.lists(st.sampled_from(list(TRANSFORMS)), min_size=0, max_size=2))
    place = draw(st.sampled_from(PLACES)) if chain else "outside"
    scalar = not chain or place != "outside"
    outer = draw(st.sampled_from(OUTER if scalar else OUTER[:6]))
    return outer, chain, place


RELAXED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@settings(max_examples=150, deadline=None, suppress_health_check=RELAXED)
@given(source=programs(), seed=st.integers(0, 2 ** 16))
def test_random_program_gradient_matches_finite_differences(source, seed, program_dir,
                                                            monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")    # the same for every example
    check(source, seed, program_dir)


@settings(max_examples=8, deadline=None, suppress_health_check=RELAXED)
@given(source=programs(), seed=st.integers(0, 2 ** 16))
def test_random_program_compiled_by_numba(source, seed, program_dir, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")     # ~1 s of compiling per program
    check(source, seed, program_dir)


@settings(max_examples=40, deadline=None, suppress_health_check=RELAXED)
@given(source=programs(), seed=st.integers(0, 2 ** 16))
def test_random_program_jvp_matches_finite_differences(source, seed, program_dir, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    check_forward(source, seed, program_dir)


@settings(max_examples=25, deadline=None, suppress_health_check=RELAXED)
@given(source=programs(), seed=st.integers(0, 2 ** 16))
def test_random_program_hvp_matches_differences_of_the_gradient(source, seed, program_dir,
                                                                 monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    check_second_order(source, seed, program_dir)


@pytest.mark.parametrize("backend, examples", [("python", 10), ("numba", 2)])
def test_random_program_under_a_random_chain_of_transforms(backend, examples, program_dir,
                                                           monkeypatch):
    """Issue 19: every transform of every transform (to depth 3: any of the eight
    outermost over a chain of two), the inner object made outside, called inside or made
    inside a function being differentiated, against differences of the next-lower chain,
    under both backends (Numba compiles each chain: two programs)."""
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)

    @settings(max_examples=examples, deadline=None, suppress_health_check=RELAXED,
              phases=[Phase.explicit, Phase.reuse, Phase.generate])  # shrinking: minutes
    @given(source=programs(), seed=st.integers(0, 2 ** 16), drawn=compositions())
    def run(source, seed, drawn):
        check_composition(source, seed, *drawn, program_dir)
    run()


#: programs the long profiles found wrong once, kept as they were drawn
FOUND = [
    # jvp read a loop-carried copy of ``i`` that a loop which never ran left unbound
    "def f(x, a):\n    pair = (x * a, a + 1.0)\n    for i in range(0):\n"
    "        pair = (np.sin(pair[0]) + pair[1], pair[1] * 0.9)\n    p, q = pair\n"
    "    for i in range(4):\n        if p[i] > 0.8821:\n            break\n"
    "        q = q + p[i] * a\n    return np.sum(x) + q\n",
]


@pytest.mark.parametrize("source", FOUND)
def test_programs_the_long_profiles_found(source, program_dir, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    for seed in (1, 2):
        check(source, seed, program_dir)
        check_forward(source, seed, program_dir)
        check_second_order(source, seed, program_dir)
