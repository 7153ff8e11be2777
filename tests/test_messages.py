"""Every class of error s2sgrad raises about what it was asked to do: the message names the
user's file and line and the construct where there is one, reads as English ("an int",
not "a int"), and says what to do.  One table per error class; each entry is user code
written to a file (so lines are known) and the words its message must hold."""
import importlib.util
import re

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.compiler.front import frontend
from s2sgrad.errors import (GradientArgumentError, GradientTypeError, MissingRuleError,
                            OutputStructureError, S2sgradError, SourceUnavailableError,
                            UnsupportedConstructError, UserCodeError)

X = np.array([1.0, 2.0, 3.0])


@pytest.fixture(autouse=True)
def python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def load(tmp_path, source, name="user_code"):
    """A module written to ``<tmp>/<name>.py`` with ``source`` after two header lines."""
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\nimport scipy.special\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BAD_ARTICLE = re.compile(r"\ba (?:[aeiou]\w|int\b|array\b)", re.IGNORECASE)


def check_english(text):
    assert not BAD_ARTICLE.search(text), f"article: {BAD_ARTICLE.search(text).group(0)!r} in {text!r}"
    assert "  " not in text.replace("\n    ", "\n"), f"double space in {text!r}"


def check_user_code_error(exc, line, words):
    """file:line first, the user's line quoted, the construct's words, a hint that says
    what to do, and plain English in what s2sgrad wrote."""
    text = str(exc)
    assert isinstance(exc, UserCodeError)
    assert text.startswith(f"{exc.location.filename}:{line}: "), text
    assert exc.location.filename.endswith("user_code.py"), text
    assert exc.location.text.strip() and exc.location.text.strip() in text
    assert exc.hint and text.rstrip().endswith(exc.hint), f"no hint in {text!r}"
    for word in words:
        assert word in text, f"{word!r} not in {text!r}"
    check_english(exc.what)
    check_english(exc.hint)


# line numbers count the two header lines load() adds: `def f` is line 3
UNSUPPORTED = [
    ("generator", "def f(x):\n    yield x * 2.0\n", 4, ["`yield`", "generator",
                                                        "return the result"]),
    ("yield expression", "def f(x):\n    y = yield x\n    return y\n", 4,
     ["`yield`", "instead of yielding"]),
    ("try", "def f(x):\n    try:\n        y = x * 2.0\n    except ValueError:\n"
     "        y = x\n    return y\n", 4, ["a try statement", "move the try/except"]),
    ("with", "def f(x):\n    with open('a') as h:\n        y = x\n    return y\n", 4,
     ["a with statement"]),
    ("raise", "def f(x):\n    raise ValueError('no')\n", 4, ["a raise statement"]),
    ("global", "def f(x):\n    global G\n    return x\n", 4, ["a global declaration",
                                                            "argument"]),
    ("del", "def f(x):\n    y = x\n    del y\n    return x\n", 5, ["a del statement"]),
    ("import", "def f(x):\n    import math\n    return x\n", 4,
     ["an import inside the function", "top of the module"]),
    ("class", "def f(x):\n    class A:\n        pass\n    return x\n", 4,
     ["a class definition"]),
    ("dict comprehension", "def f(x):\n    d = {i: x for i in range(2)}\n    return d[0]\n", 4,
     ["a dict comprehension", "constant keys"]),
    ("set", "def f(x):\n    s = {1, 2}\n    return x\n", 4, ["a set", "list or a tuple"]),
    ("walrus", "def f(x):\n    return (y := x * 2.0) + y\n", 4, ["(:=)", "own line"]),
    ("f-string", "def f(x):\n    s = f'{x}'\n    return x\n", 4, ["an f-string"]),
    ("call for its effect", "def f(x):\n    y = x.copy()\n    y.sort()\n    return y\n", 5,
     ["a call whose result is not used", "np.sort"]),
    ("unused expression", "def f(x):\n    x + 1.0\n    return x\n", 4,
     ["an expression whose value is not used"]),
    ("unpacking counts", "def f(x):\n    a, b = (x, x, x)\n    return a\n", 4,
     ["unpacking 3 values into 2 names", "unpack into 3 names"]),
    ("starred assignment", "def f(x):\n    a, *b = (x, x, x)\n    return a\n", 4,
     ["a starred assignment", "one name per item"]),
    ("in at run time", "def f(x):\n    return x if x[0] in x else x\n", 4, ["`in`", "np.isin"]),
    ("undefined name", "def f(x):\n    return x * nowhere\n", 4,
     ["the name `nowhere` is not defined"]),
    ("missing attribute", "def f(x):\n    return np.nothing_here(x)\n", 4,
     ["`nothing_here` is not an attribute of this module", "check the spelling"]),
    ("kwargs call", "def f(x):\n    kw = {'axis': 0}\n    return np.sum(x, **kw)\n", 5,
     ["**kwargs in a call", "by name"]),
    ("tuple index", "def f(x):\n    t = (x, x)\n    return t[2]\n", 5,
     ["the index 2 does not fit this tuple of 2 items", "index within"]),
    ("dict key", "def f(x):\n    d = {'a': x}\n    return d['b']\n", 5,
     ["a dict read with a key", "d['w']"]),
    ("dict as a value", "def f(x):\n    d = {'a': x}\n    return np.sum(d)\n", 5,
     ["a dict used as a whole value", "constant keys"]),
    ("run-time call", "def f(x):\n    return x(2.0)\n", 4,
     ["a call of a value computed at run time", "by their names"]),
    ("run-time index of a list", "def f(x):\n    g = [x, x]\n    return g[int(x[0])]\n", 5,
     ["indexing a list with an index known only at run time", "np.stack"]),
    ("tuple attribute", "def f(x):\n    t = (x, x)\n    return t.count\n", 5,
     ["`.count` of a tuple or list", "p[0]"]),
    ("for over a string", "def f(x):\n    s = 0.0\n    for v in 'ab':\n"
     "        s = s + x\n    return s\n", 5, ["a `for` loop over this iterable", "range(...)"]),
    ("local call", "def f(x):\n    def g(a, b):\n        return a * b\n    return g(x)\n", 6,
     ["a call of g with the wrong number of arguments", "a, b"]),
    ("recursion", "def f(x):\n    return f(x)\n", 4, ["recursion into f", "loop"]),
    ("returning a dict", "def f(x):\n    d = {'a': x}\n    return d\n", 5,
     ["returning a dict from the differentiated function", "tuple"]),
    ("returning a function", "def f(x):\n    return np.sum(x), np.sin\n", 4,
     ["returning an object of type ufunc", "return a number"]),
    ("dict differing in branches", "def f(x):\n    if x[0] > 0:\n        d = {'a': x}\n"
     "    else:\n        d = {'a': x * 2.0}\n    return d['a']\n", 4,
     ["`d` is a dict that differs between the two branches", "before the if"]),
]


