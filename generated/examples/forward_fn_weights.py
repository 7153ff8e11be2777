# s2sgrad: value and gradient of forward_fn (functional_autodiff.py:58) w.r.t. weight w, weight b
# Generated code: edits are overwritten. Forward sweep, then adjoints in reverse.
import numpy as np

from s2sgrad import runtime as rt


def forward_fn_value_and_grad(x, y, w, b):
    # z = ops.matmul(x, self.w) + self.b  (functional_autodiff.py:50)
    z = x @ w + b
    # loss = loss_fn(z, y)  (functional_autodiff.py:60)
    t1 = np.exp(-np.absolute(z))
    softplus = np.maximum(z, 0) + np.log1p(t1)
    loss = softplus - y * z
    out = np.mean(loss)

    # sensitivity of the output
    dout = rt.ones_like(out)
    # grad of: loss = loss_fn(z, y)  (functional_autodiff.py:60)
    dloss = rt.unreduce(dout, loss, None, False) / rt.reduction_count(loss, None)
    dz = -dloss * y
    dneg_absolute_z = dloss / (1 + t1) * t1
    dz = dz - dneg_absolute_z * np.sign(z)
    dz += dloss * (z >= 0)
    # grad of: z = ops.matmul(x, self.w) + self.b  (functional_autodiff.py:50)
    db = dz
    dw = rt.matmul_right(dz, x, w)
    return out, (dw, db)
