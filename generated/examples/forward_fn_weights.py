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
    dy_times_z = -dloss
    dz = dy_times_z * y
    dt1 = dloss / (1 + t1)
    dneg_absolute_z = dt1 * t1
    dabsolute_z = -dneg_absolute_z
    dz = dz + dabsolute_z * np.sign(z)
    dz += dloss * (z >= 0)
    # grad of: z = ops.matmul(x, self.w) + self.b  (functional_autodiff.py:50)
    db = dz
    dw = rt.matmul_right(dz, x, w)
    return out, (dw, db)
