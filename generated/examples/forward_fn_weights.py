# s2sgrad: value and gradient of forward_fn (functional_autodiff.py:58) w.r.t. weight w, weight b
# Generated code: edits are overwritten. Forward sweep, then adjoints in reverse.
import numpy as np

from s2sgrad import runtime as rt


def forward_fn_value_and_grad(x, y, w, b):
    # z = ops.matmul(x, self.w) + self.b  (functional_autodiff.py:50)
    x_at_w = x @ w
    z = x_at_w + b
    # loss = loss_fn(z, y)  (functional_autodiff.py:60)
    maximum_z_0 = np.maximum(z, 0)
    absolute_z = np.absolute(z)
    neg_absolute_z = -absolute_z
    t1 = np.exp(neg_absolute_z)
    t2 = np.log1p(t1)
    softplus = maximum_z_0 + t2
    y_times_z = y * z
    loss = softplus - y_times_z
    out = np.mean(loss)

    # sensitivity of the output
    dout = rt.ones_like(out)
    # grad of: loss = loss_fn(z, y)  (functional_autodiff.py:60)
    dloss = rt.unreduce(dout, loss, None, False) / rt.reduction_count(loss, None)
    dsoftplus = rt.unbroadcast(dloss, softplus)
    dy_times_z = rt.unbroadcast(-dloss, y_times_z)
    dz = rt.unbroadcast(dy_times_z * y, z)
    dmaximum_z_0 = rt.unbroadcast(dsoftplus, maximum_z_0)
    dt2 = rt.unbroadcast(dsoftplus, t2)
    dt1 = dt2 / (1 + t1)
    dneg_absolute_z = dt1 * t1
    dabsolute_z = -dneg_absolute_z
    dz = dz + dabsolute_z * np.sign(z)
    dz += rt.unbroadcast(dmaximum_z_0 * (z >= 0), z)
    # grad of: z = ops.matmul(x, self.w) + self.b  (functional_autodiff.py:50)
    dx_at_w = rt.unbroadcast(dz, x_at_w)
    db = rt.unbroadcast(dz, b)
    dw = rt.matmul_right(dx_at_w, x, w)
    return out, (dw, db)
