"""The README's list of supported functions is the one the rules table renders, and the
README links nothing outside the repository."""
import pathlib
import re

from s2sgrad.rules import listing, vjp, d
from s2sgrad.rules.registry import _RULES

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_readme_lists_the_rules_table():
    text = (ROOT / "README.md").read_text()
    block = listing.readme_block(text)
    assert block is not None, "README.md lost its supported-function markers"
    assert block == listing.supported_markdown(), (
        "README.md's supported-function list differs from the rules table: run "
        "`python -m s2sgrad.rules --write-readme`")


def doubled(x):
    """A primitive of this module, for the test below."""
    return 2.0 * x


def test_a_new_rule_changes_the_list():
    """The comparison above can fail: registering a rule changes the rendered list."""
    before = listing.supported_markdown()

    @vjp(doubled)
    def _(ans, x):
        d[x] = d[ans] * 2.0

    try:
        after = listing.supported_markdown()
    finally:
        del _RULES[id(doubled)]
    assert "`test_supported_list.doubled`" in after
    assert "doubled" not in before


def test_readme_links_stay_in_the_repository():
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)]+)\)", text) + re.findall(r"`(\.\./[^`]+)`", text)
    outside = [t for t in targets if t.startswith("..") or t.startswith("/")]
    assert not outside, f"README.md points outside the repository: {outside}"
    for target in targets:
        if "://" not in target:
            assert (ROOT / target.split("#")[0]).exists(), f"README.md links missing {target}"

