# s2sgrad: Jacobian-vector product of f (readme_programs.py:6) w.r.t. x, a
# Generated code: edits are overwritten. Each value, then its tangent
# (x_dot: the derivative of x along the input tangents).
import numpy as np

from s2sgrad import runtime as rt


def f_jvp(x, a, x_dot, a_dot):
    # for i in range(x.shape[0]):  (readme_programs.py:8)
    x_shape = x.shape
    x_shape0 = x_shape[0]
    s = 0.0
    s_dot = 0.0
    for i in range(x_shape0):
        # if x[i] > 0:  (readme_programs.py:9)
        x_i = x[i]
        x_i_gt0 = x_i > 0
        if x_i_gt0:
            # s = s * a + np.sin(x[i])  (readme_programs.py:10)
            s_times_a = s * a
            s_times_a_dot = s_dot * a + s * a_dot
            t1 = x[i]
            t1_dot = x_dot[i]
            t2 = np.sin(t1)
            t2_dot = t1_dot * np.cos(t1)
            s_1 = s_times_a + t2
            s_1_dot = s_times_a_dot + t2_dot
            s_3 = s_1
            s_3_dot = s_1_dot
        else:
            # s = s - x[i] * x[i]  (readme_programs.py:12)
            t3 = x[i]
            t3_dot = x_dot[i]
            t4 = t3 * t3
            t4_dot = t3_dot * t3 + t3 * t3_dot
            s_2 = s - t4
            s_2_dot = s_dot - t4_dot
            s_3 = s_2
            s_3_dot = s_2_dot
        s = s_3
        s_dot = s_3_dot
    return s, s_dot
