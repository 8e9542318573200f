"""Shared by the kforge_torch tests: the package on sys.path, and problem files written on the fly."""
import os
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "torch")


def extended(test):
    """Marks a slow test (a class or a method) that `./kf test extended` (ctest -L extended, which CI
    runs) runs and `./kf test` skips, saying so."""
    return unittest.skipUnless(os.environ.get("KFORGE_EXTENDED_TESTS") == "1",
                               "an extended test: `./kf test extended` runs it")(test)


def problem_file(test, source):
    """Writes `source` (dedented) to a temporary problem.py that lives as long as `test`."""
    directory = tempfile.TemporaryDirectory(prefix="kforge-torch-test-")
    test.addCleanup(directory.cleanup)
    path = os.path.join(directory.name, "problem.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(source))
    return path
