# s2sgrad: value and gradient of function_with_logits (functional_autodiff.py:31) w.r.t. w, b
# Generated code: edits are overwritten. Forward sweep, then adjoints in reverse.
import numpy as np

from s2sgrad import runtime as rt


def function_with_logits_value_and_grad(x, y, w, b):
    # z = ops.matmul(x, w) + b  (functional_autodiff.py:32)
    z = x @ w + b
    # loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:33)
    ones_like_z = np.ones_like(z)
    pos_weight = np.ones_like(z)
    t1 = np.exp(-np.absolute(z))
    softplus = np.maximum(z, 0) + np.log1p(t1)
    t4 = (pos_weight - np.float32(1.0)) * y
    t5 = np.float32(1.0) + t4
    t7 = pos_weight * y
    loss = t5 * softplus - t7 * z
    loss_1 = loss * ones_like_z
    out = np.mean(loss_1)

    # sensitivity of the output
    dout = rt.ones_like(out)
    # grad of: loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:33)
    dloss_1 = rt.unreduce(dout, loss_1, None, False) / rt.reduction_count(loss_1, None)
    dloss = dloss_1 * ones_like_z
    dz = -dloss * t7
    dsoftplus = dloss * t5
    dneg_absolute_z = dsoftplus / (1 + t1) * t1
    dz = dz - dneg_absolute_z * np.sign(z)
    dz += dsoftplus * (z >= 0)
    # grad of: z = ops.matmul(x, w) + b  (functional_autodiff.py:32)
    db = dz
    dw = rt.matmul_right(dz, x, w)
    return (out, z), (dw, db)
