"""The main demo (examples/train_digits.py), run for a few steps: it loads the digits,
trains the tutorial's network as the tutorials write the loop, prints labelled progress
and ends with where the generated gradient code is and its first lines."""
import os
import re

import numpy as np

from examples_loader import load_example


def test_demo_runs_a_few_steps_and_prints_labelled_progress(capsys):
    demo = load_example("train_digits")
    result = demo.main(epochs=2, max_steps=4)
    out = capsys.readouterr().out
    assert "digits: 1437 training and 360 test images, 28x28" in out
    epoch = re.search(r"epoch  1/2  loss (\S+)  train accuracy +(\S+)%  test accuracy +(\S+)%"
                      r"  time (\S+) s", out)
    assert epoch, out
    assert np.isfinite(float(epoch.group(1)))
    assert result["steps"] == 4
    # four Adam steps already beat chance (10%) by far
    assert result["test_accuracy"] > 0.3
    assert f"The generated gradient code" in out and result["path"] in out
    assert os.path.exists(result["path"])
    code = open(result["path"]).read()
    first = out.split("Its first lines:\n\n")[1].splitlines()[:20]
    assert first == code.splitlines()[:20]
    assert "def forward_fn_value_and_grad(data, label," in code


def test_images_are_upscaled_to_the_network_input():
    demo = load_example("train_digits")
    x_train, y_train, x_test, y_test = demo.load_data()
    assert x_train.shape == (1437, 28, 28) and x_test.shape == (360, 28, 28)
    assert x_train.dtype == np.float32 and y_train.dtype == np.int32
    assert set(np.unique(y_test)) == set(range(10))
