"""lstm (GradBench evals/lstm, ADBench's LSTM): the gradient of a two-layer LSTM's mean
log-likelihood over a character sequence w.r.t. the main and extra parameters,
l = 2 layers, c = 1024 characters, b = 14 symbols.

The loop the way a user writes it from ADBench's objective (tools/pytorch/
lstm_objective.py, quirk included: the normaliser is ``log(sum(exp(ypred)) + 2)``):
a loop over the characters, an inner loop over the layers, each layer's hidden and
cell rows updated in place.  JAX and autograd cannot write rows in place, so they run
the same arithmetic in a functional spelling (``lstm_layers``: new rows in a list),
JAX with ``lax.scan`` over the characters."""
import numpy as np

from common import jax_modules, rebind, s2sgrad_gradient

SIZE = "l=2, c=1024, b=14"


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_objective(main_params, extra_params, state, sequence):
    layers = state.shape[0] // 2
    b = sequence.shape[1]
    hidden = state[0::2].copy()
    cell = state[1::2].copy()
    total = 0.0
    x_in = sequence[0]
    for t in range(sequence.shape[0] - 1):
        x = x_in * extra_params[0]
        for j in range(layers):
            gates = np.concatenate((x, hidden[j], x, hidden[j])) * main_params[2 * j] \
                + main_params[2 * j + 1]
            forget = sigmoid(gates[0:b])
            ingate = sigmoid(gates[b:2 * b])
            outgate = sigmoid(gates[2 * b:3 * b])
            change = np.tanh(gates[3 * b:])
            cell[j] = cell[j] * forget + ingate * change
            hidden[j] = outgate * np.tanh(cell[j])
            x = hidden[j]
        ypred = x * extra_params[1] + extra_params[2]
        ynorm = ypred - np.log(np.sum(np.exp(ypred)) + 2.0)
        total = total + np.sum(sequence[t + 1] * ynorm)
        x_in = sequence[t + 1]
    return -total / ((sequence.shape[0] - 1) * b)


def lstm_layers(main_params, extra_params, hidden, cell, x_in, ygold):
    """One character, functionally: the new hidden and cell rows (lists) and the
    character's log-likelihood term."""
    b = x_in.shape[0]
    x = x_in * extra_params[0]
    new_hidden = []
    new_cell = []
    for j in range(len(hidden)):
        gates = np.concatenate((x, hidden[j], x, hidden[j])) * main_params[2 * j] \
            + main_params[2 * j + 1]
        forget = 1.0 / (1.0 + np.exp(-gates[0:b]))
        ingate = 1.0 / (1.0 + np.exp(-gates[b:2 * b]))
        outgate = 1.0 / (1.0 + np.exp(-gates[2 * b:3 * b]))
        change = np.tanh(gates[3 * b:])
        new_cell.append(cell[j] * forget + ingate * change)
        new_hidden.append(outgate * np.tanh(new_cell[j]))
        x = new_hidden[j]
    ypred = x * extra_params[1] + extra_params[2]
    ynorm = ypred - np.log(np.sum(np.exp(ypred)) + 2.0)
    return new_hidden, new_cell, np.sum(ygold * ynorm)


def inputs(l=2, c=1024, b=14):
    rng = np.random.default_rng(31337)
    main = rng.uniform(-1.0, 1.0, (2 * l, 4 * b))
    extra = rng.uniform(-1.0, 1.0, (3, b))
    state = rng.uniform(-1.0, 1.0, (2 * l, b))
    sequence = rng.uniform(-1.0, 1.0, (c, b))
    return (main, extra, state, sequence)


def _jax():
    jax, jnp = jax_modules()
    layers_fn = rebind(lstm_layers, jnp)

    def objective(main, extra, state, sequence):
        def step(carry, pair):
            hidden, cell = carry
            x_in, ygold = pair
            hidden, cell, term = layers_fn(main, extra, list(hidden), list(cell), x_in, ygold)
            return (hidden, cell), term
        start = (list(state[0::2]), list(state[1::2]))
        _, terms = jax.lax.scan(step, start, (sequence[:-1], sequence[1:]))
        return -jnp.sum(terms) / ((sequence.shape[0] - 1) * sequence.shape[1])
    compiled = jax.jit(jax.grad(objective, (0, 1)))
    return lambda *args: jax.block_until_ready(compiled(*args))


def _autograd():
    import autograd
    import autograd.numpy as anp
    layers_fn = rebind(lstm_layers, anp)

    def objective(main, extra, state, sequence):
        hidden, cell = list(state[0::2]), list(state[1::2])
        total = 0.0
        for t in range(sequence.shape[0] - 1):
            hidden, cell, term = layers_fn(main, extra, hidden, cell, sequence[t],
                                           sequence[t + 1])
            total = total + term
        return -total / ((sequence.shape[0] - 1) * sequence.shape[1])
    return autograd.grad(objective, (0, 1))


forward = lstm_objective
tools = {"s2sgrad": lambda: s2sgrad_gradient(lstm_objective, (0, 1)), "jax": _jax,
         "autograd": _autograd}
