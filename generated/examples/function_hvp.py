# s2sgrad: Hessian-vector product of function (functional_autodiff.py:25) w.r.t. w, b: forward mode
#    over its gradient function_value_and_grad
# Generated code: edits are overwritten. Each value, then its tangent (x_dot: the derivative of x along the input tangents).
import numpy as np

from s2sgrad import runtime as rt


def function_value_and_grad_jvp(x, y, w, b, w_dot, b_dot):
    # t1 = x @ w  (function_value_and_grad.py:11)
    t1 = x @ w
    t1_dot = x @ w_dot
    # z = t1 + b  (function_value_and_grad.py:12)
    z = t1 + b
    z_dot = t1_dot + b_dot
    # t2 = np.ones_like(z)  (function_value_and_grad.py:14)
    t2 = np.ones_like(z)
    # t3 = np.ones_like(z)  (function_value_and_grad.py:15)
    t3 = np.ones_like(z)
    # t4 = np.maximum(z, 0)  (function_value_and_grad.py:16)
    t4 = np.maximum(z, 0)
    t4_dot = rt.broadcast_like(z_dot * (z >= 0), t4)
    # t5 = np.absolute(z)  (function_value_and_grad.py:17)
    t5 = np.absolute(z)
    t5_dot = z_dot * np.sign(z)
    # t6 = -t5  (function_value_and_grad.py:18)
    t6 = -t5
    t6_dot = -t5_dot
    # t7 = np.exp(t6)  (function_value_and_grad.py:19)
    t7 = np.exp(t6)
    t7_dot = t6_dot * t7
    # t8 = np.log1p(t7)  (function_value_and_grad.py:20)
    t8 = np.log1p(t7)
    t8_dot = t7_dot / (1 + t7)
    # softplus = t4 + t8  (function_value_and_grad.py:21)
    softplus = t4 + t8
    softplus_dot = t4_dot + t8_dot
    # t9 = t3 - 1  (function_value_and_grad.py:22)
    t9 = t3 - 1
    # t10 = t9 * y  (function_value_and_grad.py:23)
    t10 = t9 * y
    # t11 = 1 + t10  (function_value_and_grad.py:24)
    t11 = 1 + t10
    # t12 = t11 * softplus  (function_value_and_grad.py:25)
    t12 = t11 * softplus
    t12_dot = t11 * softplus_dot
    # t13 = t3 * y  (function_value_and_grad.py:26)
    t13 = t3 * y
    # t14 = t13 * z  (function_value_and_grad.py:27)
    t14 = t13 * z
    t14_dot = t13 * z_dot
    # loss = t12 - t14  (function_value_and_grad.py:28)
    loss = t12 - t14
    loss_dot = t12_dot - t14_dot
    # loss_1 = loss * t2  (function_value_and_grad.py:29)
    loss_1 = loss * t2
    loss_1_dot = loss_dot * t2
    # out = np.mean(loss_1)  (function_value_and_grad.py:30)
    out = np.mean(loss_1)
    out_dot = np.mean(loss_1_dot)
    # dout = rt.ones_like(out)  (function_value_and_grad.py:33)
    dout = rt.ones_like(out)
    # dloss_1 = rt.unreduce(dout, loss_1, ...  (function_value_and_grad.py:35)
    t15 = rt.unreduce(dout, loss_1, None, False)
    t16 = rt.reduction_count(loss_1, None)
    dloss_1 = t15 / t16
    # dloss = rt.unbroadcast(dloss_1 * t2, loss)  (function_value_and_grad.py:36)
    t17 = dloss_1 * t2
    dloss = rt.unbroadcast(t17, loss)
    # dt12 = rt.unbroadcast(dloss, t12)  (function_value_and_grad.py:37)
    dt12 = rt.unbroadcast(dloss, t12)
    # dt14 = rt.unbroadcast(-dloss, t14)  (function_value_and_grad.py:38)
    t18 = -dloss
    dt14 = rt.unbroadcast(t18, t14)
    # dz = rt.unbroadcast(dt14 * t13, z)  (function_value_and_grad.py:39)
    t19 = dt14 * t13
    dz = rt.unbroadcast(t19, z)
    # dsoftplus = rt.unbroadcast(dt12 * t11, ...  (function_value_and_grad.py:40)
    t20 = dt12 * t11
    dsoftplus = rt.unbroadcast(t20, softplus)
    # dt4 = rt.unbroadcast(dsoftplus, t4)  (function_value_and_grad.py:41)
    dt4 = rt.unbroadcast(dsoftplus, t4)
    # dt8 = rt.unbroadcast(dsoftplus, t8)  (function_value_and_grad.py:42)
    dt8 = rt.unbroadcast(dsoftplus, t8)
    # dt7 = dt8 / (1 + t7)  (function_value_and_grad.py:43)
    t21 = 1 + t7
    t21_dot = rt.broadcast_like(t7_dot, t21)
    dt7 = dt8 / t21
    dt7_dot = -t21_dot * dt7 / t21
    # dt6 = dt7 * t7  (function_value_and_grad.py:44)
    dt6 = dt7 * t7
    dt6_dot = dt7_dot * t7 + dt7 * t7_dot
    # dt5 = -dt6  (function_value_and_grad.py:45)
    dt5 = -dt6
    dt5_dot = -dt6_dot
    # dz = dz + dt5 * np.sign(z)  (function_value_and_grad.py:46)
    t22 = np.sign(z)
    t23 = dt5 * t22
    t23_dot = dt5_dot * t22
    dz_1 = dz + t23
    dz_1_dot = rt.broadcast_like(t23_dot, dz_1)
    # dz += rt.unbroadcast(dt4 * (z >= 0), z)  (function_value_and_grad.py:47)
    t24 = z >= 0
    t25 = dt4 * t24
    t26 = rt.unbroadcast(t25, z)
    dz_2 = dz_1 + t26
    dz_2_dot = rt.broadcast_like(dz_1_dot, dz_2)
    # dt1 = rt.unbroadcast(dz, t1)  (function_value_and_grad.py:49)
    dt1 = rt.unbroadcast(dz_2, t1)
    dt1_dot = rt.unbroadcast(dz_2_dot, t1)
    # db = rt.unbroadcast(dz, b)  (function_value_and_grad.py:50)
    db = rt.unbroadcast(dz_2, b)
    db_dot = rt.unbroadcast(dz_2_dot, b)
    # dw = rt.matmul_right(dt1, x, w)  (function_value_and_grad.py:51)
    dw = rt.matmul_right(dt1, x, w)
    dw_dot = rt.matmul_right(dt1_dot, x, w)
    return (out, (dw, db)), (out_dot, (dw_dot, db_dot))
