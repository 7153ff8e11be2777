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
    dsoftplus = rt.unbroadcast(dloss, softplus)
    dt7 = rt.unbroadcast(-dloss, t7)
    dz = rt.unbroadcast(dt7 * y, z)
    dt2 = rt.unbroadcast(dsoftplus, t2)
    dt6 = rt.unbroadcast(dsoftplus, t6)
    dt5 = dt6 / (1 + t5)
    dt4 = dt5 * t5
    dt3 = -dt4
    dz = dz + dt3 * np.sign(z)
    dz += rt.unbroadcast(dt2 * (z >= 0), z)
    # grad of: z = ops.matmul(x, self.w) + self.b  (functional_autodiff.py:50)
    dt1 = rt.unbroadcast(dz, t1)
    db = rt.unbroadcast(dz, b)
    dw = rt.matmul_right(dt1, x, w)
    return out, (dw, db)
