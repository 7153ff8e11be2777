"""nn.SGD, nn.Momentum and nn.Adam against the reference's documented update rules,
written out here step by step in float64, over several steps with changing gradients;
weight decay (and its beta/gamma filter), loss_scale, groups, per-step rates, argument
checks, and a training loop written as the tutorials write it."""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import Parameter, Tensor, nn, ops

STEPS = 6


def _setup(seed=0):
    rng = np.random.default_rng(seed)
    params = [Parameter(Tensor(rng.normal(size=(3, 4))), name="w"),
              Parameter(Tensor(rng.normal(size=(4,))), name="b")]
    grads = [[rng.normal(size=p.shape) for p in params] for _ in range(STEPS)]
    return params, grads


def _run(optimizer, params, grads):
    for step in grads:
        optimizer(tuple(Tensor(g) for g in step))
    return [np.asarray(p).copy() for p in params]


def _decayed(g, p, weight_decay, loss_scale=1.0):
    return (g + weight_decay * p) / loss_scale


def sgd_reference(p0, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                  nesterov=False, loss_scale=1.0):
    """v = u v + (1 - dampening) g (v = g at the first step); p -= lr v, or
    p -= lr (g + u v) with nesterov."""
    out = []
    for k, p in enumerate(p0):
        p, v = p.copy(), None
        for t, step in enumerate(grads):
            g = _decayed(step[k], p, weight_decay, loss_scale)
            v = g.copy() if t == 0 else momentum * v + (1 - dampening) * g
            p = p - lr * (g + momentum * v) if nesterov else p - lr * v
        out.append(p)
    return out


def momentum_reference(p0, grads, lr, momentum, weight_decay=0.0, use_nesterov=False,
                       loss_scale=1.0):
    """v = u v + g (v0 = 0); p -= lr v, or p -= lr g + lr u v with nesterov."""
    out = []
    for k, p in enumerate(p0):
        p, v = p.copy(), np.zeros_like(p)
        for step in grads:
            g = _decayed(step[k], p, weight_decay, loss_scale)
            v = momentum * v + g
            p = p - (lr * g + lr * momentum * v) if use_nesterov else p - lr * v
        out.append(p)
    return out


def adam_reference(p0, grads, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0,
                   use_nesterov=False, use_amsgrad=False):
    """m, v moving averages; l = lr sqrt(1 - b2^t) / (1 - b1^t); p -= l m / (sqrt(v) + eps)."""
    out = []
    for k, p in enumerate(p0):
        p, m, v, vhat = p.copy(), np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
        for t, step in enumerate(grads, start=1):
            g = _decayed(step[k], p, weight_decay)
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            vhat = np.maximum(vhat, v)
            l_t = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
            top = beta1 * m + (1 - beta1) * g if use_nesterov else m
            p = p - l_t * top / (np.sqrt(vhat if use_amsgrad else v) + eps)
        out.append(p)
    return out


SGD_CASES = [dict(), dict(momentum=0.9), dict(momentum=0.8, dampening=0.3),
             dict(momentum=0.9, nesterov=True), dict(momentum=0.5, weight_decay=0.01),
             dict(momentum=0.9, loss_scale=128.0, weight_decay=0.1)]


@pytest.mark.parametrize("kwargs", SGD_CASES)
def test_sgd_follows_the_reference_formula(kwargs):
    params, grads = _setup()
    expected = sgd_reference([np.asarray(p).copy() for p in params], grads, 0.05, **kwargs)
    got = _run(nn.SGD(params, 0.05, **kwargs), params, grads)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)


MOMENTUM_CASES = [dict(), dict(use_nesterov=True), dict(weight_decay=0.02),
                  dict(loss_scale=4.0, use_nesterov=True)]


@pytest.mark.parametrize("kwargs", MOMENTUM_CASES)
def test_momentum_follows_the_reference_formula(kwargs):
    params, grads = _setup(1)
    expected = momentum_reference([np.asarray(p).copy() for p in params], grads, 0.1, 0.9,
                                  **kwargs)
    got = _run(nn.Momentum(params, 0.1, 0.9, **kwargs), params, grads)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)


ADAM_CASES = [dict(), dict(beta1=0.8, beta2=0.99, eps=1e-6), dict(weight_decay=0.1),
              dict(use_nesterov=True), dict(use_amsgrad=True)]


@pytest.mark.parametrize("kwargs", ADAM_CASES)
def test_adam_follows_the_reference_formula(kwargs):
    params, grads = _setup(2)
    expected = adam_reference([np.asarray(p).copy() for p in params], grads, 0.01, **kwargs)
    got = _run(nn.Adam(params, learning_rate=0.01, **kwargs), params, grads)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_updates_are_in_place_and_keep_dtype_and_objects():
    w = Parameter(Tensor(np.ones((2, 2), np.float32)), name="w")
    before = np.asarray(w)
    opt = nn.Adam([w], learning_rate=0.1)
    opt((Tensor(np.full((2, 2), 0.5, np.float32)),))
    assert np.asarray(w) is before and w.dtype == ms.float32
    np.testing.assert_allclose(np.asarray(w), 0.9, rtol=1e-6)   # Adam's first step: lr
    assert int(np.asarray(opt.global_step)[0]) == 1
    assert opt.parameters[0] is w and isinstance(opt.parameters, ms.ParameterTuple)


