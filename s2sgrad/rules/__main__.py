"""``python -m s2sgrad.rules --markdown``: print the supported-function list rendered from
the rules table; ``--write-readme [PATH]``: replace the list in README.md (or PATH)."""
import pathlib
import sys

from .listing import readme_block, supported_markdown


def main(argv):
    if argv[:1] == ["--write-readme"]:
        path = pathlib.Path(argv[1] if len(argv) > 1 else "README.md")
        text = path.read_text()
        old = readme_block(text)
        if old is None:
            sys.exit(f"{path} has no supported-function markers")
        path.write_text(text.replace(old, supported_markdown()))
        return
    if argv[:1] != ["--markdown"]:
        sys.exit("usage: python -m s2sgrad.rules --markdown | --write-readme [README.md]")
    print(supported_markdown())


if __name__ == "__main__":
    main(sys.argv[1:])
