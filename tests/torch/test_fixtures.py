"""Every fixture problem and bad file through the real command lines (kforge_torch.selfcheck)."""
import subprocess
import sys
import unittest

from support import FIXTURES, ROOT, extended


@extended
class Fixtures(unittest.TestCase):
    def test_selfcheck_passes_on_the_fixture_problems(self):
        done = subprocess.run([sys.executable, "-m", "kforge_torch.selfcheck", FIXTURES], capture_output=True,
                              text=True, cwd=ROOT, env={"PYTHONPATH": f"{ROOT}/python", "PATH": "/usr/bin:/bin"},
                              timeout=1200)
        failures = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
        self.assertEqual(done.returncode, 0, "\n".join(failures) or done.stdout[-2000:] + done.stderr[-2000:])


if __name__ == "__main__":
    unittest.main()
