# s2sgrad: value and gradient of function_with_logits (functional_autodiff.py:31) w.r.t. w, b
# Generated code: edits are overwritten. Forward sweep, then adjoints in reverse.
import numpy as np

from s2sgrad import runtime as rt


# the arrays the function below writes its 25 elementwise results into (the large ones), kept from
#    one call to the next
_function_with_logits_buffers = rt.Buffers()


def function_with_logits_value_and_grad(x, y, w, b):
    # kept.f(...): np.f (rt.f) written into the array this operation made last call, when the
    #    arguments are alike (rt.Buffers: no fresh pages to fault)
    kept = _function_with_logits_buffers.take()
    # z = ops.matmul(x, w) + b  (functional_autodiff.py:32)
    z = kept.matmul(x, w) + b
    # loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:33)
    ones_like_z = np.ones_like(z)
    pos_weight = np.ones_like(z)
    t1 = kept.exp(kept.negative(kept.absolute(z)))
    softplus = kept.add(kept.maximum(z, 0), kept.log1p(t1))
    t4 = kept.multiply(kept.subtract(pos_weight, np.float32(1.0)), y)
    t5 = kept.add(np.float32(1.0), t4)
    t7 = kept.multiply(pos_weight, y)
    loss = kept.subtract(kept.multiply(t5, softplus), kept.multiply(t7, z))
    loss_1 = kept.multiply(loss, ones_like_z)
    out = np.mean(loss_1)

    # sensitivity of the output
    dz = rt.ones_like(z)
    # grad of: loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:33)
    dloss_1 = kept.true_divide(rt.unreduce(rt.ones_like(out), loss_1, None, False),
                               rt.reduction_count(loss_1, None))
    dloss = kept.multiply(dloss_1, ones_like_z)
    dz = dz - kept.multiply(dloss, t7)
    dsoftplus = kept.multiply(dloss, t5)
    dneg_absolute_z = kept.multiply(kept.true_divide(dsoftplus, kept.add(1, t1)), t1)
    dz -= kept.multiply(dneg_absolute_z, kept.sign(z))
    dz += kept.multiply(dsoftplus, z >= 0)
    # grad of: z = ops.matmul(x, w) + b  (functional_autodiff.py:32)
    db = dz
    dw = rt.matmul_right(dz, x, w)
    return _function_with_logits_buffers.give(kept, ((out, z), (dw, db)))
