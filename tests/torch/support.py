"""Shared by the kforge_torch tests: the package on sys.path, and problem files written on the fly."""
import os
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "torch")


def problem_file(test, source):
    """Writes `source` (dedented) to a temporary problem.py that lives as long as `test`."""
    directory = tempfile.TemporaryDirectory(prefix="kforge-torch-test-")
    test.addCleanup(directory.cleanup)
    path = os.path.join(directory.name, "problem.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(source))
    return path
