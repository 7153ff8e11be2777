"""The long fuzz profile: many random programs (tests/test_random_programs.py's grammar),
each differentiated by s2sgrad and checked against central finite differences; half of
them also renamed to the names the generated code itself uses (tests/test_name_capture.py)
and required to give the same gradients.

    python benchmarks/fuzz_programs.py --programs 10000 [--backend python] [--seed 0]
    python benchmarks/fuzz_programs.py --grammar alias --programs 5000
    python benchmarks/fuzz_programs.py --profile forward --programs 10000
    python benchmarks/fuzz_programs.py --profile second --programs 10000
    python benchmarks/fuzz_programs.py --profile compose --programs 2000 [--backend numba]

``--grammar alias`` draws programs that take views and aliases of arrays and write into
them in place (tests/alias_programs.py): each must give numpy's value and the
finite-difference gradients (reverse and forward mode) or be refused with an
UnsupportedConstructError naming its file; the figures count the refusals too, and the
programs whose finite differences at steps 1e-5, 1e-6, 1e-7 disagree with one another
("unjudged": e.g. ``sin`` of a number squared five times, ~1e10).
``--profile forward`` checks each program's jvp along a random direction against a
difference of the function, ``--profile second`` its hvp against a difference of the
gradient (tests/test_random_programs.py's check_forward and check_second_order),
``--profile compose`` any transform of a random chain of up to two derivative-making
transforms, the chain's object used directly, called inside or made inside a function
being differentiated (check_composition).

Prints the figures (programs run, failures) and writes every failing program, ready to
paste, to fuzz_failures/ (or --out).  Not part of the test suite (it takes a long time);
the suite runs the same checks on a quick profile.
"""
import argparse
import os
import pathlib
import sys
import tempfile
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=10000)
    parser.add_argument("--backend", default="python")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=None,
                        help="stop after this long (the figures say how many ran)")
    parser.add_argument("--out", default="fuzz_failures")
    parser.add_argument("--grammar", choices=("programs", "alias"), default="programs")
    parser.add_argument("--profile", choices=("reverse", "forward", "second", "compose"),
                        default="reverse")
    opts = parser.parse_args()
    os.environ["S2SGRAD_BACKEND"] = opts.backend
    os.environ.setdefault("S2SGRAD_QUIET", "1")     # no line per Numba compile
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    import alias_programs
    import test_name_capture as capture
    import test_random_programs as grammar
    if opts.grammar == "alias":
        grammar = alias_programs

    directory = pathlib.Path(tempfile.mkdtemp(prefix="s2sgrad_fuzz_"))
    out = pathlib.Path(opts.out)
    counts = {"programs": 0, "renamed": 0, "failures": 0, "refused": 0, "unjudged": 0}
    start = time.time()

    @settings(max_examples=opts.programs, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(source=grammar.programs(), seed=st.integers(0, 2 ** 16),
           drawn=grammar.compositions() if opts.profile == "compose" else st.just(None))
    def run(source, seed, drawn):
        if opts.seconds is not None and time.time() - start > opts.seconds:
            return              # out of time: the rest are drawn but not run
        counts["programs"] += 1
        try:
            if opts.grammar == "alias":
                outcome = grammar.check(source, seed, directory)
                counts["refused"] += outcome.startswith("refused")
                counts["unjudged"] += outcome.startswith("unjudged")
            elif opts.profile == "forward":
                grammar.check_forward(source, seed, directory)
            elif opts.profile == "second":
                grammar.check_second_order(source, seed, directory)
            elif opts.profile == "compose":
                grammar.check_composition(source, seed, *drawn, directory)
            elif counts["programs"] % 2:
                grammar.check(source, seed, directory)
            else:
                counts["renamed"] += 1
                capture.check_renamed(source, seed, seed + 1, directory)
        except Exception:  # noqa: BLE001 - record it and go on
            counts["failures"] += 1
            out.mkdir(exist_ok=True)
            (out / f"failure_{counts['failures']}.txt").write_text(
                source + "\n# seed " + str(seed) + "\n" + traceback.format_exc())
        if counts["programs"] % (500 if opts.backend == "python" else 50) == 0:
            print(f"{counts} after {time.time() - start:.0f} s", flush=True)

    import hypothesis
    hypothesis.seed(opts.seed)(run)()   # the same programs for the same --seed
    print(f"backend {opts.backend}, grammar {opts.grammar}, profile {opts.profile}: "
          f"{counts['programs']} programs "
          f"({counts['renamed']} renamed to generated names, {counts['refused']} refused, "
          f"{counts['unjudged']} where finite differences cannot judge), "
          f"{counts['failures']} failures, "
          f"{time.time() - start:.0f} s", flush=True)
    return 1 if counts["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