@pytest.mark.parametrize("source, line, words", [c[1:] for c in UNSUPPORTED],
                         ids=[c[0] for c in UNSUPPORTED])
def test_unsupported_construct_messages(tmp_path, source, line, words):
    module = load(tmp_path, source)
    with pytest.raises(UnsupportedConstructError) as info:
        ms.grad(module.f)(X)
    check_user_code_error(info.value, line, words)


def test_missing_rule_message(tmp_path):
    module = load(tmp_path, "def f(x):\n    y = scipy.special.struve(1.0, x)\n    return np.sum(y)\n")
    with pytest.raises(MissingRuleError) as info:
        ms.grad(module.f)(X)
    check_user_code_error(info.value, 4, ["no derivative rule for", "struve",
                                          "custom_vjp", "stop_gradient"])


def test_output_structure_message(tmp_path):
    module = load(tmp_path, "def f(x):\n    return np.sum(x)\n")
    with pytest.raises(OutputStructureError) as info:
        ms.grad(module.f, has_aux=True)(X)
    check_user_code_error(info.value, 3, ["has_aux=True", "returns a single value",
                                          "has_aux=False"])



#: outputs that have no derivative (issue 19, item 5): refused by every transform, naming
#: the function's line, never an all-zero gradient
NO_DERIVATIVE = [
    ("def f(x):\n    y = np.sum(x ** 2)\n", ["f returns None", "add the missing `return`"]),
    ("def f(x):\n    return 'loss'\n", ["f returns a str ('loss')", "has_aux=True"]),
    ("def f(x):\n    return np.sum(x), None\n", ["item 1 of what f returns is None"]),
    ("def f(x):\n    return [np.sum(x), ('a', x)]\n",
     ["item 1][0 of what f returns is a str ('a')"]),
]
TRANSFORMS = {
    "grad": lambda f: ms.grad(f)(X),
    "value_and_grad": lambda f: ms.value_and_grad(f)(X),
    "jvp": lambda f: ms.jvp(f, (X,), (X,)),
    "jacfwd": lambda f: ms.jacfwd(f)(X),
    "vjp": lambda f: ms.vjp(f, X),
    "jacrev": lambda f: ms.jacrev(f)(X),
    "hessian": lambda f: ms.hessian(f)(X),
    "hvp": lambda f: ms.hvp(f, (X,), (X,)),
}


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("source, words", NO_DERIVATIVE, ids=range(len(NO_DERIVATIVE)))
def test_an_output_without_a_derivative_is_refused(tmp_path, source, words, transform):
    module = load(tmp_path, source)
    with pytest.raises(OutputStructureError) as info:
        TRANSFORMS[transform](module.f)
    check_user_code_error(info.value, 3, words)


def test_none_beside_the_loss_is_aux():
    def f(x):
        return np.sum(x ** 2), None
    (value, aux), grads = ms.value_and_grad(f, has_aux=True)(X)
    assert aux is None
    np.testing.assert_allclose(grads, 2 * X)

