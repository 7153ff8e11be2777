"""lse (GradBench evals/lse): the gradient of log-sum-exp with the max trick, n = 320,000.

Loop-free: a max, an elementwise exp, a sum, a log."""
import numpy as np

from common import gradient_tools

SIZE = "n=320000"


def logsumexp(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))


def inputs():
    rng = np.random.default_rng(31337)
    return (rng.random(320000),)


forward = logsumexp
tools = gradient_tools(logsumexp, 0)
