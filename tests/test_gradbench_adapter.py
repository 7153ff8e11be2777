"""benchmarks/gradbench/adapter.py speaks GradBench's protocol: one JSON line per message,
with the message's id, timings per run, and the derivative s2sgrad computes (checked
against central differences); an eval it does not serve is refused at ``define`` with
the reason.  Loop-free evals only (lse, gmm): no Numba compile."""
import json
import pathlib
import subprocess
import sys

import numpy as np

ADAPTER = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "gradbench" / "adapter.py"


def lse(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))


def test_the_adapter_answers_each_message_with_its_id_and_a_checked_gradient(tmp_path):
    x = [0.5, -1.0, 2.0, 0.25]
    messages = [
        {"id": 0, "kind": "start"},
        {"id": 1, "kind": "define", "module": "lse"},
        {"id": 2, "kind": "evaluate", "module": "lse", "function": "gradient",
         "input": {"x": x, "min_runs": 3, "min_seconds": 0}},
        {"id": 3, "kind": "evaluate", "module": "lse", "function": "primal",
         "input": {"x": x, "min_runs": 1, "min_seconds": 0}},
        {"id": 4, "kind": "define", "module": "saddle"},
    ]
    env = {"PYTHONPATH": str(ADAPTER.parent.parent.parent), "S2SGRAD_QUIET": "1",
           "S2SGRAD_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(ADAPTER)], capture_output=True, text=True,
                          input="".join(json.dumps(m) + "\n" for m in messages), env=env,
                          timeout=300)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in replies] == [0, 1, 2, 3, 4], done.stderr
    assert replies[0]["tool"] == "s2sgrad" and replies[1]["success"]
    gradient = replies[2]
    assert gradient["success"] and len(gradient["timings"]) == 3
    assert all(t["name"] == "evaluate" and t["nanoseconds"] > 0 for t in gradient["timings"])
    eps, base = 1e-6, np.array(x)
    numeric = [(lse(base + eps * e) - lse(base - eps * e)) / (2 * eps) for e in np.eye(len(x))]
    np.testing.assert_allclose(gradient["output"], numeric, rtol=1e-6)
    assert abs(replies[3]["output"] - lse(base)) < 1e-12
    assert replies[4]["success"] is False and "nested gradient" in replies[4]["error"]
