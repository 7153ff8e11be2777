# s2sgrad: forward-mode Jacobian of function (functional_autodiff.py:25) w.r.t. w, b
# Generated code: edits are overwritten. Each value, then its tangent
# x_dot along a batch of basis directions of the inputs (row k of
# x_dot: along direction start + k), in as few sweeps as memory allows.
import numpy as np

from s2sgrad import runtime as rt


def function_jacfwd(x, y, w, b):
    n_w = rt.tangent_size(w)
    n_b = rt.tangent_size(b)
    step = rt.sweep_width(n_w + n_b, w, b, x, y)
    blocks = []
    # directions start .. start + width - 1 of w, b in each sweep
    for start in range(0, n_w + n_b, step):
        width = min(step, n_w + n_b - start)
        w_dot = rt.basis_batch(w, start, width)
        b_dot = rt.basis_batch(b, start - n_w, width)
        # z = ops.matmul(x, w) + b  (functional_autodiff.py:26)
        x_at_w = x @ w
        x_at_w_dot = x @ w_dot
        z = x_at_w + b
        z_dot = x_at_w_dot + b_dot
        # loss = ops.binary_cross_entropy_with_logits(z, y, ...  (functional_autodiff.py:27)
        ones_like_z = np.ones_like(z)
        pos_weight = np.ones_like(z)
        maximum_z0 = np.maximum(z, 0)
        maximum_z0_dot = z_dot * (z >= 0)
        absolute_z = np.absolute(z)
        absolute_z_dot = z_dot * np.sign(z)
        neg_absolute_z = -absolute_z
        neg_absolute_z_dot = -absolute_z_dot
        t1 = np.exp(neg_absolute_z)
        t1_dot = neg_absolute_z_dot * t1
        t2 = np.log1p(t1)
        t2_dot = t1_dot / (1 + t1)
        softplus = maximum_z0 + t2
        softplus_dot = maximum_z0_dot + t2_dot
        t3 = pos_weight - np.float32(1.0)
        t4 = t3 * y
        t5 = np.float32(1.0) + t4
        t6 = t5 * softplus
        t6_dot = t5 * softplus_dot
        t7 = pos_weight * y
        t8 = t7 * z
        t8_dot = t7 * z_dot
        loss = t6 - t8
        loss_dot = t6_dot - t8_dot
        loss_1 = loss * ones_like_z
        loss_1_dot = loss_dot * ones_like_z
        out = np.mean(loss_1)
        out_dot = np.mean(loss_1_dot, axis=1)
        blocks.append(out_dot)
    return out, blocks
