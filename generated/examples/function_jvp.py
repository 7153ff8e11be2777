# s2sgrad: Jacobian-vector product of function (functional_autodiff.py:25) w.r.t. x, y, w, b
# Generated code: edits are overwritten. Each value, then its tangent
# (x_dot: the derivative of x along the input tangents).
import numpy as np

from s2sgrad import runtime as rt


def function_jvp(x, y, w, b, x_dot, y_dot, w_dot, b_dot):
    # z = ops.matmul(x, w) + b  (functional_autodiff.py:26)
    x_at_w = x @ w
    x_at_w_dot = x_dot @ w + x @ w_dot
    z = x_at_w + b
    z_dot = x_at_w_dot + b_dot
    # loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:27)
    ones_like_z = np.ones_like(z)
    pos_weight = np.ones_like(z)
    maximum_z0 = np.maximum(z, 0)
    maximum_z0_dot = z_dot * (z >= 0)
    absolute_z = np.absolute(z)
    absolute_z_dot = z_dot * np.sign(z)
    neg_absolute_z = -absolute_z
    neg_absolute_z_dot = -absolute_z_dot
    t1 = np.exp(neg_absolute_z)
    t1_dot = neg_absolute_z_dot * t1
    t2 = np.log1p(t1)
    t2_dot = t1_dot / (1 + t1)
    softplus = maximum_z0 + t2
    softplus_dot = maximum_z0_dot + t2_dot
    t3 = pos_weight - np.float32(1.0)
    t4 = t3 * y
    t4_dot = t3 * y_dot
    t5 = np.float32(1.0) + t4
    t5_dot = t4_dot
    t6 = t5 * softplus
    t6_dot = t5_dot * softplus + t5 * softplus_dot
    t7 = pos_weight * y
    t7_dot = pos_weight * y_dot
    t8 = t7 * z
    t8_dot = t7_dot * z + t7 * z_dot
    loss = t6 - t8
    loss_dot = t6_dot - t8_dot
    loss_1 = loss * ones_like_z
    loss_1_dot = loss_dot * ones_like_z
    out = np.mean(loss_1)
    out_dot = np.mean(loss_1_dot)
    return out, out_dot
