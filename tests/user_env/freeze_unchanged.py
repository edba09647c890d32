"""Fail when ``pip install .`` changed a package the user's TensorFlow environment already had.

Usage: ``python tests/user_env/freeze_unchanged.py BEFORE AFTER`` with two ``pip freeze`` outputs. Added
packages are fine (precision_tool's own, e.g. prompt_toolkit); a changed or removed one (numpy, protobuf...)
would break the user's TensorFlow and is an error. Plain Python 3.7+, no third-party import.
"""
import sys


def read_freeze(path):
    """``{normalised name: version}`` of a ``pip freeze`` file (``name==version`` lines only)."""
    packages = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            name, sep, version = line.strip().partition("==")
            if sep:
                packages[name.lower().replace("_", "-")] = version
    return packages


def changes(before, after):
    """Lines naming every package of ``before`` whose version differs in ``after`` or that is gone."""
    return [f"{name}: {version} -> {after.get(name, 'removed')}"
            for name, version in sorted(before.items()) if after.get(name) != version]


def main(argv):
    before, after = read_freeze(argv[1]), read_freeze(argv[2])
    changed = changes(before, after)
    if changed:
        print(f"pip install . changed the user's environment ({argv[2]}):", file=sys.stderr)
        for line in changed:
            print(f"  {line}", file=sys.stderr)
        return 1
    added = sorted(set(after) - set(before))
    print(f"user environment unchanged: {len(before)} packages kept, added {', '.join(added) or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