def test_weight_decay_skips_beta_and_gamma_unless_grouped():
    gamma = Parameter(Tensor(np.ones(3)), name="norm.gamma")
    w = Parameter(Tensor(np.ones(3)), name="dense.weight")
    zero = (Tensor(np.zeros(3)), Tensor(np.zeros(3)))
    nn.SGD([gamma, w], 0.1, weight_decay=0.5)(zero)
    np.testing.assert_allclose(np.asarray(gamma), 1.0)
    np.testing.assert_allclose(np.asarray(w), 1 - 0.1 * 0.5)
    nn.SGD([{"params": [gamma], "weight_decay": 0.5}, {"params": [w], "lr": 1.0}], 0.1)(zero)
    np.testing.assert_allclose(np.asarray(gamma), 1 - 0.1 * 0.5)
    np.testing.assert_allclose(np.asarray(w), 1 - 0.1 * 0.5)


def test_groups_give_rates_and_order_params_sets_the_order():
    a = Parameter(Tensor(np.zeros(2)), name="a")
    b = Parameter(Tensor(np.zeros(2)), name="b")
    opt = nn.SGD([{"params": [a], "lr": 0.5}, {"params": [b]}, {"order_params": [b, a]}], 0.1)
    assert [p.name for p in opt.parameters] == ["b", "a"]
    opt((Tensor(np.ones(2)), Tensor(np.ones(2))))       # gradients in parameters' order
    np.testing.assert_allclose(np.asarray(a), -0.5)
    np.testing.assert_allclose(np.asarray(b), -0.1)
    np.testing.assert_allclose([float(r) for r in opt.get_lr()], [0.1, 0.5])


def test_a_list_of_rates_gives_one_per_step_then_keeps_the_last():
    w = Parameter(Tensor(np.zeros(1)), name="w")
    opt = nn.SGD([w], [0.1, 0.2, 0.3])
    for _ in range(5):
        opt((Tensor(np.ones(1)),))
    np.testing.assert_allclose(np.asarray(w), -(0.1 + 0.2 + 0.3 * 3))


@pytest.mark.parametrize("make, error, message", [
    (lambda p: nn.SGD(p, 0.1, momentum=-1.0), ValueError, "momentum must be at least 0.0"),
    (lambda p: nn.SGD(p, 0.1, nesterov=True), ValueError, "'momentum' must be > 0.0"),
    (lambda p: nn.SGD(p, 0.1, momentum=0.9, dampening=0.1, nesterov=True), ValueError,
     "'dampening' must equal to 0.0"),
    (lambda p: nn.Momentum(p, 0.1, "0.9"), TypeError, "momentum must be a float"),
    (lambda p: nn.Adam(p, beta1=1.0), ValueError, r"beta1 must be in range \(0.0, 1.0\)"),
    (lambda p: nn.Adam(p, eps=0.0), ValueError, "eps must be greater than 0"),
    (lambda p: nn.Adam(p, learning_rate=-0.1), ValueError, "learning_rate must be at least 0"),
    (lambda p: nn.SGD(p[0], 0.1), TypeError, "params must be a list of Parameters"),
    (lambda p: nn.SGD([np.ones(3)], 0.1), TypeError, "must be a Parameter"),
    (lambda p: nn.SGD(p, 0.1, weight_decay=-0.1), ValueError, "weight_decay must be at least"),
])
def test_arguments_are_checked_as_the_reference_does(make, error, message):
    params, _ = _setup()
    with pytest.raises(error, match=message):
        make(params)


def test_gradients_must_match_the_parameters():
    params, _ = _setup()
    opt = nn.SGD(params, 0.1)
    with pytest.raises(ValueError, match="got 1 gradients for 2 parameters"):
        opt((Tensor(np.ones((3, 4))),))
    with pytest.raises(ValueError, match="the gradient of 'b' has shape"):
        opt((Tensor(np.ones((3, 4))), Tensor(np.ones(3))))


class TinyNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(4, 3, weight_init="normal")

    def construct(self, x):
        return self.dense(x)


@pytest.mark.parametrize("make", [lambda p: nn.SGD(p, 0.5, momentum=0.9),
                                  lambda p: nn.Momentum(p, 0.5, 0.9),
                                  lambda p: nn.Adam(p, 0.05)])
def test_training_loop_as_the_tutorials_write_it(make, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    ms.set_seed(0)
    rng = np.random.default_rng(0)
    data = Tensor(rng.normal(size=(32, 4)), ms.float32)
    label = Tensor(np.argmax(np.asarray(data)[:, :3], axis=1), ms.int32)
    model = TinyNet()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = make(model.trainable_params())

    def forward_fn(data, label):
        logits = model(data)
        loss = loss_fn(logits, label)
        return loss, logits

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)
    losses = []
    for _ in range(30):
        (loss, _), grads = grad_fn(data, label)
        optimizer(grads)
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]
    assert model.dense.weight.dtype == ms.float32
    pred = np.argmax(np.asarray(model(data)), axis=1)
    assert (pred == np.asarray(label)).mean() > 0.9
