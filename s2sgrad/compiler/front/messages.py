"""What s2sgrad says about the statements and expressions it refuses.

``statement_name(stmt)`` and ``expression_name(node)`` give, for a gast node the
lowering cannot take, ``(what the user wrote, what to do instead)``: the two halves
of an ``UnsupportedConstructError`` message.
"""
import gast


#: statements s2sgrad refuses: what the user wrote, and what to do instead
STATEMENTS = {
    gast.Try: ("a try statement", "move the try/except to the code that calls the gradient "
               "function; the differentiated function runs straight through"),
    gast.With: ("a with statement", "move the with block out of the differentiated function "
                "and pass in what it provides"),
    gast.Raise: ("a raise statement", "check the inputs in the code that calls the gradient "
                 "function and raise there"),
    gast.Global: ("a global declaration", "pass the value in as an argument and return its "
                  "new value"),
    gast.Nonlocal: ("a nonlocal declaration", "pass the value in as an argument and return "
                    "its new value"),
    gast.Delete: ("a del statement", "remove it: a name that is no longer used costs nothing"),
    gast.ClassDef: ("a class definition inside the function", "define the class at module "
                    "level"),
    gast.Import: ("an import inside the function", "import at the top of the module"),
    gast.ImportFrom: ("an import inside the function", "import at the top of the module"),
    gast.AsyncFor: ("an async for loop", "differentiate a plain (not async) function"),
    gast.AsyncWith: ("an async with statement", "differentiate a plain (not async) function"),
    gast.AsyncFunctionDef: ("an async function definition", "define a plain function"),
}
if hasattr(gast, "Match"):
    STATEMENTS[gast.Match] = ("a match statement", "write it as if/elif on the values")

#: expressions s2sgrad refuses: what the user wrote, and what to do instead
EXPRESSIONS = {
    gast.DictComp: ("a dict comprehension", "write the dict out with constant keys "
                    "({'a': x, 'b': y}), or use a list"),
    gast.SetComp: ("a set comprehension", "use a list or a tuple"),
    gast.Set: ("a set", "use a list or a tuple"),
    gast.Yield: ("`yield`: a generator cannot be differentiated", "return the result (a tuple "
                 "for several values) instead of yielding it"),
    gast.YieldFrom: ("`yield from`: a generator cannot be differentiated", "return the result "
                     "(a tuple for several values) instead of yielding it"),
    gast.Await: ("`await`: a coroutine cannot be differentiated", "differentiate a plain (not "
                 "async) function"),
    gast.NamedExpr: ("an assignment expression (:=)", "assign the value on its own line, then "
                     "use the name"),
    gast.JoinedStr: ("an f-string", "build strings outside the differentiated function"),
    gast.Starred: ("a starred expression (*x) here", "pass the items one by one, or unpack "
                   "into names"),
}


def statement_name(stmt):
    """(what the user wrote, what to do) for a statement s2sgrad refuses."""
    name = type(stmt).__name__
    return STATEMENTS.get(type(stmt), (f"a {name} statement", "rewrite the function without "
                                       "it, with assignments, if, for and while"))


def expression_name(node):
    """(what the user wrote, what to do) for an expression s2sgrad refuses."""
    name = type(node).__name__
    return EXPRESSIONS.get(type(node), (f"a {name} expression", "rewrite the expression with "
                                        "plain operations"))
