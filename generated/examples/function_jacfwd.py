# s2sgrad: forward-mode Jacobian of function (functional_autodiff.py:25) w.r.t. w, b
# Generated code: edits are overwritten. One pass per basis direction of the inputs; each value, then its tangent (x_dot).
import numpy as np

from s2sgrad import runtime as rt


def function_jacfwd(x, y, w, b):
    n_w = rt.tangent_size(w)
    n_b = rt.tangent_size(b)
    columns = []
    # one pass per basis direction of w, b
    for k in range(n_w + n_b):
        w_dot = rt.basis_tangent(w, k)
        b_dot = rt.basis_tangent(b, k - n_w)
        # z = ops.matmul(x, w) + b  (functional_autodiff.py:26)
        t1 = x @ w
        t1_dot = x @ w_dot
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
        t11 = 1 + t10
        t12 = t11 * softplus
        t12_dot = t11 * softplus_dot
        t13 = t3 * y
        t14 = t13 * z
        t14_dot = t13 * z_dot
        loss = t12 - t14
        loss_dot = t12_dot - t14_dot
        loss_1 = loss * t2
        loss_1_dot = loss_dot * t2
        out = np.mean(loss_1)
        out_dot = np.mean(loss_1_dot)
        columns.append(out_dot)
    return out, columns
