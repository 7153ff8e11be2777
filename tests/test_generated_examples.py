"""The generated code of the functional-autodiff tutorial, and of the other programs
README.md shows generated code of, is committed under generated/examples/; this test
fails when the code generator's output drifts from it (and tests/test_readme_examples.py
when README's excerpts drift from the committed files).

After an intended change to the generated code, refresh the snapshots with
    S2SGRAD_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_generated_examples.py
and read the diff: it is the product.
"""
import os

import pytest

import numpy as np

import s2sgrad as ms
import readme_programs
from s2sgrad.api.forward import ForwardFunction
from examples_loader import ROOT, load_bench_workloads, load_functional_autodiff
from s2sgrad.api.higher import HvpFunction

SNAPSHOTS = ROOT / "generated" / "examples"
EX = load_functional_autodiff()
ARGS = (EX.x, EX.y, EX.w, EX.b)   # the tutorial's own values: the code is built for them
CASES = {
    "function": (lambda: ms.grad(EX.function, (2, 3)), ARGS),
    "function_with_logits": (lambda: ms.grad(EX.function_with_logits, (2, 3)), ARGS),
    "function_stop_gradient": (lambda: ms.grad(EX.function_stop_gradient, (2, 3)), ARGS),
    "function_with_logits_has_aux": (lambda: ms.grad(EX.function_with_logits, (2, 3),
                                                     has_aux=True), ARGS),
    "forward_fn_weights": (lambda: ms.value_and_grad(EX.forward_fn, None,
                                                     weights=EX.model.trainable_params()),
                           (EX.x, EX.y)),
    # forward mode: the code ms.jvp(function, ARGS, v) runs, and ms.jacfwd's
    "function_jvp": (lambda: _Jvp(EX.function), ARGS),
    "function_jacfwd": (lambda: ms.jacfwd(EX.function, (2, 3)), ARGS),
    # forward over reverse of the value-and-gradient function (HvpFunction): what
    # grad(grad(f)) and a gradient called inside a differentiated function run (ms.hvp
    # runs jvp(grad(f))'s build, api/higher.hvp_forward)
    "function_hvp": (lambda: _Hvp(EX.function), ARGS),
    # README's other excerpts: its forward-mode example, and the recurrence benchmark
    "readme_f_jvp": (lambda: _Jvp(readme_programs.f, (0, 1)),
                     (np.linspace(-1.0, 1.0, 5), 0.5)),
    "recurrence": (lambda: ms.grad(load_bench_workloads().recurrence, (0, 1)),
                   (0.7, np.linspace(-1.0, 1.0, 8))),
    # the same under memory_limit: the loop as step functions run by the checkpointing driver
    "recurrence_checkpointed": (lambda: ms.grad(load_bench_workloads().recurrence, (0, 1),
                                                memory_limit="1MB"),
                                (0.7, np.linspace(-1.0, 1.0, 8))),
}


class _Jvp:
    """``ms.jvp(fn, args, v)`` as an object to call and read the source of (v: the args)."""

    def __init__(self, fn, positions=(0, 1, 2, 3)):
        self.forward = ForwardFunction(fn, positions, False, False)

    def __call__(self, *args):
        return self.forward.jvp_call(args, args)

    @property
    def source(self):
        return self.forward.source


class _Hvp:
    """The Hessian-vector product of ``fn`` w.r.t. w and b, as an object to call and read
    the source of (v: w and b themselves)."""

    def __init__(self, fn):
        self.function = HvpFunction(fn, (2, 3))

    def __call__(self, *args):
        return self.function.tangents_of_gradient(args, args[2:])

    @property
    def source(self):
        return self.function.source


def _source(name):
    make, args = CASES[name]
    gradient = make()
    gradient(*args)
    return gradient.source


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_code_matches_committed_snapshot(name):
    source = _source(name)
    path = SNAPSHOTS / f"{name}.py"
    if os.environ.get("S2SGRAD_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    assert path.exists(), f"missing snapshot {path}; see this module's docstring"
    assert path.read_text() == source, (
        f"the generated code for {name} changed; if intended, refresh the snapshots "
        f"(see tests/test_generated_examples.py) and commit the diff")


def test_stop_gradient_and_has_aux_generate_the_same_adjoint_as_plain_loss():
    """The tutorial's point, visible in the code: z's own sensitivity is gone."""
    plain = (SNAPSHOTS / "function.py").read_text().split("# sensitivity of the output")[1]
    for name in ("function_stop_gradient", "function_with_logits_has_aux"):
        other = (SNAPSHOTS / f"{name}.py").read_text().split("# sensitivity of the output")[1]
        assert other.count("rt.ones_like") == plain.count("rt.ones_like") == 1
    logits = (SNAPSHOTS / "function_with_logits.py").read_text()
    assert logits.count("rt.ones_like") == 2


def test_example_prints_the_tutorial_numbers(capsys):
    EX.main()
    out = capsys.readouterr().out
    assert "loss = function(x, y, w, b): 1.3423151" in out   # every number is labelled
    assert "(dw, db) = grad(function, (2, 3))(x, y, w, b):" in out
    assert "z = [ 3.8211915" in out and "\nloss = 1.3423151" in out
    assert "the gradient code ran as: " in out
    assert out.count("3.26189") >= 6 * 4       # rows of dw and db in four gradients
    assert "1.32618" in out and "1.01589" in out and "1.04216" in out
    assert "1.58914" in out and "4.21645" in out


@pytest.mark.parametrize("backend", ["numba", "python"])
def test_value_is_a_float32_tensor_under_both_backends(backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    loss, _ = ms.value_and_grad(EX.forward_fn, None, weights=EX.model.trainable_params())(
        EX.x, EX.y)
    assert isinstance(loss, ms.Tensor) and loss.dtype == ms.float32
    assert abs(float(loss) - 1.3423151) < 1e-6
