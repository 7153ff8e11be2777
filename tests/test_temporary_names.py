"""Temporaries of generated code are named from what they hold where that is short
(``x_at_w`` for ``x @ w``, as Tangent does), ``t<n>`` otherwise; a rule template's own
locals are such temporaries, so the template's names (``db`` after its parameter ``b``)
never reach the user's code."""
import re

import gast
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.compiler.syntax.naming import DESCRIPTION_LIMIT, NameAllocator, describe
from s2sgrad.testing import check_grad


def _expr(text):
    return gast.parse(text).body[0].value


@pytest.mark.parametrize("text, name", [
    ("x @ w", "x_at_w"),
    ("np.exp(z)", "exp_z"),
    ("-a", "neg_a"),
    ("z >= 0", "z_ge_0"),
    ("2 * x", "x_times_2"),
    ("x - 1", "x_minus_1"),
    ("x.T", "x_T"),
    ("xs[i]", "xs_i"),
    ("np.maximum(z, 0)", "maximum_z_0"),
])
def test_a_short_expression_names_its_temporary(text, name):
    assert describe(_expr(text)) == name


@pytest.mark.parametrize("text", [
    "x",                       # a copy: it keeps the user's name or gets t<n>
    "x * 0.5",                 # a float
    "np.sum(x, axis=0)",       # keywords
    "x[1:3]",                  # a slice
    "np.exp(very_long_name_of_a_thing)",
    "a < b < c",
])
def test_what_has_no_short_name_is_none(text):
    assert describe(_expr(text)) is None


def test_the_limit_holds():
    assert len("exp_neg_absolute_z") > DESCRIPTION_LIMIT
    assert describe(_expr("np.exp(neg_absolute_z)")) is None


def test_numbered_temporaries_and_placeholders_are_never_part_of_a_name():
    names = NameAllocator()
    t = names.temp(_expr("np.exp(np.log(a + b + c + d + e + f))"))
    assert re.fullmatch(r"t\d+", t)
    assert names.temp(_expr(f"{t} + 1")).startswith("t")
    incoming = names.placeholder("dy")
    assert names.temp(_expr(f"2 * {incoming}")).startswith("t")
    assert names.temp(_expr("x @ w")) == "x_at_w"


def test_a_described_name_never_takes_a_name_of_the_users_source():
    names = NameAllocator()
    names.claim_source(gast.parse("def f(x, w):\n    x_at_w = x @ w\n").body[0])
    assert names.temp(_expr("x @ w")) == "x_at_w_1"


def matmul_loss(x, w):
    return np.sum(np.tanh(x @ w))


def solve_loss(m, v):    # not a, b: the user's own db would be the adjoint of b
    return np.sum(np.linalg.solve(m, v) ** 2)


def linspace_loss(lo, hi):
    return np.sum(np.linspace(lo, hi, 5) ** 2)


def test_generated_code_names_temporaries_from_what_they_hold():
    g = ms.grad(matmul_loss, (0, 1))
    g(np.ones((2, 3)), np.ones((3, 2)))
    # x @ w is read once, by np.tanh: written inside it (compiler/optimize/substitute.py)
    assert "tanh_x_at_w = np.tanh(x @ w)" in g.source and "dx_at_w = " in g.source


@pytest.mark.parametrize("fn, args, template_locals", [
    # np.linalg.solve's template: db = rt.solve_adjoint(a, d[ans], b)
    (solve_loss, (np.eye(2) * 2.0, np.ones(2)), ["db"]),
    # np.linspace's template: d_start_stop = rt.linspace_adjoints(...)
    (linspace_loss, (1.0, 2.0), ["d_start_stop"]),
])
def test_rule_template_locals_do_not_reach_generated_code(fn, args, template_locals):
    g = ms.grad(fn, (0, 1))
    g(*args)
    code = "\n".join(line for line in g.source.splitlines() if not line.lstrip().startswith("#"))
    for name in template_locals:
        assert not re.search(rf"\b{name}\b", code), g.source
    check_grad(fn, args, grad_position=(0, 1))
