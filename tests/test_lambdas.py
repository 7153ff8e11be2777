"""Lambdas are how JAX users call grad: s2sgrad finds the one it was given by the position
of its body in the file (its code's instruction positions), however many lambdas share the
line or whatever their parameters, and refuses only when it truly cannot tell."""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.compiler.front import frontend
from s2sgrad.errors import SourceUnavailableError

X = np.array([1.0, 2.0, 3.0])
Y = np.array([0.5, 0.5, 0.5])


@pytest.fixture(autouse=True)
def python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def loss(z, y):
    return np.sum((z - y) ** 2)


def attempt(thunk):
    return thunk()


# module level: several lambdas on one line, same and different parameters
SQUARE, TRIPLE = (lambda z: np.sum(z * z)), (lambda z: np.sum(z * 3.0))
SAME_A, OTHER_B = (lambda a: np.sum(a * a)), (lambda b: np.sum(b ** 3))
SPANNING = (lambda z:
            np.sum(z * z)
            + np.sum(z))
TABLE = {"sq": lambda z: np.sum(z * z), "cube": lambda z: np.sum(z ** 3)}
SCALED = [lambda z, k=k: np.sum(z * k) for k in (1.0, 2.0, 3.0)]
CURRY = lambda a: (lambda z: np.sum(z * a))   # noqa: E731


def default_arg(fn=lambda z: np.sum(z * 5.0), other=lambda z: np.sum(z * 6.0)):
    return fn, other


MODULE_CASES = [
    ("first of two on a line", SQUARE, 2 * X),
    ("second of two on a line", TRIPLE, 3.0 + 0 * X),
    ("different parameters on a line", OTHER_B, 3 * X ** 2),
    ("spanning lines", SPANNING, 2 * X + 1),
    ("dict value", TABLE["cube"], 3 * X ** 2),
    ("list comprehension", SCALED[2], 3.0 + 0 * X),
    ("returned by a lambda", CURRY(7.0), 7.0 + 0 * X),
    ("default argument", default_arg()[1], 6.0 + 0 * X),
]


@pytest.mark.parametrize("fn, expected", [c[1:] for c in MODULE_CASES],
                         ids=[c[0] for c in MODULE_CASES])
def test_module_level_lambdas(fn, expected):
    assert np.allclose(ms.grad(fn)(X), expected)


def test_lambda_passed_to_grad_inside_another_lambda():
    """The issue's case, twice on neighbouring lines and twice on one line."""
    g1 = attempt(lambda: ms.grad(lambda z: loss(z, Y))(X))
    g2 = attempt(lambda: ms.grad(lambda z: loss(z, 2 * Y))(X))
    g3, g4 = attempt(lambda: ms.grad(lambda z: loss(z, Y))(X)), attempt(lambda: ms.grad(lambda z: np.sum(z ** 3))(X))  # noqa: E501
    assert np.allclose(g1, 2 * (X - Y)) and np.allclose(g2, 2 * (X - 2 * Y))
    assert np.allclose(g3, 2 * (X - Y)) and np.allclose(g4, 3 * X ** 2)


def test_lambdas_defined_in_a_function():
    f, g = (lambda z: np.sum(z * z)), (lambda z: np.sum(np.sin(z)))
    h = (lambda z, w=2.0:
         np.sum(z * w))
    fs = {k: (lambda z, k=k: np.sum(z ** k)) for k in (2, 3)}
    assert np.allclose(ms.grad(f)(X), 2 * X)
    assert np.allclose(ms.grad(g)(X), np.cos(X))
    assert np.allclose(ms.grad(h)(X), 2.0)
    assert np.allclose(ms.grad(fs[3])(X), 3 * X ** 2)
    assert np.allclose(ms.grad(lambda z: np.sum(z) * 2.0)(X), 2.0)


def test_value_and_grad_of_nested_lambdas_with_same_parameter():
    outer = lambda z: (lambda z: np.sum(z * z))   # noqa: E731
    inner = outer(None)
    value, grad = ms.value_and_grad(inner)(X)
    assert np.isclose(value, np.sum(X * X)) and np.allclose(grad, 2 * X)


def test_error_locations_in_a_lambda_are_file_lines():
    bad = (lambda z: np.sum(z) if z.sum() > 0 else undefined_name)   # noqa: F821
    with pytest.raises(Exception) as info:
        ms.grad(bad)(X)
    line = bad.__code__.co_firstlineno
    assert f"test_lambdas.py:{line}" in str(info.value)


def test_without_positions_a_truly_ambiguous_line_is_refused(monkeypatch):
    """When the code carries no positions (Python 3.10), two lambdas with the same
    parameters on one line cannot be told apart: refused, naming file and line."""
    monkeypatch.setattr(frontend, "_body_span", lambda code: None)
    f, g = (lambda z: np.sum(z * z)), (lambda z: np.sum(z * 3.0))
    with pytest.raises(SourceUnavailableError) as info:
        ms.grad(g)(X)
    text = str(info.value)
    assert f"test_lambdas.py:{g.__code__.co_firstlineno}" in text
    assert "2 lambdas" in text and "def" in text
    # different parameters on the same line are still told apart
    a, b = (lambda a: np.sum(a * a)), (lambda b: np.sum(b * 3.0))
    assert np.allclose(ms.grad(b)(X), 3.0)
