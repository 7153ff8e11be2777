# s2sgrad: value and gradient of recurrence (bench_workloads.py:29) w.r.t. w, x
# Generated code: edits are overwritten. Forward sweep, then adjoints in reverse.
import numpy as np

from s2sgrad import runtime as rt


def recurrence_value_and_grad(w, x):
    h_tape = np.empty(0, np.float64)
    h_tape_top = 0
    # for i in range(x.shape[0]):  (bench_workloads.py:31)
    x_shape0 = x.shape[0]
    h = 0.0
    n_iter = 0
    h_tape = rt.reserve(h_tape, h_tape_top, x_shape0)
    for i in range(x_shape0):
        n_iter += 1
        h_tape_top = rt.push(h_tape, h_tape_top, h)
        # h = np.tanh(w * h + x[i])  (bench_workloads.py:32)
        w_times_h = w * h
        x_i = x[i]
        t1 = w_times_h + x_i
        h_1 = np.tanh(t1)
        h = h_1
    value = h

    # sensitivity of the output
    dh = rt.ones_like(h)
    # grad of: for i in range(x.shape[0]):  (bench_workloads.py:31)
    dw = rt.zeros_like(w)
    dx = rt.zeros_like(x)
    for i in range(n_iter - 1, -1, -1):
        h_1 = h
        h_tape_top -= 1
        h = h_tape[h_tape_top]
        dh_1 = dh
        # grad of: h = np.tanh(w * h + x[i])  (bench_workloads.py:32)
        dt1 = dh_1 * (1 - h_1 * h_1)
        dx[i] += dt1
        dw += dt1 * h
        dh = dt1 * w
    return value, (dw, dx)
