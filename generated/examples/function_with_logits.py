# s2sgrad: value and gradient of function_with_logits (functional_autodiff.py:31) w.r.t. w, b
# Generated code: edits are overwritten. Forward sweep, then adjoints in reverse.
import numpy as np

from s2sgrad import runtime as rt


def function_with_logits_value_and_grad(x, y, w, b):
    # z = ops.matmul(x, w) + b  (functional_autodiff.py:32)
    x_at_w = x @ w
    z = x_at_w + b
    # loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:33)
    ones_like_z = np.ones_like(z)
    ones_like_z_1 = np.ones_like(z)
    maximum_z_0 = np.maximum(z, 0)
    absolute_z = np.absolute(z)
    neg_absolute_z = -absolute_z
    t1 = np.exp(neg_absolute_z)
    t2 = np.log1p(t1)
    softplus = maximum_z_0 + t2
    t3 = ones_like_z_1 - np.float32(1.0)
    t4 = t3 * y
    t5 = np.float32(1.0) + t4
    t6 = t5 * softplus
    t7 = ones_like_z_1 * y
    t8 = t7 * z
    loss = t6 - t8
    loss_1 = loss * ones_like_z
    out = np.mean(loss_1)

    # sensitivity of the output
    dout = rt.ones_like(out)
    dz = rt.ones_like(z)
    # grad of: loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:33)
    dloss_1 = rt.unreduce(dout, loss_1, None, False) / rt.reduction_count(loss_1, None)
    dloss = dloss_1 * ones_like_z
    dt8 = -dloss
    dz = dz + dt8 * t7
    dsoftplus = dloss * t5
    dt1 = dsoftplus / (1 + t1)
    dneg_absolute_z = dt1 * t1
    dabsolute_z = -dneg_absolute_z
    dz += dabsolute_z * np.sign(z)
    dz += dsoftplus * (z >= 0)
    # grad of: z = ops.matmul(x, w) + b  (functional_autodiff.py:32)
    db = dz
    dw = rt.matmul_right(dz, x, w)
    return (out, z), (dw, db)
