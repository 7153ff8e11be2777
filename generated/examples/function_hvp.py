# s2sgrad: Hessian-vector product of function (functional_autodiff.py:25) w.r.t. w, b: forward mode
#    over its gradient function_value_and_grad
# Generated code: edits are overwritten. Each value, then its tangent (x_dot: the derivative of x along the input tangents).
import numpy as np

from s2sgrad import runtime as rt


def function_value_and_grad_jvp(x, y, w, b, w_dot, b_dot):
    # x_at_w = x @ w  (functional_autodiff.py:26)
    x_at_w = x @ w
    x_at_w_dot = x @ w_dot
    # z = x_at_w + b  (functional_autodiff.py:26)
    z = x_at_w + b
    z_dot = x_at_w_dot + b_dot
    # ones_like_z = np.ones_like(z)  (functional_autodiff.py:27)
    ones_like_z = np.ones_like(z)
    # ones_like_z_1 = np.ones_like(z)  (functional_autodiff.py:27)
    ones_like_z_1 = np.ones_like(z)
    # maximum_z_0 = np.maximum(z, 0)  (functional_autodiff.py:27)
    maximum_z_0 = np.maximum(z, 0)
    maximum_z_0_dot = z_dot * (z >= 0)
    # absolute_z = np.absolute(z)  (functional_autodiff.py:27)
    absolute_z = np.absolute(z)
    absolute_z_dot = z_dot * np.sign(z)
    # neg_absolute_z = -absolute_z  (functional_autodiff.py:27)
    neg_absolute_z = -absolute_z
    neg_absolute_z_dot = -absolute_z_dot
    # t1 = np.exp(neg_absolute_z)  (functional_autodiff.py:27)
    t1 = np.exp(neg_absolute_z)
    t1_dot = neg_absolute_z_dot * t1
    # t2 = np.log1p(t1)  (functional_autodiff.py:27)
    t2 = np.log1p(t1)
    t2_dot = t1_dot / (1 + t1)
    # softplus = maximum_z_0 + t2  (functional_autodiff.py:27)
    softplus = maximum_z_0 + t2
    softplus_dot = maximum_z_0_dot + t2_dot
    # t3 = ones_like_z_1 - np.float32(1.0)  (functional_autodiff.py:27)
    t9 = np.float32(1.0)
    t3 = ones_like_z_1 - t9
    # t4 = t3 * y  (functional_autodiff.py:27)
    t4 = t3 * y
    # t5 = np.float32(1.0) + t4  (functional_autodiff.py:27)
    t10 = np.float32(1.0)
    t5 = t10 + t4
    # t6 = t5 * softplus  (functional_autodiff.py:27)
    t6 = t5 * softplus
    t6_dot = t5 * softplus_dot
    # t7 = ones_like_z_1 * y  (functional_autodiff.py:27)
    t7 = ones_like_z_1 * y
    # t8 = t7 * z  (functional_autodiff.py:27)
    t8 = t7 * z
    t8_dot = t7 * z_dot
    # loss = t6 - t8  (functional_autodiff.py:27)
    loss = t6 - t8
    loss_dot = t6_dot - t8_dot
    # loss_1 = loss * ones_like_z  (functional_autodiff.py:27)
    loss_1 = loss * ones_like_z
    loss_1_dot = loss_dot * ones_like_z
    # out = np.mean(loss_1)  (functional_autodiff.py:27)
    out = np.mean(loss_1)
    out_dot = np.mean(loss_1_dot)
    # dout = rt.ones_like(out)  (function_value_and_grad.py:33)
    dout = rt.ones_like(out)
    # dloss_1 = rt.unreduce(dout, loss_1, ...  (functional_autodiff.py:27)
    t11 = rt.unreduce(dout, loss_1, None, False)
    t12 = rt.reduction_count(loss_1, None)
    dloss_1 = t11 / t12
    # dloss = dloss_1 * ones_like_z  (functional_autodiff.py:27)
    dloss = dloss_1 * ones_like_z
    # dt8 = -dloss  (functional_autodiff.py:27)
    dt8 = -dloss
    # dz = dt8 * t7  (functional_autodiff.py:27)
    dz = dt8 * t7
    # dsoftplus = dloss * t5  (functional_autodiff.py:27)
    dsoftplus = dloss * t5
    # dt1 = dsoftplus / (1 + t1)  (functional_autodiff.py:27)
    t1_plus_1 = 1 + t1
    t1_plus_1_dot = t1_dot
    dt1 = dsoftplus / t1_plus_1
    dt1_dot = -t1_plus_1_dot * dt1 / t1_plus_1
    # dneg_absolute_z = dt1 * t1  (functional_autodiff.py:27)
    dneg_absolute_z = dt1 * t1
    dneg_absolute_z_dot = dt1_dot * t1 + dt1 * t1_dot
    # dabsolute_z = -dneg_absolute_z  (functional_autodiff.py:27)
    dabsolute_z = -dneg_absolute_z
    dabsolute_z_dot = -dneg_absolute_z_dot
    # dz = dz + dabsolute_z * np.sign(z)  (functional_autodiff.py:27)
    sign_z = np.sign(z)
    t13 = dabsolute_z * sign_z
    t13_dot = dabsolute_z_dot * sign_z
    dz_1 = dz + t13
    dz_1_dot = rt.broadcast_like(t13_dot, dz_1)
    # dz += dsoftplus * (z >= 0)  (functional_autodiff.py:27)
    z_ge_0 = z >= 0
    t14 = dsoftplus * z_ge_0
    dz_2 = dz_1 + t14
    dz_2_dot = rt.broadcast_like(dz_1_dot, dz_2)
    # dw = rt.matmul_right(dz, x, w)  (functional_autodiff.py:26)
    dw = rt.matmul_right(dz_2, x, w)
    dw_dot = rt.matmul_right(dz_2_dot, x, w)
    return (out, (dw, dz_2)), (out_dot, (dw_dot, dz_2_dot))
