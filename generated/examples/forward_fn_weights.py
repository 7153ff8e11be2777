# s2sgrad: value and gradient of forward_fn (functional_autodiff.py:58) w.r.t. weight w, weight b
# Generated code: edits are overwritten. Forward sweep, then adjoints in reverse.
import numpy as np

from s2sgrad import runtime as rt


# the arrays the function below writes its 18 elementwise results into (the large ones), kept from
#    one call to the next
_forward_fn_buffers = rt.Buffers()


def forward_fn_value_and_grad(x, y, w, b):
    # kept.f(...): np.f (rt.f) written into the array this operation made last call, when the
    #    arguments are alike (rt.Buffers: no fresh pages to fault)
    kept = _forward_fn_buffers.take()
    # z = ops.matmul(x, self.w) + self.b  (functional_autodiff.py:50)
    z = kept.add(kept.matmul(x, w), b)
    # loss = loss_fn(z, y)  (functional_autodiff.py:60)
    t1 = kept.exp(kept.negative(kept.absolute(z)))
    softplus = kept.add(kept.maximum(z, 0), kept.log1p(t1))
    loss = kept.subtract(softplus, kept.multiply(y, z))
    out = np.mean(loss)

    # sensitivity of the output
    dout = rt.ones_like(out)
    # grad of: loss = loss_fn(z, y)  (functional_autodiff.py:60)
    dloss = kept.true_divide(rt.unreduce(dout, loss, None, False), rt.reduction_count(loss, None))
    dz = kept.negative(dloss) * y
    dneg_absolute_z = kept.multiply(kept.true_divide(dloss, kept.add(1, t1)), t1)
    dz = dz - kept.multiply(dneg_absolute_z, kept.sign(z))
    dz += kept.multiply(dloss, z >= 0)
    # grad of: z = ops.matmul(x, self.w) + self.b  (functional_autodiff.py:50)
    db = dz
    dw = rt.matmul_right(dz, x, w)
    return _forward_fn_buffers.give(kept, (out, (dw, db)))
