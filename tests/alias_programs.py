"""Random programs that alias arrays and write into them in place, for the aliasing
suite (tests/test_aliasing.py) and the long fuzz profile (benchmarks/fuzz_programs.py
--grammar alias).

``programs()`` draws the source of ``def f(x, a)`` (x a 3x4 array, a a float) that
takes views and aliases of arrays (rows, columns, slices, .T, reshape, ravel, flips,
plain rebinding, copies, fancy indexes), writes into them (``r[i] = ...``,
``r[i] += ...``, ``r += ...``), reads them back, in loops and branches and through
helpers.  ``check`` runs one: s2sgrad must either give numpy's value and the
gradients of central finite differences (reverse mode, and forward mode along a random
direction), or refuse it with an UnsupportedConstructError naming a line of the file.
Any other outcome is a failure.
"""
import importlib.util
import itertools

import numpy as np
from hypothesis import strategies as st

import s2sgrad
from s2sgrad.errors import UnsupportedConstructError

_counter = itertools.count()

HELPERS = '''import numpy as np


def put(t, c):
    t[0] = c * 1.5


def bump(t, c):
    t += c
    return 0.0


def row_of(t, k):
    return t[k]
'''

#: views and copies of a 2-D array of shape (r, c): (template, shape of the result)
VIEWS_2D = [
    ("{m}[{i}]", lambda r, c: (c,)),
    ("{m}[:, {j}]", lambda r, c: (r,)),
    ("{m}[1:]", lambda r, c: (r - 1, c)),
    ("{m}.T", lambda r, c: (c, r)),
    ("np.transpose({m})", lambda r, c: (c, r)),
    ("{m}.reshape({c}, {r})", lambda r, c: (c, r)),
    ("np.ravel({m})", lambda r, c: (r * c,)),
    ("{m}[None][0]", lambda r, c: (r, c)),
    ("np.flip({m}, 0)", lambda r, c: (r, c)),
    ("{m}[...]", lambda r, c: (r, c)),
    ("np.asarray({m})", lambda r, c: (r, c)),
    ("{m}", lambda r, c: (r, c)),
    ("{m}.copy()", lambda r, c: (r, c)),
    ("{m}[[0, {i}]]", lambda r, c: (2, c)),
    ("{m}[{i}].copy()", lambda r, c: (c,)),
    ("row_of({m}, {i})", lambda r, c: (c,)),
]

