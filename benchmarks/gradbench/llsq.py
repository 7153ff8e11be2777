"""llsq (GradBench evals/llsq): the gradient of a linear least-squares objective,
n = 4096 points, m = 128 coefficients.

    y(x) = 1/2 sum_i (s_i - sum_j x_j t_i**j)**2,  t_i = -1 + 2 i / (n - 1),  s_i = sign(t_i)

Loop-free, written from the README: the powers of t as an n x m matrix, a matrix-vector
product, the squared residual."""
import numpy as np

from common import gradient_tools

SIZE = "n=4096, m=128"


def llsq(x, n):
    t = np.linspace(-1.0, 1.0, n)
    s = np.sign(t)
    powers = t[:, None] ** np.arange(x.shape[0])
    r = s - powers @ x
    return 0.5 * np.sum(r * r)


def inputs():
    rng = np.random.default_rng(31337)
    return (rng.random(128), 4096)


forward = llsq
tools = gradient_tools(llsq, 0, static=(1,))
