"""Every derivative object pickles by its function, options and generated code (issue 21).

A round trip through pickle in a fresh Python process gives the same results without
running the compiler there (``build_code``, every mode's way into it, is counted in the
child), for one object of each kind of ``s2sgrad.api`` (``pickled_programs.derivatives``);
an object pickled before its first call builds on its first call there, as it would
have here; the child writes the code to its own cache folder and loads it from there.
"""
import json
import os
import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest

import pickled_programs
from s2sgrad.api.reverse import GradFunction

ROOT = pathlib.Path(__file__).resolve().parent.parent

CHILD = r"""
import json, pickle, sys
import numpy as np
from s2sgrad.api.derivative import Derivative
import pickled_programs

builds = []

def counted(build_code):
    def build(self, *args, **kwargs):
        builds.append(self.name)
        return build_code(self, *args, **kwargs)
    return build

todo = [Derivative]
while todo:
    cls = todo.pop()
    todo.extend(cls.__subclasses__())
    if "build_code" in cls.__dict__:
        cls.build_code = counted(cls.__dict__["build_code"])

with open(sys.argv[1], "rb") as f:
    objects, expected = pickle.load(f)
report = {}
for name, (obj, how, args) in objects.items():
    del builds[:]
    got = pickled_programs.run(obj, how, args)
    flat = lambda v: [np.ravel(a) for a in v] if isinstance(v, list) else [np.ravel(v)]
    same = all(np.array_equal(a, b) for a, b in
               zip(np.hstack(flat(pickled_programs._plain(got))).tolist(),
                   np.hstack(flat(expected[name])).tolist()))
    target = getattr(obj, "forward", obj)
    report[name] = {"builds": len(builds), "same": same,
                    "backend": getattr(target, "backend", None),
                    "path": getattr(target, "path", None)}
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def objects():
    """The derivative objects, called once here (so each holds its built code)."""
    made = pickled_programs.derivatives()
    expected = {name: pickled_programs.run(obj, how, args)
                for name, (obj, how, args) in made.items()}
    return made, expected


def _in_fresh_process(tmp_path, payload, cache):
    """Run CHILD on ``payload`` (pickled) in a new Python with S2SGRAD_CACHE_DIR=``cache``."""
    path = tmp_path / "objects.pkl"
    path.write_bytes(pickle.dumps(payload))
    env = dict(os.environ, S2SGRAD_CACHE_DIR=str(cache), S2SGRAD_QUIET="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_pickled_derivative_runs_in_a_fresh_process_without_the_compiler(objects,
                                                                           tmp_path):
    made, expected = objects
    # the test session's cache: Numba's machine code for these is there already
    report = _in_fresh_process(tmp_path, (made, expected), os.environ["S2SGRAD_CACHE_DIR"])
    assert set(report) == set(made)
    for name, seen in report.items():
        assert seen["builds"] == 0, (name, seen)
        assert seen["same"], (name, seen)
    assert report["grad"]["backend"] == "numba", report["grad"]


def test_a_worker_writes_the_code_to_its_own_cache_folder(objects, tmp_path):
    made, expected = objects
    cache = tmp_path / "worker_cache"
    report = _in_fresh_process(tmp_path, ({"grad": made["grad"]},
                                          {"grad": expected["grad"]}), cache)
    assert report["grad"]["builds"] == 0 and report["grad"]["same"], report
    assert report["grad"]["backend"] == "numba", report
    assert pathlib.Path(report["grad"]["path"]).parent == cache
    assert pathlib.Path(report["grad"]["path"]).is_file()


def test_an_object_pickled_before_its_first_call_builds_there(objects, tmp_path):
    made, expected = objects
    fresh = pickled_programs.derivatives()      # new objects, never called
    # grad(f) is kept per function and options (so a loop builds once): made directly
    fresh["grad"] = (GradFunction(pickled_programs.heat, 0, None, False, False, False),
                     *fresh["grad"][1:])
    fresh["value_and_grad"] = (GradFunction(pickled_programs.smooth, (0, 1), None, False,
                                            False, True), *fresh["value_and_grad"][1:])
    picked = {k: fresh[k] for k in ("grad", "value_and_grad", "hessian")}
    report = _in_fresh_process(tmp_path, (picked, {k: expected[k] for k in picked}),
                               os.environ["S2SGRAD_CACHE_DIR"])
    for name, seen in report.items():
        assert seen["builds"] >= 1 and seen["same"], (name, seen)


def test_a_round_trip_keeps_options_weights_and_later_signatures(objects):
    made, expected = objects
    g, _, (xs, ys) = made["cell weights"]
    again = pickle.loads(pickle.dumps(g))
    # the weights are the unpickled Cell's own Parameters, not copies beside it
    assert all(w is p for w, p in zip(again.weights, again.fn.trainable_params()))
    assert again.positions == g.positions and again.has_aux == g.has_aux
    assert repr(again) == repr(g)
    # a signature not built before pickling is built after it, as it would be here
    u0 = np.linspace(0.0, 1.0, 9, dtype=np.float32)
    heat = pickle.loads(pickle.dumps(made["grad"][0]))
    assert np.allclose(heat(np.float32(0.7), u0, u0 * 0), made["grad"][0](
        np.float32(0.7), u0, u0 * 0))
    # a pickled object pickles again, the same
    twice = pickle.loads(pickle.dumps(again))
    got = pickled_programs.run(twice, "call", (xs, ys))
    for a, b in zip(got, expected["cell weights"]):
        assert np.array_equal(a, b)


def test_a_gradient_defined_on_a_class_unpickles_as_the_method_s(objects):
    made, _ = objects
    bound, _, (x,) = made["bound method"]
    again = pickle.loads(pickle.dumps(bound))
    # the method, not the gradient the class holds under the same name
    assert again.fn.__func__ is pickled_programs.Model.loss.fn
    # so a signature first seen after the round trip is the method's gradient
    x32 = x.astype(np.float32)
    assert np.array_equal(again(x32), bound(x32))
    assert np.array_equal(again(x), bound(x))
