# s2sgrad: value and gradient of forward_fn (functional_autodiff.py:58) w.r.t. weight w, weight b
# Generated code: edits are overwritten. Forward sweep, then adjoints in reverse.
import numpy as np

from s2sgrad import runtime as rt


def forward_fn_value_and_grad(x, y, w, b):
    # z = ops.matmul(x, self.w) + self.b  (functional_autodiff.py:50)
    t1 = x @ w
    z = t1 + b
    # loss = loss_fn(z, y)  (functional_autodiff.py:60)
    t2 = np.maximum(z, 0)
    t3 = np.absolute(z)
    t4 = -t3
    t5 = np.exp(t4)
    t6 = np.log1p(t5)
    softplus = t2 + t6
    t7 = y * z
    loss = softplus - t7
    out = np.mean(loss)

    # sensitivity of the output
    dout = rt.ones_like(out)
    # grad of: loss = loss_fn(z, y)  (functional_autodiff.py:60)
    dloss = rt.unreduce(dout, loss, None, False) / rt.reduction_count(loss, None)
    dt7 = -dloss
    dz = dt7 * y
    dt5 = dloss / (1 + t5)
    dt4 = dt5 * t5
    dt3 = -dt4
    dz = dz + dt3 * np.sign(z)
    dz += dloss * (z >= 0)
    # grad of: z = ops.matmul(x, self.w) + self.b  (functional_autodiff.py:50)
    db = dz
    dw = rt.matmul_right(dz, x, w)
    return out, (dw, db)
