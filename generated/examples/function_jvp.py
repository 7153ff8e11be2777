# s2sgrad: Jacobian-vector product of function (functional_autodiff.py:25) w.r.t. x, y, w, b
# Generated code: edits are overwritten. Each value, then its tangent (x_dot: the derivative of x along the input tangents).
import numpy as np

from s2sgrad import runtime as rt


def function_jvp(x, y, w, b, x_dot, y_dot, w_dot, b_dot):
    # z = ops.matmul(x, w) + b  (functional_autodiff.py:26)
    t1 = x @ w
    t1_dot = x_dot @ w + x @ w_dot
    z = t1 + b
    z_dot = t1_dot + b_dot
    # loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:27)
    t2 = np.ones_like(z)
    t3 = np.ones_like(z)
    t4 = np.maximum(z, 0)
    t4_dot = z_dot * (z >= 0)
    t5 = np.absolute(z)
    t5_dot = z_dot * np.sign(z)
    t6 = -t5
    t6_dot = -t5_dot
    t7 = np.exp(t6)
    t7_dot = t6_dot * t7
    t8 = np.log1p(t7)
    t8_dot = t7_dot / (1 + t7)
    softplus = t4 + t8
    softplus_dot = t4_dot + t8_dot
    t9 = t3 - 1
    t10 = t9 * y
    t10_dot = t9 * y_dot
    t11 = 1 + t10
    t11_dot = t10_dot
    t12 = t11 * softplus
    t12_dot = t11_dot * softplus + t11 * softplus_dot
    t13 = t3 * y
    t13_dot = t3 * y_dot
    t14 = t13 * z
    t14_dot = t13_dot * z + t13 * z_dot
    loss = t12 - t14
    loss_dot = t12_dot - t14_dot
    loss_1 = loss * t2
    loss_1_dot = loss_dot * t2
    out = np.mean(loss_1)
    out_dot = np.mean(loss_1_dot)
    return out, out_dot
