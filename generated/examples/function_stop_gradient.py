# s2sgrad: value and gradient of function_stop_gradient (functional_autodiff.py:37) w.r.t. w, b
# Generated code: edits are overwritten. Forward sweep, then adjoints in reverse.
import numpy as np

from s2sgrad import runtime as rt


def function_stop_gradient_value_and_grad(x, y, w, b):
    # z = ops.matmul(x, w) + b  (functional_autodiff.py:38)
    t1 = x @ w
    z = t1 + b
    # loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:39)
    t2 = np.ones_like(z)
    t3 = np.ones_like(z)
    t4 = np.maximum(z, 0)
    t5 = np.absolute(z)
    t6 = -t5
    t7 = np.exp(t6)
    t8 = np.log1p(t7)
    softplus = t4 + t8
    t9 = t3 - 1
    t10 = t9 * y
    t11 = 1 + t10
    t12 = t11 * softplus
    t13 = t3 * y
    t14 = t13 * z
    loss = t12 - t14
    loss_1 = loss * t2
    out = np.mean(loss_1)
    # return loss, ops.stop_gradient(z)  (functional_autodiff.py:40)
    z_stopped = z

    # sensitivity of the output
    dout = rt.ones_like(out)
    # grad of: loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:39)
    dloss_1 = rt.unreduce(dout, loss_1, None, False) / rt.reduction_count(loss_1, None)
    dloss = dloss_1 * t2
    dt14 = -dloss
    dz = dt14 * t13
    dsoftplus = dloss * t11
    dt7 = dsoftplus / (1 + t7)
    dt6 = dt7 * t7
    dt5 = -dt6
    dz = dz + dt5 * np.sign(z)
    dz += dsoftplus * (z >= 0)
    # grad of: z = ops.matmul(x, w) + b  (functional_autodiff.py:38)
    db = dz
    dw = rt.matmul_right(dz, x, w)
    return (out, z_stopped), (dw, db)
