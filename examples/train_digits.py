"""Train the tutorial's network on real handwritten digits, as the tutorials write it.

The network is the one of the "network construction" tutorial (Flatten, then Dense
784-512-512-10 with ReLU); the data are scikit-learn's handwritten digits (1797 images
of 8x8 pixels, upscaled to the 28x28 the network expects), split 80/20 into training
and test sets. The loop is the tutorials' one: ``forward_fn`` returns the loss and
the logits, ``value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)``
gives the gradients, ``optimizer(grads)`` updates the Parameters. It prints each
epoch's loss, training and test accuracy and time, then where the generated gradient
code is and its first lines.

    pip install -e '.[demo]' && python examples/train_digits.py [--epochs N]
"""
import argparse
import time

import numpy as np
from scipy import ndimage

import s2sgrad as mindspore
from s2sgrad import nn, Tensor


class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.SequentialCell(
            nn.Dense(28*28, 512, weight_init="normal", bias_init="zeros"),
            nn.ReLU(),
            nn.Dense(512, 512, weight_init="normal", bias_init="zeros"),
            nn.ReLU(),
            nn.Dense(512, 10, weight_init="normal", bias_init="zeros")
        )

    def construct(self, x):
        x = self.flatten(x)
        logits = self.dense_relu_sequential(x)
        return logits


def load_data(seed=0):
    """The digits as float32 images (N, 28, 28), normalised, and int32 labels, split
    80/20 (stratified) into (train_images, train_labels, test_images, test_labels)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    images = ndimage.zoom(digits.images / 16.0, (1, 3.5, 3.5), order=1)   # 8x8 -> 28x28
    images = ((images - images.mean()) / images.std()).astype(np.float32)
    labels = digits.target.astype(np.int32)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=0.2, random_state=seed, stratify=labels)
    return x_train, y_train, x_test, y_test


def batches(images, labels, batch_size, rng=None):
    """(data, label) Tensor batches, shuffled when ``rng`` is given."""
    order = rng.permutation(len(images)) if rng is not None else np.arange(len(images))
    for start in range(0, len(images), batch_size):
        idx = order[start:start + batch_size]
        yield Tensor(images[idx]), Tensor(labels[idx])


def main(epochs=10, batch_size=64, learning_rate=1e-3, max_steps=None, seed=1):
    mindspore.set_seed(seed)
    rng = np.random.default_rng(seed)
    x_train, y_train, x_test, y_test = load_data()
    print(f"digits: {len(x_train)} training and {len(x_test)} test images, 28x28 "
          f"(upscaled from 8x8), 10 classes")

    model = Network()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = nn.Adam(model.trainable_params(), learning_rate=learning_rate)

    # Define forward function
    def forward_fn(data, label):
        logits = model(data)
        loss = loss_fn(logits, label)
        return loss, logits

    # Get gradient function
    grad_fn = mindspore.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)

    # Define function of one-step training
    def train_step(data, label):
        (loss, _), grads = grad_fn(data, label)
        optimizer(grads)
        return loss

    def accuracy(images, labels):
        correct = 0
        for data, label in batches(images, labels, 256):
            correct += int((model(data).argmax(1) == label).sum())
        return correct / len(images)

    print(f"training {type(model).__name__} (784-512-512-10, ReLU) with "
          f"{type(optimizer).__name__}(learning_rate={learning_rate}), batch size {batch_size}")
    start, steps = time.perf_counter(), 0
    for epoch in range(1, epochs + 1):
        t0 = time.perf_counter()
        losses = []
        for data, label in batches(x_train, y_train, batch_size, rng):
            losses.append(float(train_step(data, label)))
            steps += 1
            if max_steps is not None and steps >= max_steps:
                break
        train_acc, test_acc = accuracy(x_train, y_train), accuracy(x_test, y_test)
        print(f"epoch {epoch:2d}/{epochs}  loss {np.mean(losses):.4f}  "
              f"train accuracy {train_acc:6.2%}  test accuracy {test_acc:6.2%}  "
              f"time {time.perf_counter() - t0:.2f} s")
        if max_steps is not None and steps >= max_steps:
            break
    total = time.perf_counter() - start
    print(f"done: {steps} steps in {total:.1f} s, test accuracy {test_acc:.2%} "
          f"(gradient code run as: {grad_fn.backend})")

    lines = grad_fn.source.splitlines()
    print(f"\nThe generated gradient code ({len(lines)} lines) is in {grad_fn.path}")
    print("Its first lines:\n")
    print("\n".join(lines[:24]))
    print("    ...")
    print("\n(python -m s2sgrad cache list: every generated module; "
          "python -m s2sgrad show --help: print one)")
    return {"test_accuracy": test_acc, "train_accuracy": train_acc, "seconds": total,
            "steps": steps, "path": grad_fn.path}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10, help="epochs to train (10)")
    parser.add_argument("--batch-size", type=int, default=64, help="batch size (64)")
    parser.add_argument("--learning-rate", type=float, default=1e-3,
                        help="Adam's learning rate (1e-3)")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="stop after this many steps (a quick check)")
    args = parser.parse_args()
    main(args.epochs, args.batch_size, args.learning_rate, args.max_steps)