CUSTOM = [
    ("too few gradients", "@s2sgrad.custom_vjp\ndef h(x, y):\n    return x * y\n"
     "@h.defvjp\ndef _(x, y, out, dout):\n    return (dout * y,)\n"
     "def f(x):\n    return np.sum(h(x, x))\n", 11,
     ["the backward of h returned 1 gradient for 2 inputs", "one gradient per input"]),
    ("no backward", "@s2sgrad.custom_vjp\ndef h(x):\n    return x\n"
     "def f(x):\n    return np.sum(h(x))\n", 8,
     ["h is a custom_vjp with no backward", "@h.defvjp"]),
    ("branch in a backward", "@s2sgrad.custom_vjp\ndef h(x):\n    return x\n"
     "@h.defvjp\ndef _(x, out, dout):\n    if np.sum(x) > 0:\n        return (dout,)\n"
     "    return (-dout,)\n"
     "def f(x):\n    return np.sum(h(x))\n", 9,
     ["the backward of h (called at ", "user_code.py:13)", "run-time control flow",
      "np.where"]),
]


@pytest.mark.parametrize("source, line, words", [c[1:] for c in CUSTOM],
                         ids=[c[0] for c in CUSTOM])
def test_custom_rule_messages(tmp_path, source, line, words):
    module = load(tmp_path, "import s2sgrad\n" + source)
    with pytest.raises(UserCodeError) as info:
        ms.grad(module.f)(X)
    check_user_code_error(info.value, line, words)


def f2(x, y):
    return x * y


ARGUMENTS = [
    ("position out of range", lambda: ms.grad(f2, 2)(X, X),
     ["grad_position 2 is out of range", "2 arguments", "0 to 1", "pass a position"]),
    ("empty tuple", lambda: ms.grad(f2, ())(X, X),
     ["empty tuple", "name at least one"]),
    ("too many arguments", lambda: ms.grad(f2)(X, X, X),
     ["f2 takes 2 arguments", "called with 3", "one value per parameter"]),
    ("missing argument", lambda: ms.grad(f2)(X),
     ["f2(x, y)", "missing a required argument", "call it as you would call f2"]),
]


@pytest.mark.parametrize("call, words", [c[1:] for c in ARGUMENTS],
                         ids=[c[0] for c in ARGUMENTS])
def test_gradient_argument_messages(call, words):
    with pytest.raises(GradientArgumentError) as info:
        call()
    for word in words:
        assert word in str(info.value), str(info.value)
    check_english(str(info.value))


TYPES = [
    ("int", 3, "", ["is an integer (3)", "e.g. 3.0"]),
    ("numpy int", np.int64(4), "", ["is an integer (4)", "e.g. 4.0"]),
    ("bool", True, "", ["is a bool (True)", "pass a float"]),
    ("int array", np.arange(3), "", ["is an array of dtype int64", ".astype(np.float32)"]),
    ("string", "x", "", ["is a str", "pass one of those"]),
    ("object", object(), "", ["is an object", "pass one of those"]),
    ("int in a tuple", (X, 2), "item [1]", ["is an integer (2)"]),
    ("int array in a dict", {"w": np.arange(3)}, "item ['w']", ["dtype int64"]),
]


@pytest.mark.parametrize("value, path, words", [c[1:] for c in TYPES],
                         ids=[c[0] for c in TYPES])
def test_gradient_type_messages(value, path, words):
    with pytest.raises(GradientTypeError) as info:
        ms.grad(lambda v, y: y)(value, X)
    text = str(info.value)
    assert text.startswith("the argument at grad_position 0" + (f", {path}," if path else " "))
    for word in words:
        assert word in text, text
    check_english(text)


def test_source_unavailable_messages(tmp_path, monkeypatch):
    with pytest.raises(SourceUnavailableError) as info:     # a callable object, no source
        ms.grad(np.vectorize(lambda v: v * 2.0))(X)
    assert "can only read Python functions" in str(info.value) and "wrap it in a def" in \
        str(info.value)
    namespace = {"np": np}
    exec("def made(x):\n    return x * 2.0\n", namespace)
    with pytest.raises(SourceUnavailableError) as info:
        ms.grad(namespace["made"])(X)
    assert "cannot read the source of made" in str(info.value) and "in a file" in \
        str(info.value)
    module = load(tmp_path, "f, g = (lambda z: z * 2.0), (lambda z: z * 3.0)\n")
    monkeypatch.setattr(frontend, "_body_span", lambda code: None)   # as on Python 3.10
    with pytest.raises(SourceUnavailableError) as info:
        ms.grad(module.g)(X)
    text = str(info.value)
    assert text.startswith(f"{tmp_path / 'user_code.py'}:3: ") and "2 lambdas" in text \
        and "(z)" in text and "with def" in text
    for exc in (info.value,):
        check_english(str(exc))
        assert isinstance(exc, S2sgradError)


@pytest.mark.parametrize("kwargs, words", [
    (dict(grad_position=1.0), ["must be an int or a tuple of ints", "got float"]),
    (dict(weights=[np.ones(2)]), ["must hold Parameters", "got an ndarray", "Parameter("]),
])
def test_argument_checks_at_grad_time(kwargs, words):
    with pytest.raises(TypeError) as info:
        ms.grad(f2, **kwargs)
    for word in words:
        assert word in str(info.value), str(info.value)
    check_english(str(info.value))
