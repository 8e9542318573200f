"""shapes.py and facts.py: which variables are sizes, and the shapes chosen for tests and held-out."""
import unittest

import torch

from support import problem_file
from kforge_torch.facts import import_problem
from kforge_torch.layout import Evaluator
from kforge_torch.problem import ProblemError, ProblemFile
from kforge_torch.shapes import _nth_odd, detect_symbols

HEADS = """
    import torch
    import torch.nn as nn

    batch_size = 64
    dim = 96
    heads = 4
    kernel_size = 3
    fixed = 12
    scale = 0.5
    verbose = True

    class Model(nn.Module):
        def __init__(self, heads, kernel_size):
            super().__init__()
            self.heads, self.pool = heads, nn.MaxPool1d(kernel_size, stride=1, padding=1)

        def forward(self, x):
            b, d = x.shape
            y = x.reshape(b, self.heads, d // self.heads) * scale
            return self.pool(y).reshape(b, d) * fixed

    def get_inputs():
        return [torch.randn(batch_size, dim)]

    def get_init_inputs():
        return [heads, kernel_size]
"""


class Symbols(unittest.TestCase):
    def evaluator(self, source=HEADS):
        problem = ProblemFile(problem_file(self, source))
        return Evaluator(problem), problem.load().module_vars()

    def test_only_ints_that_move_the_inputs_are_sizes(self):
        evaluator, module_vars = self.evaluator()
        symbols, notes, rule = detect_symbols(evaluator, module_vars)
        self.assertEqual(symbols, ["batch_size", "dim"])
        self.assertIn("heads = 4", rule)
        self.assertIn("kernel_size = 3", rule)

    def test_a_size_that_breaks_the_program_at_every_other_value_is_dropped_with_a_note(self):
        source = HEADS.replace("d // self.heads", "96 // self.heads")
        evaluator, module_vars = self.evaluator(source)
        symbols, notes, _ = detect_symbols(evaluator, module_vars)
        self.assertEqual(symbols, ["batch_size"])
        self.assertTrue(any(n.startswith("dim changes the inputs' dims") for n in notes), notes)

    def test_symbols_named_on_the_command_line_must_be_int_variables(self):
        evaluator, module_vars = self.evaluator()
        with self.assertRaisesRegex(ProblemError, "--symbols names scale, which is not an int module variable"):
            detect_symbols(evaluator, module_vars, ["scale"])
        symbols, _, rule = detect_symbols(evaluator, module_vars, ["batch_size"])
        self.assertEqual(symbols, ["batch_size"])
        self.assertTrue(rule.startswith("size symbols named by --symbols: batch_size"))


class Shapes(unittest.TestCase):
    def test_scaled_values_are_odd_and_not_powers_of_two(self):
        self.assertEqual([_nth_odd(64, 1, n) for n in range(3)], [65, 63, 67])
        self.assertEqual(_nth_odd(1, 1, 0), 3)
        self.assertEqual(_nth_odd(100, 60, 0), 101)

    def test_a_constraint_on_a_size_holds_it_at_the_file_value_where_odd_values_fail(self):
        facts = import_problem(problem_file(self, HEADS))
        for shape in facts["shapes"]["tests"] + facts["shapes"]["held_out"]:
            self.assertEqual(shape["dim"] % 4, 0, shape)
        self.assertEqual(facts["shapes"]["tests"][0]["batch_size"], 1)
        dims = {a["name"]: a["dims"] for a in facts["args"]}
        self.assertEqual(dims, {"x": ["batch_size", "dim"], "out": ["batch_size", "dim"]})

    def test_the_tiny_shape_avoids_outputs_that_are_exactly_zero(self):
        source = """
            import torch
            import torch.nn as nn
            rows = 64
            cols = 256
            class Model(nn.Module):
                def __init__(self, cols):
                    super().__init__()
                    self.norm = nn.LayerNorm(cols)
                def forward(self, x):
                    return self.norm(x)
            def get_inputs():
                return [torch.randn(rows, cols)]
            def get_init_inputs():
                return [cols]
        """
        tiny = import_problem(problem_file(self, source))["shapes"]["tests"][0]
        self.assertEqual(tiny, {"rows": 1, "cols": 2})

    def test_a_tensor_of_fixed_size_does_not_shrink_the_test_shapes(self):
        # The table (vocab x embed, 2^21 elements) is larger than a test shape's target at every shape; the
        # shapes must shrink only until the tensors that move (tokens, out) fit, not to the symbols' floors.
        source = """
            import torch
            import torch.nn as nn
            batch_size = 64
            seq_len = 512
            vocab = 32768
            embed = 64
            class Model(nn.Module):
                def __init__(self, vocab, embed):
                    super().__init__()
                    self.table = nn.Embedding(vocab, embed)
                def forward(self, tokens):
                    return self.table(tokens).sum(dim=1)
            def get_inputs():
                return [torch.randint(0, vocab, (batch_size, seq_len))]
            def get_init_inputs():
                return [vocab, embed]
        """
        facts = import_problem(problem_file(self, source))
        big = facts["shapes"]["tests"][1]
        self.assertGreater(big["batch_size"] * big["seq_len"], 1 << 14, facts["shapes"])
        held_out = facts["shapes"]["held_out"][0]
        self.assertGreater(held_out["batch_size"] * held_out["seq_len"], 1 << 14, facts["shapes"])

    def test_an_operation_without_a_meta_kernel_gets_its_dims_from_small_real_forwards(self):
        source = """
            import torch
            import torch.nn as nn
            batch_size = 4096
            dim = 8192
            class Model(nn.Module):
                def forward(self, x):
                    return torch.median(x, dim=1).values
            def get_inputs():
                return [torch.randn(batch_size, dim)]
            def get_init_inputs():
                return []
        """
        facts = import_problem(problem_file(self, source))
        self.assertEqual([a["dims"] for a in facts["args"]], [["batch_size", "dim"], ["batch_size"]])
        try:
            torch.empty(2, 3, device="meta").median(dim=1)
        except NotImplementedError:  # torch 1.13: no meta kernel, so the fallback ran
            self.assertTrue(any(n.startswith("the forward cannot run on the meta device (Could not run "
                                             "'aten::median") for n in facts["notes"]), facts["notes"])


if __name__ == "__main__":
    unittest.main()
