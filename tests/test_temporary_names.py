"""Temporaries of generated code are named from what they hold where that is short
(``x_at_w`` for ``x @ w``, as Tangent does), else by the parameter of the inlined callee
they are passed to, else ``t<n>``; never ``<description>_<n>``, which reads as a version
of a user's variable (``loss``, ``loss_1``: the only names ending in ``_<digits>``).  A
rule template's own locals are such temporaries, so the template's names (``db`` after
its parameter ``b``) never reach the user's code."""
import re
import sys

import gast
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.compiler.syntax.naming import DESCRIPTION_LIMIT, NameAllocator, describe
from s2sgrad.testing import check_grad
from examples_loader import ROOT


def _expr(text):
    return gast.parse(text).body[0].value


@pytest.mark.parametrize("text, name", [
    ("x @ w", "x_at_w"),
    ("np.exp(z)", "exp_z"),
    ("-a", "neg_a"),
    ("z >= 0", "z_ge0"),
    ("2 * x", "x_times2"),
    ("x - 1", "x_minus1"),
    ("x.T", "x_T"),
    ("xs[i]", "xs_i"),
    ("np.maximum(z, 0)", "maximum_z0"),
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
    "np.exp(x_0)",             # would end in _<digits>, as a version does
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


def test_a_number_joins_the_word_before_it():
    assert describe(_expr("x.shape[0]")) == "x_shape0"
    assert describe(_expr("c[i - 1]")) is None          # an index that computes: no name
    assert describe(_expr("x[0] + 1")) == "x0_plus1"


def test_a_version_of_a_users_variable_is_described_by_the_users_name():
    names = NameAllocator()
    assert (names.variable("x"), names.variable("x")) == ("x", "x_1")
    assert names.temp(_expr("x_1 * x_1")) == "x_times_x"


def test_a_described_name_never_takes_a_name_of_the_users_source():
    names = NameAllocator()
    names.claim_source(gast.parse("def f(x, w):\n    x_at_w = x @ w\n").body[0])
    assert names.temp(_expr("x @ w")) == "t1"          # never x_at_w_1


def test_a_repeated_description_takes_the_word_the_value_is_known_by():
    names = NameAllocator()
    assert names.temp(_expr("np.ones_like(z)"), "weight") == "ones_like_z"
    assert names.temp(_expr("np.ones_like(z)"), "pos_weight") == "pos_weight"
    assert names.temp(_expr("np.ones_like(z)")) == "t1"          # no word: t<n>
    assert names.temp(_expr("np.ones_like(z)"), "pos_weight") == "t2"   # the word is taken


@pytest.mark.parametrize("word", ["x", "len", "np", "lambda", "w_1"])
def test_a_word_is_taken_only_when_free(word):
    """Not a name of the user's source claimed so far, a builtin, a module the code
    reads, a keyword, nor a version's mark."""
    names = NameAllocator()
    names.claim_source(gast.parse("def f(x):\n    return x\n").body[0])
    assert names.temp(_expr("np.ones_like(x)"), "unused") == "ones_like_x"
    assert re.fullmatch(r"t\d+", names.temp(_expr("np.ones_like(x)"), word))


def matmul_loss(x, w):
    return np.sum(np.tanh(x @ w))


def solve_loss(m, v):    # not a, b: the user's own db would be the adjoint of b
    return np.sum(np.linalg.solve(m, v) ** 2)


def linspace_loss(lo, hi):
    return np.sum(np.linspace(lo, hi, 5) ** 2)


def weighted(logits, weight, pos_weight):
    return logits * weight + pos_weight


def twice_passed(z):
    return np.sum(weighted(z, np.exp(z), np.exp(z)))


def test_a_value_passed_to_an_inlined_callee_is_named_after_its_parameter():
    g = ms.grad(twice_passed)
    g(np.ones(3))
    # (the second np.exp(z) is read from the first: optimize/shared.py)
    assert "exp_z = np.exp(z)" in g.source and re.search(
        r"pos_weight = (np\.exp\(z\)|exp_z)\n", g.source), g.source
    check_grad(twice_passed, (np.linspace(0.1, 0.5, 3),))


def test_the_tutorials_two_ones_like_are_weight_and_pos_weight():
    source = (ROOT / "generated" / "examples" / "function.py").read_text()
    assert "ones_like_z = np.ones_like(z)" in source
    assert "pos_weight = np.ones_like(z)" in source


def _temporaries_of(program):
    """The temporaries (``NameAllocator.temp``) that reach the generated code of
    ``program()`` (which builds and runs a gradient and gives its source)."""
    handed_out = []
    original = NameAllocator.temp

    def recording(self, expr=None, word=None):
        handed_out.append(original(self, expr, word))
        return handed_out[-1]

    NameAllocator.temp = recording
    try:
        source = program()
    finally:
        NameAllocator.temp = original
    return {n for n in handed_out if re.search(rf"\b{n}\b", source)}


def _programs():
    """The committed examples and the benchmarks' programs, as (id, program)."""
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]
    try:
        import bench_heldout
        import bench_workloads
        import test_generated_examples as examples
    finally:
        del sys.path[:2]
    programs = [(f"example {name}", lambda name=name: examples._source(name))
                for name in sorted(examples.CASES)]
    benchmarks = [(title, fn, args, positions)
                  for title, fn, _, args, positions in bench_workloads.workloads()]
    benchmarks += [item[:4] for item in bench_heldout.programs()]
    for title, fn, args, positions in benchmarks:
        def program(fn=fn, args=args, positions=positions):
            gradient = ms.grad(fn, positions)
            gradient(*args)
            return gradient.source
        programs.append((title, program))
    return programs


def test_no_temporary_ends_in_digits_as_a_version_does(monkeypatch):
    """Only a version of a user's variable (``loss_1``) ends in ``_<digits>``."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")   # the code is read, not timed
    numbered = {}
    for title, program in _programs():
        names = sorted(n for n in _temporaries_of(program) if re.search(r"_\d+$", n))
        if names:
            numbered[title] = names
    assert not numbered


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
