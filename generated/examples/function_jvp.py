# s2sgrad: Jacobian-vector product of function (functional_autodiff.py:25) w.r.t. x, y, w, b
# Generated code: edits are overwritten. Each value, then its tangent
# (x_dot: the derivative of x along the input tangents).
import numpy as np

from s2sgrad import runtime as rt


# the arrays the function below writes its 38 elementwise results into (the large ones), kept from
#    one call to the next
_function_buffers = rt.Buffers()


def function_jvp(x, y, w, b, x_dot, y_dot, w_dot, b_dot):
    # kept.f(...): np.f (rt.f) written into the array this operation made last call, when the
    #    arguments are alike (rt.Buffers: no fresh pages to fault)
    kept = _function_buffers.take()
    # z = ops.matmul(x, w) + b  (functional_autodiff.py:26)
    x_at_w = kept.matmul(x, w)
    x_at_w_dot = kept.add(kept.matmul(x_dot, w), kept.matmul(x, w_dot))
    z = kept.add(x_at_w, b)
    z_dot = kept.add(x_at_w_dot, b_dot)
    # loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:27)
    ones_like_z = np.ones_like(z)
    pos_weight = np.ones_like(z)
    maximum_z0 = kept.maximum(z, 0)
    maximum_z0_dot = kept.multiply(z_dot, z >= 0)
    absolute_z = kept.absolute(z)
    absolute_z_dot = kept.multiply(z_dot, kept.sign(z))
    neg_absolute_z = kept.negative(absolute_z)
    neg_absolute_z_dot = kept.negative(absolute_z_dot)
    t1 = kept.exp(neg_absolute_z)
    t1_dot = kept.multiply(neg_absolute_z_dot, t1)
    t2 = kept.log1p(t1)
    t2_dot = kept.true_divide(t1_dot, kept.add(1, t1))
    softplus = kept.add(maximum_z0, t2)
    softplus_dot = kept.add(maximum_z0_dot, t2_dot)
    t3 = kept.subtract(pos_weight, np.float32(1.0))
    t4 = kept.multiply(t3, y)
    t4_dot = kept.multiply(t3, y_dot)
    t5 = kept.add(np.float32(1.0), t4)
    t5_dot = t4_dot
    t6 = kept.multiply(t5, softplus)
    t6_dot = kept.add(kept.multiply(t5_dot, softplus), kept.multiply(t5, softplus_dot))
    t7 = kept.multiply(pos_weight, y)
    t7_dot = kept.multiply(pos_weight, y_dot)
    t8 = kept.multiply(t7, z)
    t8_dot = kept.add(kept.multiply(t7_dot, z), kept.multiply(t7, z_dot))
    loss = kept.subtract(t6, t8)
    loss_dot = kept.subtract(t6_dot, t8_dot)
    loss_1 = kept.multiply(loss, ones_like_z)
    loss_1_dot = kept.multiply(loss_dot, ones_like_z)
    out = np.mean(loss_1)
    out_dot = np.mean(loss_1_dot)
    return _function_buffers.give(kept, (out, out_dot))
