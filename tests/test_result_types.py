"""The skeleton of a result's types (``backend/result_types.py``): written as JSON and read
back it restores compiled results exactly as the Python reference would; a skeleton that
does not fit a compiled result is refused (``StaleSkeleton``), never applied; and a tape
list that was empty on the first call is still restored on later calls."""
import json

import numpy as np
import pytest

from s2sgrad.backend import result_types as rt

REFERENCES = [
    (np.float64(1.5), 1.5),
    (np.float32(1.5), 1.5),
    (np.bool_(True), True),
    (np.int64(3), 3),
    ((np.float64(1.0), (np.ones(2, np.float32), np.ones(3))),
     (1.0, (np.ones(2), np.ones(3)))),
    ([np.ones(2, np.float32), np.ones(2, np.float32)], [np.ones(2), np.ones(2)]),
    (None, None),
]


@pytest.mark.parametrize("reference, compiled", REFERENCES)
def test_a_skeleton_read_back_from_json_restores_like_the_reference(reference, compiled):
    skeleton = json.loads(json.dumps(rt.skeleton_of(reference)))
    restored = rt.restorer_from(skeleton, compiled)(compiled)
    expected = rt.restorer_like(reference, compiled)(compiled)
    flat = [(restored, expected)]
    while flat:
        got, want = flat.pop()
        assert type(got) is type(want)
        if isinstance(got, (tuple, list)):
            flat += list(zip(got, want))
        elif isinstance(got, np.ndarray):
            assert got.dtype == want.dtype
    assert rt.complete(skeleton)


@pytest.mark.parametrize("skeleton, compiled", [
    (["tuple", [["scalar", "<f8"]] * 3, True], (1.0, 2.0)),
    (["array", "<f8"], 1.0),
    (["scalar", "<f8"], np.ones(2)),
    (["list", ["array", "<f4"]], np.ones(2)),
    (["other", "NoneType"], 1.0),
    (["array", 7], np.ones(2)),
    (["array", "not a dtype"], np.ones(2)),
    ({"tuple": 1}, (1.0,)),
    ([], 1.0),
])
def test_a_skeleton_that_does_not_fit_the_compiled_result_is_refused(skeleton, compiled):
    with pytest.raises(rt.StaleSkeleton):
        rt.restorer_from(skeleton, compiled)


def test_an_empty_tape_on_the_first_call_does_not_fix_the_later_calls_types():
    restore = rt.restorer_from(["list", ["array", "<f4"]], [])
    assert restore([]) == []
    later = restore([np.ones(2), np.ones(3)])
    assert [v.dtype for v in later] == [np.float32, np.float32]
    # a reference whose tape was empty names no item type: it is never recorded
    assert not rt.complete(rt.skeleton_of(([], np.float64(1.0))))


TWO_FUNCTIONS = '''import numpy as np


def widened(x):
    for i in range(1):
        pass
    return float(x[0])


def kept(x):
    for i in range(1):
        pass
    return x[0] * 2.0
'''


def test_functions_of_one_module_keep_their_own_record(tmp_path, monkeypatch):
    """vjp's forward and jacobian functions share a module and its record: called with
    the same argument types, each must get its own result types (``kept`` gives a float32
    as Python, a Python float compiled; ``widened`` a float64)."""
    from s2sgrad.backend import cache
    from s2sgrad.backend.numba_backend import Compiled
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    x = np.ones(3, dtype=np.float32)

    def load(name):
        fn, path, on_disk = cache.materialise("two_functions", TWO_FUNCTIONS, name)
        return Compiled(fn, path=path, source=TWO_FUNCTIONS, on_disk=on_disk)
    first = load("widened")
    assert type(first(x)) is np.float64 and first.backend == "numba", first.fallback_reason
    assert type(load("kept")(x)) is np.float32        # a reference run: not widened's
    again = load("kept")                              # a later process: from the record
    assert type(again(x)) is np.float32 and again.reference_runs == 0
    assert type(load("widened")(x)) is np.float64
