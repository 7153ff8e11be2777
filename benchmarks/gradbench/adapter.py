"""s2sgrad as a GradBench tool: the protocol adapter (JSON lines on stdin and stdout).

    PYTHONPATH=$PWD python benchmarks/gradbench/adapter.py

GradBench's driver (``gradbench run --eval ... --tool ...``, or an eval's run.py piped
into this process) sends ``start``, ``define`` (a module: an eval's name) and
``evaluate`` messages (a function of that module and its input); each gets one JSON
line back with the message's ``id``.  ``evaluate`` runs the function on the input
``min_runs`` times and for at least ``min_seconds``, with one ``evaluate`` timing per
run, as GradBench's Python tools do (gradbench/wrap.py).  The functions are the eval
modules' own (lse.py, gmm.py, ...): the eval's primal is the module's numpy function,
its derivative is s2sgrad's.  Evals whose output is GradBench's sparse encoding (ba)
or that s2sgrad refuses (particle, saddle: see their modules) answer ``define`` with
``success: false`` and the reason.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import numpy as np  # noqa: E402

import gmm  # noqa: E402
import kmeans  # noqa: E402
import llsq  # noqa: E402
import lse  # noqa: E402
import lstm  # noqa: E402
import ode  # noqa: E402

_built = {}


def derivative(module):
    """The module's s2sgrad derivative, built once per process."""
    if module.__name__ not in _built:
        _built[module.__name__] = module.tools["s2sgrad"]()
    return _built[module.__name__]


def _gmm_input(i):
    return (np.array(i["alpha"], float), np.array(i["mu"], float), np.array(i["q"], float),
            np.array(i["l"], float), np.array(i["x"], float), float(i["gamma"]), int(i["m"]))


def _gmm_jacobian(args):
    da, dmu, dq, dl = derivative(gmm)(*args)
    return {"alpha": da.tolist(), "mu": dmu.tolist(), "q": dq.tolist(), "l": dl.tolist()}


def _lstm_input(i):
    return tuple(np.array(i[k], float) for k in ("main_params", "extra_params", "state",
                                                  "sequence"))


def _lstm_jacobian(args):
    dmain, dextra = derivative(lstm)(*args)
    return np.concatenate([dmain.ravel(), dextra.ravel()]).tolist()


#: module -> function -> (input -> arguments, arguments -> JSON output)
FUNCTIONS = {
    "lse": {"primal": (lambda i: (np.array(i["x"], float),), lambda a: float(lse.logsumexp(*a))),
            "gradient": (lambda i: (np.array(i["x"], float),),
                         lambda a: derivative(lse)(*a).tolist())},
    "llsq": {"primal": (lambda i: (np.array(i["x"], float), int(i["n"])),
                        lambda a: float(llsq.llsq(*a))),
             "gradient": (lambda i: (np.array(i["x"], float), int(i["n"])),
                          lambda a: derivative(llsq)(*a).tolist())},
    "gmm": {"objective": (_gmm_input, lambda a: float(gmm.gmm_objective(*a))),
            "jacobian": (_gmm_input, _gmm_jacobian)},
    "kmeans": {"cost": (lambda i: (np.array(i["centroids"], float), np.array(i["points"], float)),
                        lambda a: float(kmeans.kmeans_cost(*a))),
               "dir": (lambda i: (np.array(i["centroids"], float), np.array(i["points"], float)),
                       lambda a: derivative(kmeans)(*a).tolist())},
    "ode": {"primal": (lambda i: (np.array(i["x"], float), int(i["s"])),
                       lambda a: ode.ode_solution(*a).tolist()),
            "gradient": (lambda i: (np.array(i["x"], float), int(i["s"])),
                         lambda a: derivative(ode)(*a).tolist())},
    "lstm": {"objective": (_lstm_input, lambda a: float(lstm.lstm_objective(*a))),
             "jacobian": (_lstm_input, _lstm_jacobian)},
}

NOT_HERE = {
    "ba": "its Jacobian output is GradBench's sparse COO encoding, not written here; "
          "benchmarks/gradbench/run.py times ba",
    "particle": "s2sgrad refuses the nested gradient (see particle.py)",
    "saddle": "s2sgrad refuses the nested gradient (see saddle.py)",
}


def evaluate(message):
    prepare, run = FUNCTIONS[message["module"]][message["function"]]
    raw = message["input"]
    args = prepare(raw)
    timings, elapsed = [], 0.0
    while len(timings) < raw.get("min_runs", 1) or elapsed < raw.get("min_seconds", 0):
        start = time.perf_counter_ns()
        output = run(args)
        spent = time.perf_counter_ns() - start
        timings.append({"name": "evaluate", "nanoseconds": spent})
        elapsed += spent / 1e9
    return {"success": True, "output": output, "timings": timings}


def respond(message):
    kind = message["kind"]
    if kind == "start":
        return {"tool": "s2sgrad"}
    if kind == "define":
        if message["module"] in FUNCTIONS:
            return {"success": True}
        return {"success": False, "error": NOT_HERE.get(message["module"], "no such eval here")}
    if kind == "evaluate":
        try:
            return evaluate(message)
        except Exception as error:   # reported to the driver, as GradBench's tools do
            return {"success": False, "error": f"{type(error).__name__}: {error}"}
    return {}


def main():
    for line in sys.stdin:
        message = json.loads(line)
        print(json.dumps({"id": message["id"]} | respond(message)), flush=True)


if __name__ == "__main__":
    main()
