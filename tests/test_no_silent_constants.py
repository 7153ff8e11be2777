"""Never a zero by default: a call whose result depends on a differentiated value has a
rule, or is listed as carrying no gradient (with a reason), or is refused with
MissingRuleError naming the user's line (UnsupportedConstructError for a call that writes
into an array in place).

- the issue's examples (nested np.array of active scalars, np.linspace with active
  endpoints, np.std of one element, einsum's sublist form and '...');
- a table of spellings (constructors, methods, attributes, builtins, lists of numbers,
  integer casts) checked against central finite differences;
- the namespace walk: every callable in ``np``, ``np.linalg``, ``np.fft``, ``math``, the
  numeric builtins, and every method and attribute of ``np.ndarray`` is a rule, a listed
  non-differentiable call with a reason, or refused with MissingRuleError at its line;
  the listed numpy and math callables are checked to have a zero finite difference
  wherever they can be called on floats.
"""
import builtins
import importlib.util
import math
import statistics

import numpy as np
import pytest

import s2sgrad
from s2sgrad.compiler.front.lower_expressions import METHODS
from s2sgrad.compiler.pipeline import build
from s2sgrad.errors import MissingRuleError, UnsupportedConstructError
from s2sgrad.rules import lookup
from s2sgrad.rules.no_gradient import TABLE, reason_of
from s2sgrad.testing import check_grad, numerical_grad


