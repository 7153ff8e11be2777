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
    n_iter = x_shape0
    # memory_limit=1000000 bytes: the whole tape if it fits, else snapshots of the state (revolve)
    loop_slots = rt.checkpoint_slots(recurrence_step_taped, 0, 1, n_iter, (h,), (w, x), 1000000,
                                     'bench_workloads.py:31')
    if loop_slots == 0:
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
        loop_snapshots = rt.no_snapshots((h,))
    else:
        (h,), loop_snapshots = rt.checkpoint_forward(recurrence_step, 0, 1, n_iter, loop_slots,
                                                     (h,), (w, x))
    value = h

    # sensitivity of the output
    dh = rt.ones_like(h)
    # grad of: for i in range(x.shape[0]):  (bench_workloads.py:31)
    dw = rt.zeros_like(w)
    dx = rt.zeros_like(x)
    if loop_slots == 0:
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
    else:
        h, dh, dw = rt.checkpoint_reverse(recurrence_step, recurrence_step_taped,
                                          recurrence_step_adjoint, 0, 1, n_iter, loop_slots,
                                          loop_snapshots, (w, x), (dx, w), (h, dh, dw), 1000000,
                                          'bench_workloads.py:31')
    return value, (dw, dx)


# What the function above calls (defined once per module).
def recurrence_step(i, state, consts):
    # one iteration of the loop at bench_workloads.py:31, no tape: the state (h,) after it
    h, = state
    w, x = consts
    # h = np.tanh(w * h + x[i])  (bench_workloads.py:32)
    w_times_h = w * h
    x_i = x[i]
    t1 = w_times_h + x_i
    h_1 = np.tanh(t1)
    # for i in range(x.shape[0]):  (bench_workloads.py:31)
    h = h_1
    return h,


def recurrence_step_taped(i, state, consts):
    # the same, keeping what its adjoint reads: (state after, tape, tape bytes)
    h, = state
    w, x = consts
    h_tape = h
    # h = np.tanh(w * h + x[i])  (bench_workloads.py:32)
    w_times_h = w * h
    x_i = x[i]
    t1 = w_times_h + x_i
    h_1 = np.tanh(t1)
    # for i in range(x.shape[0]):  (bench_workloads.py:31)
    h = h_1
    tape = h_tape,
    return (h,), tape, rt.tape_bytes(tape)


def recurrence_step_adjoint(i, tape, consts, carry):
    # the adjoint of that iteration, from its tape: (h, dh, dw) before and after it
    h_tape, = tape
    dx, w = consts
    h, dh, dw = carry
    h_1 = h
    h = h_tape
    # grad of: for i in range(x.shape[0]):  (bench_workloads.py:31)
    dh_1 = dh
    # grad of: h = np.tanh(w * h + x[i])  (bench_workloads.py:32)
    dt1 = dh_1 * (1 - h_1 * h_1)
    dx[i] += dt1
    dw += dt1 * h
    dh = dt1 * w
    return h, dh, dw
