"""A differentiated value that may be complex is refused with an error naming the user's
line (``s2sgrad/compiler/analysis/complex_values.py``), instead of the silently wrong gradient
s2sgrad's real-valued rules would give: the zero that ``np.imag`` / ``np.angle`` /
``np.sign`` have for real input only, a product without the complex conjugate.  Real
code next to complex constants it does not differentiate through is unaffected."""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.errors import MissingRuleError
from s2sgrad.testing import check_grad

Z = np.array([1.0 + 2.0j, 3.0 - 1.0j])
X = np.array([0.7, -1.3])
W = np.array([1.0 + 1.0j, 2.0 - 0.5j])


def imag_squared(z):
    return np.sum(np.imag(z) ** 2)


def angle_sum(z):
    return np.sum(np.angle(z))


def imag_of_product(x):
    return np.sum(np.imag(x * W) ** 2)     # real x, complex constant: x * W is complex


def sign_of_product(x):
    return np.sum(np.sign(x * W) * x)


def squared_modulus(z):
    return np.sum(np.real(z * np.conj(z)))


def imag_attribute(z):
    return np.sum(z.imag ** 2)


def imag_in_loop(x, n):
    s = 0.0
    u = x + 0.0
    for i in range(n):
        u = u * W               # complex from the first iteration on
        s = s + np.sum(np.imag(u))
    return s


@pytest.mark.parametrize("fn,args,line,construct", [
    (imag_squared, (Z,), "np.sum(np.imag(z) ** 2)", "numpy.imag"),
    (angle_sum, (Z,), "np.sum(np.angle(z))", "numpy.angle"),
    (imag_of_product, (X,), "np.sum(np.imag(x * W) ** 2)", "numpy.imag"),
    (sign_of_product, (X,), "np.sum(np.sign(x * W) * x)", "numpy.sign"),
    (squared_modulus, (Z,), "np.sum(np.real(z * np.conj(z)))", "numpy.conjugate"),
    (imag_attribute, (Z,), "np.sum(z.imag ** 2)", ".imag attribute"),
    (imag_in_loop, (X, 3), "u = u * W", "operator mul"),
], ids=["imag", "angle", "imag-of-product", "sign-of-product", "modulus", "attribute",
        "loop"])
def test_a_complex_differentiated_value_is_refused_at_its_line(fn, args, line, construct):
    with pytest.raises(MissingRuleError) as info:
        s2sgrad.grad(fn)(*args)
    message = str(info.value)
    assert "may be complex" in message and construct in message, message
    assert line in message and "test_complex_values.py:" in message, message
    assert "two real arrays" in message and "stop_gradient" in message, message


def test_imag_names_why_its_zero_is_wrong_and_forward_mode_refuses_too():
    with pytest.raises(MissingRuleError, match="holds for real input only"):
        s2sgrad.grad(imag_squared)(Z)
    with pytest.raises(MissingRuleError, match="may be complex reaches numpy.imag"):
        s2sgrad.jvp(imag_squared, (Z,), (np.ones_like(Z),))


def real_next_to_complex(x):
    """np.sign / np.imag / np.angle of real values (their zero gradient is right), and a
    complex constant used only through its real parts."""
    spectrum = np.abs(W) + np.real(W)
    return (np.sum(np.sign(x) * x * spectrum) + np.sum(np.imag(x) * x)
            + np.sum(np.angle(x + 2.0)) + np.sum(np.sin(x) * W.real))


def test_real_values_beside_complex_constants_are_differentiated():
    g = check_grad(real_next_to_complex, (X,))
    np.testing.assert_allclose(
        g(X), np.sign(X) * (np.abs(W) + np.real(W)) + np.cos(X) * W.real, rtol=1e-12)
