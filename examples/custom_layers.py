"""Forward part of the tutorial "custom neural network layers", run on s2sgrad.

Defines the tutorial's three custom Cells unchanged (Threshold built from
ops functions, Dropout2d with a hand-written bprop, NetWithParam with a bprop
over an internal Parameter) and runs each forward:

    python examples/custom_layers.py
"""
import numpy as np

import s2sgrad as mindspore
from s2sgrad import nn, ops, Tensor, Parameter


class Threshold(nn.Cell):
    def __init__(self, threshold, value):
        super().__init__()
        self.threshold = threshold
        self.value = value

    def construct(self, inputs):
        cond = ops.gt(inputs, self.threshold)
        value = ops.fill(inputs.dtype, inputs.shape, self.value)
        return ops.select(cond, inputs, value)


class Dropout2d(nn.Cell):
    def __init__(self, keep_prob):
        super().__init__()
        self.keep_prob = keep_prob
        self.dropout2d = ops.Dropout2D(keep_prob)

    def construct(self, x):
        return self.dropout2d(x)

    def bprop(self, x, out, dout):
        _, mask = out
        dy, _ = dout
        if self.keep_prob != 0:
            dy = dy * (1 / self.keep_prob)
        dy = mask.astype(mindspore.float32) * dy
        return (dy.astype(x.dtype), )


class NetWithParam(nn.Cell):
    def __init__(self):
        super(NetWithParam, self).__init__()
        self.w = Parameter(Tensor(np.array([2.0], dtype=np.float32)), name='weight')
        self.internal_params = [self.w]

    def construct(self, x):
        output = self.w * x
        return output

    def bprop(self, *args):
        return (self.w * args[-1],), {self.w: args[0] * args[-1]}


def run_threshold():
    """Threshold(0.1, 20) on [0.1, 0.2, 0.3]: the first value is replaced by 20."""
    m = Threshold(0.1, 20)
    inputs = mindspore.Tensor([0.1, 0.2, 0.3], mindspore.float32)
    print(repr(m(inputs)))


def run_dropout2d():
    """Dropout2d(0.8) on ones of shape (2, 3, 4, 4): whole channels are kept
    (scaled by 1/0.8) or zeroed."""
    dropout_2d = Dropout2d(0.8)
    dropout_2d.bprop_debug = True
    x = ops.ones((2, 3, 4, 4), mindspore.float32)
    output, mask = dropout_2d(x)
    print(f"Dropout2d output shape: {output.shape}, mask dtype: {mask.dtype}")
    print(f"kept channels (N, C):\n{mask[:, :, 0, 0]}")
    print(f"output per channel (N, C):\n{output[:, :, 0, 0]}")


def run_net_with_param():
    """NetWithParam on x = [3.]: w * x = [6.]; its trainable Parameter is 'weight'."""
    net = NetWithParam()
    print(f"NetWithParam output: {net(Tensor(np.array([3.0], dtype=np.float32)))}")
    print(f"NetWithParam trainable params: {[p.name for p in net.trainable_params()]}")


def main():
    mindspore.set_seed(7)       # with this seed Dropout2d drops one of its six channels
    run_threshold()
    run_dropout2d()
    run_net_with_param()


if __name__ == "__main__":
    main()