#: views and copies of a 1-D array of length n
VIEWS_1D = [
    ("{m}[1:]", lambda n: (n - 1,)),
    ("{m}[::2]", lambda n: ((n + 1) // 2,)),
    ("np.flip({m})", lambda n: (n,)),
    ("{m}.reshape(-1)", lambda n: (n,)),
    ("{m}", lambda n: (n,)),
    ("{m}.copy()", lambda n: (n,)),
    ("{m}[[0, 1]]", lambda n: (2,)),
]


@st.composite
def programs(draw):
    """Source of ``def f(x, a)`` (a module with the helpers above)."""
    arrays = {"x": (3, 4)}          # name -> shape
    numbers = itertools.count()     # names made in this program (the same for the same draws)
    scalars = ["a"]
    lines = ["def f(x, a):"]
    pick = lambda pool: draw(st.sampled_from(sorted(pool)))   # noqa: E731

    def scalar_expr():
        s = pick(scalars)
        return draw(st.sampled_from([f"{s} * 1.5", f"np.sin({s})", f"{s} * {pick(scalars)}",
                                     f"np.sum({pick(arrays)}) * 0.1"]))

    def index_for(shape, loop_var=None):
        dims = []
        for n in shape:
            dims.append(loop_var if loop_var is not None and n >= 2 and not dims
                        else str(draw(st.integers(0, n - 1))))
        if len(shape) == 2:
            form = draw(st.integers(0, 2))
            if form == 1:
                return dims[0]                      # a row
            if form == 2:
                return f":, {draw(st.integers(0, shape[1] - 1))}"   # a column
            return f"{dims[0]}, {dims[1]}"
        if draw(st.booleans()) and shape[0] >= 3:
            return "1:3"
        return dims[0]

    def statement(pad, in_loop):
        kind = draw(st.sampled_from(["fresh", "view", "view", "write", "write", "augwrite",
                                     "inplace", "read", "read", "loop", "branch", "helper"]
                                    if not in_loop else
                                    ["view", "write", "augwrite", "inplace", "read", "helper"]))
        if kind == "fresh":
            name = f"m{next(numbers)}"
            src = pick([n for n, s in arrays.items() if len(s) == 2])
            lines.append(f"{pad}{name} = {src} * {pick(scalars)} + 0.5")
            arrays[name] = arrays[src]
        elif kind == "view":
            src = pick(arrays)
            shape = arrays[src]
            name = f"r{next(numbers)}"
            if len(shape) == 2:
                # (a view of no rows would leave nothing to index: [1:] of one row is left out)
                template, result = draw(st.sampled_from(VIEWS_2D if shape[0] >= 2 else
                                                        [v for v in VIEWS_2D if v[0] != "{m}[1:]"]))
                text = template.format(m=src, i=draw(st.integers(0, shape[0] - 1)),
                                       j=draw(st.integers(0, shape[1] - 1)), r=shape[0],
                                       c=shape[1])
                new_shape = result(*shape)
            else:
                choices = VIEWS_1D if shape[0] >= 3 else [
                    v for v in VIEWS_1D if v[0] in ("{m}", "{m}.copy()", "np.flip({m})")]
                template, result = draw(st.sampled_from(choices))
                text = template.format(m=src)
                new_shape = result(shape[0])
            lines.append(f"{pad}{name} = {text}")
            if not in_loop:
                arrays[name] = new_shape
        elif kind == "write":
            target = pick(arrays)
            lines.append(f"{pad}{target}[{index_for(arrays[target], 'i' if in_loop else None)}]"
                         f" = {scalar_expr()}")
        elif kind == "augwrite":
            target = pick(arrays)
            lines.append(f"{pad}{target}[{index_for(arrays[target])}] += {scalar_expr()}")
        elif kind == "inplace":
            target = pick(arrays)
            op = draw(st.sampled_from(["+=", "*=", "-="]))
            lines.append(f"{pad}{target} {op} {pick(scalars)} * 0.5")
        elif kind == "read":
            name = f"s{next(numbers)}"
            src = pick(arrays)
            lines.append(f"{pad}{name} = np.sum(np.sin({src}) * {pick(scalars)})")
            if not in_loop:
                scalars.append(name)
        elif kind == "loop":
            lines.append(f"{pad}for i in range({draw(st.integers(1, 3))}):")
            for _ in range(draw(st.integers(1, 3))):
                statement(pad + "    ", True)
            lines.append(f"{pad}    {pick(scalars)} = {scalar_expr()} * 1.0") \
                if draw(st.booleans()) else None
        elif kind == "branch":
            src = pick([n for n, s in arrays.items() if len(s) == 2])
            name = f"b{next(numbers)}"
            lines.append(f"{pad}if {pick(scalars)} > {draw(st.floats(-0.5, 0.5)):.3f}:")
            lines.append(f"{pad}    {name} = {src}")
            lines.append(f"{pad}else:")
            lines.append(f"{pad}    {name} = {src} * 2.0")
            arrays[name] = arrays[src]
        else:
            target = pick(arrays)
            call = draw(st.sampled_from(["put({t}, {s})", "{u} = bump({t}, {s})"]))
            lines.append(pad + call.format(t=target, s=pick(scalars), u=f"u{next(numbers)}"))

    for _ in range(draw(st.integers(2, 8))):
        statement("    ", False)
    reads = " + ".join(f"np.sum(np.sin({n}))" for n in draw(
        st.lists(st.sampled_from(sorted(arrays)), min_size=1, max_size=3, unique=True)))
    lines.append(f"    return {reads} + {' + '.join(scalars[-3:])}")
    return "\n".join(lines) + "\n"


def load(source, directory):
    path = directory / f"alias_program_{next(_counter)}.py"
    path.write_text(HELPERS + "\n\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f, path


def _fresh(values):
    return tuple(np.array(v, dtype=np.float64) if isinstance(v, np.ndarray) else v
                 for v in values)


def central(f, values, position, eps=1e-6):
    """Central differences w.r.t. argument ``position``; every call gets fresh copies of
    the arguments (the programs update arrays in place)."""
    base = _fresh(values)
    if not isinstance(base[position], np.ndarray):
        plus, minus = list(base), list(base)
        plus[position] += eps
        minus[position] -= eps
        return (f(*_fresh(plus)) - f(*_fresh(minus))) / (2 * eps)
    grad = np.zeros_like(base[position])
    for k in np.ndindex(grad.shape):
        plus, minus = list(_fresh(base)), list(_fresh(base))
        plus[position][k] += eps
        minus[position][k] -= eps
        grad[k] = (f(*plus) - f(*minus)) / (2 * eps)
    return grad


def _fd_judges(f, values, position, atol, value):
    """Whether central differences can judge a gradient here: the function's value is
    under 1e6 and steps 1e-5, 1e-6 and 1e-7 agree with one another.  (A value of 1e10,
    a number squared five times, put through ``sin``: a step of 1e-7 turns it through
    thousands of periods, so every step measures a bounded noise of at most 1/step and
    not its derivative of ~1e12, even where the steps agree.)"""
    if np.max(np.abs(value)) > 1e6:
        return False
    estimates = [central(f, values, position, eps) for eps in (1e-5, 1e-6, 1e-7)]
    return all(np.allclose(e, estimates[1], rtol=1e-3, atol=10 * atol) for e in estimates)


def check(source, seed, directory, forward=True):
    """Run one program; returns "differentiated", "refused: <what>", "invalid" (numpy
    itself raises) or "unjudged: ..." (finite differences disagree with themselves: no
    step measures the derivative), raises AssertionError (with the program) on anything
    else."""
    f, path = load(source, directory)
    rng = np.random.default_rng(seed)
    values = (rng.uniform(-1.0, 1.0, (3, 4)), float(rng.uniform(-1.0, 1.0)))
    try:
        want = f(*_fresh(values))
    except Exception:   # noqa: BLE001 - numpy refuses it (a read-only view...): skip
        return "invalid"
    try:
        try:
            got, (gx, ga) = s2sgrad.value_and_grad(f, (0, 1))(*_fresh(values))
        except UnsupportedConstructError as exc:
            assert f"{path}:" in str(exc), f"the refusal does not name the file: {exc}"
            return "refused: " + exc.what
        assert np.allclose(got, want, rtol=1e-10, atol=1e-10), f"value {got} != {want}"
        # a central difference of f loses ~|f| * 1e-16 / eps to rounding: at |f| ~ 1e9
        # that is ~0.1, so the absolute tolerance grows with |f|
        atol = 1e-6 + 1e-9 * float(np.max(np.abs(want)))
        for position, got_grad in enumerate((gx, ga)):
            try:
                np.testing.assert_allclose(got_grad, central(f, values, position), rtol=1e-4,
                                           atol=atol, err_msg=f"gradient w.r.t. {'xa'[position]}")
            except AssertionError:
                if _fd_judges(f, values, position, atol, want):
                    raise
                return "unjudged: a value over 1e6, or differences at 1e-5..1e-7 disagree"
        if forward:
            dx, da = rng.normal(size=(3, 4)), 0.7
            _, tangent = s2sgrad.jvp(f, _fresh(values), (dx, da))
            eps = 1e-6
            numeric = (f(values[0] + eps * dx, values[1] + eps * da) -
                       f(values[0] - eps * dx, values[1] - eps * da)) / (2 * eps)
            try:
                np.testing.assert_allclose(tangent, numeric, rtol=1e-4, atol=atol,
                                           err_msg="jvp")
            except AssertionError:
                if np.max(np.abs(want)) <= 1e6:
                    raise
                return "unjudged: a value over 1e6 (the jvp's differences)"
    except Exception as exc:   # any failure: show the program, ready to paste
        raise AssertionError(f"{type(exc).__name__}: {exc}\n--- program (seed {seed}) ---\n"
                             f"{source}") from None
    return "differentiated"