@pytest.fixture(autouse=True)
def python_backend(monkeypatch):
    """Gradients here are about what is computed, not how fast: run them as Python."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


# ---------------------------------------------------------------- the examples


def nested_array(x):
    return np.sum(np.array([[x, x * 1.0, x + 2.5], [x ** 2, x, x / 2.0]]))


def linspace_sum(a, b):
    return np.sum(np.linspace(a, b, 5) ** 2)


def test_nested_array_of_active_scalars():
    assert s2sgrad.grad(nested_array)(3.0) == pytest.approx(10.5)


def test_linspace_with_active_endpoints():
    da, db = s2sgrad.grad(linspace_sum, (0, 1))(1.2, 3.4)
    t = np.linspace(0.0, 1.0, 5)
    y = np.linspace(1.2, 3.4, 5)
    assert da == pytest.approx(np.sum(2 * y * (1 - t)))
    assert db == pytest.approx(np.sum(2 * y * t))


def std_of_scalar(x):
    return np.std(x) + x


def std_of_one(x):
    return np.std(x[:1]) + np.sum(x)


def test_std_of_one_element_has_zero_gradient():
    assert s2sgrad.grad(std_of_scalar)(0.7) == 1.0
    np.testing.assert_array_equal(s2sgrad.grad(std_of_one)(np.array([0.3, -1.2, 0.7])),
                                  [1.0, 1.0, 1.0])


A = np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.5]])
B = np.array([[0.2, 0.9], [-0.3, 1.4], [0.8, -0.6]])


def einsum_sublist(a, b):
    return np.sum(np.sin(np.einsum(a, [0, 1], b, [1, 2])))


def einsum_ellipsis(a, b):
    return np.sum(np.sin(np.einsum("...j,jk->...k", a, b)))


@pytest.mark.parametrize("fn", [einsum_sublist, einsum_ellipsis])
def test_einsum_sublist_and_ellipsis(fn):
    value, _ = s2sgrad.value_and_grad(fn, (0, 1))(A, B)
    assert value == pytest.approx(np.sum(np.sin(A @ B)))
    check_grad(fn, (A, B), grad_position=(0, 1))


# ---------------------------------------------------------------- spellings


V = np.array([0.3, -1.2, 0.7])
W = np.array([0.9, 0.4, 1.6])

SPELLINGS = [
    ("array_of_scalars", lambda x: np.sum(np.array([x, 2 * x]) ** 2), (1.5,), 0),
    ("asarray_of_tuple", lambda x: np.sum(np.asarray((x, 2 * x)) ** 2), (1.5,), 0),
    ("array_of_arrays", lambda x: np.sum(np.array([x, 2 * x]) ** 2), (V,), 0),
    ("array_nested_arrays", lambda x: np.sum(np.array([[x, x * 2], [x + 1, x]]) ** 2), (V,), 0),
    ("asarray_nested_two_args", lambda x, y: np.sum(np.asarray([(x, y), (y * x, 1.0)]) ** 2),
     (1.7, 0.4), (0, 1)),
    ("array_three_deep", lambda x: np.sum(np.array([[[x, 1.0], [2.0, x]],
                                                    [[x * x, 0.0], [1.0, 1.0]]]) ** 3),
     (0.8,), 0),
    ("array_dtype_float", lambda x: np.sum(np.array([x, x], dtype=np.float64) ** 2), (0.7,), 0),
    ("array_dtype_int", lambda x: np.sum(np.array([x, 2 * x], dtype=np.int64) * x), (1.7,), 0),
    ("astype_int", lambda x: np.sum(x.astype(int) * x), (V * 3,), 0),
    ("sum_dtype_int", lambda x: np.sum(x * 3, dtype=int) * np.sum(x), (V,), 0),
    ("einsum_transposed_output",
     lambda a, b: np.sum(np.einsum("ij,jk->ki", a, b) * np.arange(4.0).reshape(2, 2)),
     (A, B), (0, 1)),
    ("einsum_of_built_array",
     lambda x: np.sum(np.einsum("ij->ji", np.array([[x, 2 * x], [x * x, 1.0]])) * np.arange(4.0)
                      .reshape(2, 2)), (0.7,), 0),
    ("max_of_built_array", lambda x: np.max(np.array([x, x * 2.0, 1.0])), (0.7,), 0),
    ("maximum_of_built_array", lambda x: np.sum(np.maximum(np.array([x, -x]), 0.1)), (0.7,), 0),
    ("max_of_list", lambda x: np.max([x, x * x]), (0.7,), 0),
    ("maximum_of_list", lambda x: np.sum(np.maximum([x, -x], 0.1)), (0.7,), 0),
    ("log_of_list", lambda x: np.sum(np.log([x, x * x])), (0.7,), 0),
    ("sum_of_list", lambda x: np.sum([x, x * x]), (0.7,), 0),
    ("stack_of_scalars", lambda x: np.sum(np.stack([x, x * x]) ** 2), (0.7,), 0),
    ("concatenate_nested_lists", lambda x: np.sum(np.concatenate([[x], [x * x]]) ** 2),
     (0.7,), 0),
    ("method_sum", lambda x: (x * x).sum(), (V,), 0),
    ("attribute_T", lambda x: np.sum(x.T * np.arange(6.0).reshape(3, 2)), (A,), 0),
    ("method_T_sum", lambda x: x.T.sum(), (A,), 0),
    ("full_of_active", lambda x: np.sum(np.full((2, 3), x) ** 2), (0.7,), 0),
    ("full_of_active_row", lambda x: np.sum(np.full((2, 3), x) ** 2), (V,), 0),
    ("full_like_of_active", lambda x: np.sum(np.full_like(V, x) ** 2), (0.7,), 0),
    ("zeros_like_plus", lambda x: np.sum((np.zeros_like(x) + x) ** 2), (V,), 0),
    ("ones_like_times", lambda x: np.sum(np.ones_like(x) * x ** 2), (V,), 0),
    ("linspace_no_endpoint", lambda a, b: np.sum(np.linspace(a, b, 4, endpoint=False) ** 3),
     (0.5, 2.0), (0, 1)),
    ("linspace_of_arrays", lambda a, b: np.sum(np.linspace(a, b, 3, axis=1) ** 3),
     (V, W), (0, 1)),
    ("arange_from_active", lambda a: np.sum(np.arange(a, 5.0) ** 2), (0.3,), 0),
    ("arange_active_step", lambda a, s: np.sum(np.arange(a, 5.0, s) ** 2), (0.3, 0.7), (0, 1)),
    ("float_of_element", lambda x: float(x[0]) ** 2, (V,), 0),
    ("item", lambda x: x[1].item() ** 2, (V,), 0),
    ("item_flat_index", lambda x: x.item(4) ** 2, (A,), 0),
    ("where", lambda x: np.sum(np.where(x > 0, x, 2 * x) ** 2), (V,), 0),
    ("builtin_max_two", lambda x: max(x, 2 * x), (0.7,), 0),
    ("builtin_max_three", lambda x: max(x, 2 * x, 3.0 - x), (0.7,), 0),
    ("builtin_min_of_list", lambda x: min([x, 2 * x, x * x]), (0.7,), 0),
    ("builtin_abs", lambda x: abs(x) ** 2, (-0.7,), 0),
    ("builtin_sum", lambda x: sum([x, x * x]), (0.7,), 0),
    ("builtin_round_times", lambda x: round(x) * x, (1.7,), 0),
    ("floor_times", lambda x: math.floor(x) * x, (1.7,), 0),
    ("std_axis_of_one", lambda x: np.sum(np.std(x, axis=0)) + np.sum(x), (A[:1],), 0),
    ("std_method_one", lambda x: x[:1].std() + np.sum(x), (V,), 0),
    ("einsum_sublist_output",
     lambda a, b: np.sum(np.einsum(a, [0, 1], b, [1, 2], [2, 0]) * np.arange(4.0)
                         .reshape(2, 2)), (A, B), (0, 1)),
    ("einsum_implicit_ellipsis", lambda a, b: np.sum(np.einsum("...j,jk", a, b) ** 2), (A, B),
     (0, 1)),
    ("einsum_trace", lambda a: np.einsum("ii", a @ a.T), (A,), 0),
]


@pytest.mark.parametrize("fn,args,pos", [pytest.param(f, a, p, id=n)
                                         for n, f, a, p in SPELLINGS])
def test_spelling_matches_finite_differences(fn, args, pos):
    check_grad(fn, args, grad_position=pos)


def library_call(x):
    return statistics.fmean([x, 2 * x])


def test_a_call_with_no_rule_is_refused_at_its_line():
    with pytest.raises(MissingRuleError) as info:
        s2sgrad.grad(library_call)(0.7)
    err = info.value
    assert err.location.filename == __file__
    assert err.location.lineno == library_call.__code__.co_firstlineno + 1
    assert "statistics.fmean" in str(err) and "s2sgrad.rules.vjp" in str(err)


# ---------------------------------------------------------------- the namespace walk

#: the builtins numeric code calls
BUILTINS = ("abs", "all", "any", "bool", "complex", "divmod", "float", "hash", "int", "len",
            "list", "max", "min", "pow", "reversed", "round", "sorted", "sum", "tuple")


def _public(namespace):
    return [(name, getattr(namespace, name)) for name in sorted(dir(namespace))
            if not name.startswith("_") and callable(getattr(namespace, name))]


def _walked_callables():
    """(label, callable) of every callable the lowering can meet by name."""
    found = []
    for prefix, namespace in (("np", np), ("np.linalg", np.linalg), ("np.fft", np.fft),
                              ("math", math)):
        found += [(f"{prefix}.{name}", obj) for name, obj in _public(namespace)]
    found += [(name, getattr(builtins, name)) for name in BUILTINS]
    return found


def _ndarray_members():
    """(label, primitive the lowering emits, source expression on ``x``) of every public
    method and attribute of np.ndarray."""
    members = []
    for name in sorted(dir(np.ndarray)):
        if name.startswith("_"):
            continue
        if callable(getattr(np.ndarray, name)):
            members.append((f"ndarray.{name}()", METHODS.get(name, "method." + name),
                            f"x.{name}()"))
        else:
            members.append((f"ndarray.{name}", np.transpose if name == "T" else "attr." + name,
                            f"x.{name}"))
    return members


def _write_module(tmp_path, calls):
    """A module with one function per call expression; gives it and each function's
    return line."""
    lines, where = ["import numpy as np", "import math", ""], []
    for i, (expr, _) in enumerate(calls):
        lines += [f"def f{i}(x):", f"    return {expr}", ""]
        where.append(len(lines) - 1)
    path = tmp_path / "walked_calls.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("walked_calls", path)
    module = importlib.util.module_from_spec(spec)
    for i, (_, target) in enumerate(calls):
        setattr(module, f"T{i}", target)
    spec.loader.exec_module(module)
    return module, where, str(path)


def _classify(primitive):
    rule = lookup(primitive)
    if rule is not None and rule.differentiable:
        return "rule"
    if rule is not None:
        return "listed"
    return None


def refused_calls(tmp_path):
    """Every walked callable and ndarray member that is neither a rule nor listed, with
    what building the gradient of a call to it gives: 'refused' (MissingRuleError at the
    call's line) or a description of what went wrong."""
    pending = []
    for label, obj in _walked_callables():
        if _classify(obj) is None:
            pending.append((label, f"T{len(pending)}(x)", obj))
    for label, prim, expr in _ndarray_members():
        if _classify(prim) is None:
            pending.append((label, expr, None))
    module, lines, path = _write_module(tmp_path, [(e, o) for _, e, o in pending])
    outcome = {}
    for i, (label, _, _) in enumerate(pending):
        try:
            build(getattr(module, f"f{i}"), (0,), (), False)
        except (MissingRuleError, UnsupportedConstructError) as err:   # both name the line
            at_line = err.location is not None and err.location.filename == path and \
                err.location.lineno == lines[i]
            outcome[label] = "refused" if at_line else \
                f"{type(err).__name__} at {err.location}"
            continue
        except Exception as err:  # noqa: BLE001 - reported by the test
            outcome[label] = f"{type(err).__name__}: {str(err).splitlines()[0]}"
            continue
        outcome[label] = "built a gradient with no rule (a silent constant)"
    return outcome


def test_every_callable_is_a_rule_listed_or_refused(tmp_path):
    outcome = refused_calls(tmp_path)
    assert len(outcome) > 100        # the walk reached the namespaces
    wrong = {label: what for label, what in outcome.items() if what != "refused"}
    assert not wrong, f"calls neither a rule, nor listed, nor refused at their line: {wrong}"


def test_every_listed_call_has_a_reason():
    for reason, primitives in TABLE:
        assert isinstance(reason, str) and len(reason) > 10
        for prim in primitives:
            rule = lookup(prim)
            assert rule is not None and not rule.differentiable, prim
            assert rule.reason == reason_of(prim) == reason
    unlisted = [rule.name for prim, rule in _all_nondifferentiable() if not rule.reason]
    assert not unlisted, f"non-differentiable without a reason: {unlisted}"


def _all_nondifferentiable():
    from s2sgrad.rules import all_rules
    return [(prim, rule) for prim, rule in all_rules() if not rule.differentiable]


_X = np.array([0.37, -1.21, 2.53, 0.83])
_Y = np.array([1.13, 0.41, -0.67, 2.29])


def _float_call(fn, *args):
    """``fn(*args)`` as a float64 array when it is one (else None)."""
    try:
        with np.errstate(all="ignore"):
            out = fn(*args)
        out = np.asarray(out, dtype=np.float64)
    except Exception:  # noqa: BLE001 - a call that does not take floats is skipped
        return None
    return out if np.all(np.isfinite(out)) else None


#: listed calls whose values are memory left as it was: nothing to compare
_UNINITIALISED = (np.empty, np.empty_like)


@pytest.mark.parametrize("prim", [p for _, ps in TABLE for p in ps
                                  if not isinstance(p, str) and p not in _UNINITIALISED],
                         ids=lambda p: getattr(p, "__name__", repr(p)))
def test_listed_calls_have_zero_finite_differences(prim):
    """Where a listed callable takes float arguments, moving them does not move its result
    (what a wrongly listed np.full_like or np.linspace would fail)."""
    checked = 0
    for args in ((_X,), (_X, _Y), (0.37,), (0.37, 1.13)):
        if _float_call(prim, *args) is None:
            continue
        for position in range(len(args)):
            grad = numerical_grad(lambda *a: _float_call(prim, *a), args, position, eps=1e-7)
            np.testing.assert_array_equal(grad, 0.0 * np.asarray(grad))
            checked += 1
    if checked == 0:
        pytest.skip("takes no float arguments")
