"""layout.with_fp64: an own-dtype run made whole by the fp64 forward alone gives what run_real(fp64=True)
gives, and declines where the program's inputs cannot be made again alike."""
import unittest

import torch

from support import problem_file
from kforge_torch.layout import run_real, with_fp64
from kforge_torch.problem import ProblemFile

LINEAR = """
    import torch
    import torch.nn as nn

    batch_size = 5
    features = 7

    class Model(nn.Module):
        def __init__(self, features):
            super().__init__()
            self.linear = nn.Linear(features, 3)

        def forward(self, x):
            return torch.tanh(self.linear(x))

    def get_inputs():
        return [torch.rand(batch_size, features)]

    def get_init_inputs():
        return [features]
"""

# get_inputs draws from Python's generator, which the importer's seeds do not reach.
PYTHON_RANDOM = LINEAR.replace("import torch\n", "import random\n    import torch\n", 1).replace(
    "return [torch.rand(batch_size, features)]", "return [torch.full((batch_size, features), random.random())]")


class WithFp64(unittest.TestCase):
    def test_the_fp64_half_matches_a_whole_run(self):
        problem = ProblemFile(problem_file(self, LINEAR))
        sizes = {"batch_size": 4, "features": 6}
        whole = run_real(problem, sizes, 1, 2, "cpu")
        own = run_real(problem, sizes, 1, 2, "cpu", fp64=False)
        own.inputs = own.state = None  # as the importer keeps it
        self.assertIsNone(own.outputs64)
        made = with_fp64(problem, own, 1, 2, "cpu")
        self.assertIsNotNone(made)
        self.assertEqual(len(made.outputs64), len(whole.outputs64))
        for a, b in zip(made.outputs64, whole.outputs64):
            self.assertEqual(a.dtype, torch.float64)
            self.assertTrue(torch.equal(a, b))
        for a, b in zip(made.outputs, whole.outputs):
            self.assertTrue(torch.equal(a, b))
        self.assertIsNone(own.outputs64)  # the own run is left as it was
        self.assertGreater(made.seconds64, 0)

    def test_a_different_parameter_seed_gives_different_fp64_outputs(self):
        problem = ProblemFile(problem_file(self, LINEAR))
        sizes = {"batch_size": 4, "features": 6}
        own = run_real(problem, sizes, 1, 2, "cpu", fp64=False)
        other = with_fp64(problem, own, 1, 3, "cpu")
        self.assertFalse(torch.allclose(other.outputs64[0], own.outputs[0].double(), atol=1e-3))

    def test_inputs_from_another_generator_are_not_reused(self):
        problem = ProblemFile(problem_file(self, PYTHON_RANDOM))
        sizes = {"batch_size": 4, "features": 6}
        own = run_real(problem, sizes, 1, 2, "cpu", fp64=False)
        self.assertIsNone(with_fp64(problem, own, 1, 2, "cpu"))


if __name__ == "__main__":
    unittest.main()
