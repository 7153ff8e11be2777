# s2sgrad: Hessian-vector product of function (functional_autodiff.py:25) w.r.t. w, b: forward mode
#    over its gradient function_value_and_grad
# Generated code: edits are overwritten. Each value, then its tangent
# (x_dot: the derivative of x along the input tangents).
import numpy as np

from s2sgrad import runtime as rt


def function_value_and_grad_jvp(x, y, w, b, w_dot, b_dot):
    # z = ops.matmul(x, w) + b  (functional_autodiff.py:26)
    x_at_w = x @ w
    x_at_w_dot = x @ w_dot
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
    t9 = np.float32(1.0)
    t3 = pos_weight - t9
    t4 = t3 * y
    t10 = np.float32(1.0)
    t5 = t10 + t4
    t6 = t5 * softplus
    t6_dot = t5 * softplus_dot
    t7 = pos_weight * y
    t8 = t7 * z
    t8_dot = t7 * z_dot
    loss = t6 - t8
    loss_dot = t6_dot - t8_dot
    loss_1 = loss * ones_like_z
    loss_1_dot = loss_dot * ones_like_z
    out = np.mean(loss_1)
    out_dot = np.mean(loss_1_dot)
    # dout = rt.ones_like(out)  (function_value_and_grad.py:33)
    dout = rt.ones_like(out)
    # grad of: loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:27)
    t11 = rt.unreduce(dout, loss_1, None, False)
    t12 = rt.reduction_count(loss_1, None)
    dloss_1 = t11 / t12
    dloss = dloss_1 * ones_like_z
    dt8 = -dloss
    dz = dt8 * t7
    dsoftplus = dloss * t5
    t1_plus1 = 1 + t1
    t1_plus1_dot = t1_dot
    dt1 = dsoftplus / t1_plus1
    dt1_dot = -t1_plus1_dot * dt1 / t1_plus1
    dneg_absolute_z = dt1 * t1
    dneg_absolute_z_dot = dt1_dot * t1 + dt1 * t1_dot
    dabsolute_z = -dneg_absolute_z
    dabsolute_z_dot = -dneg_absolute_z_dot
    sign_z = np.sign(z)
    t13 = dabsolute_z * sign_z
    t13_dot = dabsolute_z_dot * sign_z
    dz_1 = dz + t13
    dz_1_dot = rt.broadcast_like(t13_dot, dz_1)
    z_ge0 = z >= 0
    t14 = dsoftplus * z_ge0
    dz_2 = dz_1 + t14
    dz_2_dot = rt.broadcast_like(dz_1_dot, dz_2)
    # grad of: z = ops.matmul(x, w) + b  (functional_autodiff.py:26)
    dw = rt.matmul_right(dz_2, x, w)
    dw_dot = rt.matmul_right(dz_2_dot, x, w)
    return (out, (dw, dz_2)), (out_dot, (dw_dot, dz_2_dot))
