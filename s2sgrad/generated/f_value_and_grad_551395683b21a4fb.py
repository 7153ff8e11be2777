# s2sgrad: value and gradient of f (export.py:2) w.r.t. x
# Generated code: edits are overwritten. Forward sweep, then adjoints in reverse.
import math

import numpy as np

from s2sgrad import runtime as rt


def f_value_and_grad(x):
    # for i in range(3):  (export.py:3)
    n_iter = 0
    for i in range(3):
        n_iter += 1
        # y = x[i] * 2.0  (export.py:4)
        t1 = x[i]
        y = t1 * 2.0
    # return y * y  (export.py:5)
    t2 = y * y
    value = t2

    # sensitivity of the output
    dt2 = rt.ones_like(t2)
    # grad of: return y * y  (export.py:5)
    dy = dt2 * y
    dy = dy + dt2 * y
    # grad of: for i in range(3):  (export.py:3)
    dx = rt.zeros_like(x)
    for i in range(n_iter - 1, -1, -1):
        t1 = x[i]
        y = t1 * 2.0
        # grad of: y = x[i] * 2.0  (export.py:4)
        dt1 = dy * 2.0
        dy = rt.zeros_like(y)
        dx[i] += dt1
    return value, (dx,)
