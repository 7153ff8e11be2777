"""``Generated.line_map``: each generated line -> the user's line it was generated for,
built while the code is laid out (not read back from comments); an error raised inside
generated code gets a note naming that line and the sweep it was in."""
import inspect
import os

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.compiler.pipeline import build


def loop_loss(x, w):
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.tanh(x @ w) * i)
    return s * 2.0


def bad_index(x, idx):
    y = np.sin(x)
    z = y[idx]
    return np.sum(z * z)


@ms.custom_vjp
def inverse_grad(m):
    return m * 1.0


@inverse_grad.defvjp
def _(m, out, dout):
    return (np.linalg.inv(m) * dout,)


def fails_in_the_adjoint(m):
    return np.sum(inverse_grad(m))


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_every_line_under_a_location_comment_maps_to_its_user_line():
    generated = build(loop_loss, (0, 1), (), False)
    lines = generated.source.splitlines()
    header, body = _line_of(loop_loss, "for i in"), _line_of(loop_loss, "s = s + ")
    mapped = {k: generated.line_map.get(k) for k in range(1, len(lines) + 1)}
    tanh = next(k for k, line in enumerate(lines, 1) if "np.tanh" in line)
    assert mapped[tanh].lineno == body
    assert os.path.basename(mapped[tanh].filename) == "test_line_map.py"
    # the reversed loop's own line maps to the loop's header, its body to the body's line
    reversed_loop = next(k for k, line in enumerate(lines, 1)
                         if k > generated.adjoint_from and line.lstrip().startswith("for "))
    assert mapped[reversed_loop].lineno == header
    assert mapped[reversed_loop + 1].lineno in (header, body)
    assert any(m is not None and m.lineno == body for k, m in mapped.items()
               if k > reversed_loop)
    # the module header and the def line are nobody's
    assert all(mapped[k] is None for k, line in enumerate(lines, 1)
               if line.startswith(("import", "from", "def", "# s2sgrad")))


def test_a_location_comment_maps_to_the_line_it_shows():
    generated = build(bad_index, (0,), (), False)
    for k, line in enumerate(generated.source.splitlines(), 1):
        if line.lstrip().startswith("#") and k in generated.line_map:
            assert generated.line_map[k].text.strip() in line


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_a_forward_error_names_the_users_line(backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    with pytest.raises(IndexError) as info:
        ms.grad(bad_index)(np.ones(3), np.array([5]))
    (note,) = info.value.__notes__
    assert "(forward sweep) for 'z = y[idx]'" in note
    assert f"test_line_map.py:{_line_of(bad_index, 'z = y[idx]')}" in note


def test_an_adjoint_error_names_the_call_and_the_adjoint_sweep():
    with pytest.raises(np.linalg.LinAlgError) as info:
        ms.grad(fails_in_the_adjoint)(np.zeros((2, 2)))
    (note,) = info.value.__notes__
    assert "(adjoint sweep)" in note and "inverse_grad(m)" in note
    assert f"test_line_map.py:{_line_of(fails_in_the_adjoint, 'return np.sum')}" in note


IDX = np.array([5])


def reads_past_the_end(x):
    y = np.sin(x)
    return y[IDX]


@pytest.mark.parametrize("mode", ["jvp", "jacfwd"])
def test_a_forward_mode_error_names_the_users_line(mode):
    x = np.ones(3)
    with pytest.raises(IndexError) as info:
        if mode == "jvp":
            ms.jvp(reads_past_the_end, (x,), (x,))
        else:
            ms.jacfwd(reads_past_the_end)(x)
    (note,) = info.value.__notes__
    assert "for 'return y[IDX]'" in note
    assert f"test_line_map.py:{_line_of(reads_past_the_end, 'return y[IDX]')}" in note


def two_lines(x, w):
    z = np.tanh(x @ w) + x * 0.5
    return np.sum(z * z * w[0])


def test_second_order_code_names_the_users_lines_once(monkeypatch):
    """The forward-over-reverse module's comments quote the user's lines (``grad of:``
    for the gradient's part), one comment per run of statements from one line, not a
    comment per statement of the gradient module repeating that statement."""
    from s2sgrad.compiler.pipeline_higher import build_hvp
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    generated = build_hvp(two_lines, (0, 1))
    comments = [line.strip() for line in generated.source.splitlines()
                if line.strip().startswith("# ") and "(" in line and line.rstrip().endswith(")")]
    user = {" ".join(line.split()) for line in inspect.getsource(two_lines).splitlines()[1:]}
    located = [c for c in comments if "test_line_map.py:" in c]
    assert located, generated.source
    for comment in located:
        text = comment[2:].rsplit("  (", 1)[0].replace("grad of: ", "", 1)
        assert text in user, comment
    for a, b in zip(located, located[1:]):
        assert a != b, generated.source
    assert any(c.startswith("# grad of: ") for c in located), generated.source
    x, w = np.linspace(0.1, 0.5, 3), np.linspace(-0.2, 0.3, 3)
    hv = ms.hvp(two_lines, (x, w), (np.ones(3), np.zeros(3)))
    eps = 1e-5
    grad = ms.grad(two_lines, (0, 1))
    expected = [(a - b) / (2 * eps) for a, b in zip(grad(x + eps, w), grad(x - eps, w))]
    for got, want in zip(hv, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-8)
