"""README.md's forward-mode example: its generated code is committed under
generated/examples/ (tests/test_generated_examples.py) and README shows an excerpt."""
import numpy as np


def f(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s = s * a + np.sin(x[i])
        else:
            s = s - x[i] * x[i]
    return s
