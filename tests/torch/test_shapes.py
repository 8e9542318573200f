"""shapes.py and facts.py: which variables are sizes, and the shapes chosen for tests and held-out."""
import os
import shutil
import tempfile
import types
import unittest

import torch

from support import FIXTURES, problem_file
from kforge_torch.facts import Runner, import_problem, moving_elements
from kforge_torch import layout
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

    def test_both_names_of_a_chained_assignment_are_sizes(self):
        # KernelBench's level 2 writes `height = width = 128`; each must move on its own
        source = HEADS.replace("    dim = 96\n", "    rows = dim = 96\n").replace(
            "torch.randn(batch_size, dim)", "torch.randn(batch_size, dim + rows - 96)")
        evaluator, module_vars = self.evaluator(source)
        symbols, notes, _ = detect_symbols(evaluator, module_vars)
        self.assertEqual(symbols, ["batch_size", "rows", "dim"])

    def test_a_count_that_changes_the_number_of_parameters_is_no_size(self):
        # KernelBench's GRU: h0 is (num_layers, batch, hidden), so num_layers moves an input's dims,
        # but each layer has its own weights: the task's signature would change with it
        source = """
            import torch
            import torch.nn as nn
            batch_size = 8
            num_layers = 3
            class Model(nn.Module):
                def __init__(self, num_layers):
                    super().__init__()
                    self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(num_layers))
                def forward(self, x, h0):
                    for layer, h in zip(self.layers, h0):
                        x = torch.tanh(layer(x) + h)
                    return x
            def get_inputs():
                return [torch.rand(batch_size, 4), torch.rand(num_layers, batch_size, 4)]
            def get_init_inputs():
                return [num_layers]
        """
        evaluator, module_vars = self.evaluator(source)
        symbols, notes, _ = detect_symbols(evaluator, module_vars)
        self.assertEqual(symbols, ["batch_size"])
        self.assertTrue(any(n.startswith("num_layers changes the inputs' dims, but it changes the program's "
                                         "signature (parameter: 6 vs 8 at num_layers=4)") for n in notes), notes)

    def test_symbols_named_on_the_command_line_must_be_int_variables(self):
        evaluator, module_vars = self.evaluator()
        with self.assertRaisesRegex(ProblemError, "--symbols names scale, which is not an int module variable"):
            detect_symbols(evaluator, module_vars, ["scale"])
        symbols, _, rule = detect_symbols(evaluator, module_vars, ["batch_size"])
        self.assertEqual(symbols, ["batch_size"])
        self.assertTrue(rule.startswith("size symbols named by --symbols: batch_size"))

    def test_int_elements_of_a_module_level_tuple_that_move_the_inputs_are_sizes(self):
        # KernelBench's scans and losses: torch.rand(batch_size, *input_shape) with input_shape = (32768,)
        source = HEADS.replace("    dim = 96\n", "    input_shape = (96,)\n    pool = (3,)\n").replace(
            "torch.randn(batch_size, dim)", "torch.randn(batch_size, *input_shape)").replace(
            "return [heads, kernel_size]", "return [heads, pool[0]]")
        evaluator, module_vars = self.evaluator(source)
        symbols, notes, rule = detect_symbols(evaluator, module_vars)
        self.assertEqual(symbols, ["batch_size", "input_shape_0"])
        self.assertIn("pool_0 = 3", rule)
        symbols, _, _ = detect_symbols(evaluator, module_vars, ["input_shape_0"])
        self.assertEqual(symbols, ["input_shape_0"])

    def test_a_row_given_by_a_tuple_is_tested_and_held_out_at_odd_lengths(self):
        # without tuple elements as symbols every shape kept the file's 4096: a kernel that hard-coded
        # the row length passed every test
        facts = import_problem(os.path.join(FIXTURES, "extra", "reverse_cumsum_tuple.py"))
        self.assertEqual(facts["symbols"], ["batch_size", "input_shape_0", "input_shape_1"])
        self.assertEqual(facts["module_vars"]["flip_dims_0"], 2)  # reaches only get_init_inputs: kept
        self.assertEqual(facts["tuple_elements"], {"input_shape_0": ["input_shape", 0],
                                                   "input_shape_1": ["input_shape", 1], "flip_dims_0": ["flip_dims", 0]})
        rows = [z["input_shape_1"] for z in facts["shapes"]["tests"][1:] + facts["shapes"]["held_out"]]
        self.assertTrue(all(r % 2 == 1 and r != 4096 for r in rows), rows)
        dims = {a["name"]: a["dims"] for a in facts["args"]}
        self.assertEqual(dims["x"], ["batch_size", "input_shape_0", "input_shape_1"])
        self.assertEqual(dims["out"], dims["x"])



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

    def test_a_program_without_size_symbols_is_refused_before_any_real_forward_saying_why(self):
        # KernelBench's HingeLoss multiplies (batch, 32768) by (batch,): it runs only where the two
        # are equal, so batch_size is no size; its file shape (two 4 GB inputs) must not be run here
        source = """
            import torch
            import torch.nn as nn
            batch_size = 1 << 15
            class Model(nn.Module):
                def forward(self, predictions, targets):
                    return torch.mean(torch.clamp(1 - predictions * targets, min=0))
            def get_inputs():
                return [torch.rand(batch_size, 1 << 15), torch.rand(batch_size)]
            def get_init_inputs():
                return []
        """
        with self.assertRaisesRegex(ProblemError, r"^no size symbols: batch_size changes the inputs' dims, but "
                                    r"the program fails at every other value tried \(batch_size=32769: "
                                    r"Model.forward raises RuntimeError: The size of tensor a"):
            import_problem(problem_file(self, source))
        literal = source.replace("batch_size, 1 << 15", "8, 16").replace("rand(batch_size)", "rand(16)")
        with self.assertRaisesRegex(ProblemError, r"no int module variable changes the dims of a tensor "
                                    r"get_inputs\(\) returns \(its ints: batch_size\)"):
            import_problem(problem_file(self, literal))

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

    def test_sizes_of_equal_file_values_differ_in_the_scaled_shapes(self):
        # KernelBench's cubes and squares (height = width = 128): a kernel that takes the width for
        # the height must fail a test
        source = """
            import torch
            import torch.nn as nn
            batch_size = 16
            depth = height = width = 128
            class Model(nn.Module):
                def forward(self, x):
                    return torch.tanh(x)
            def get_inputs():
                return [torch.rand(batch_size, depth, height, width)]
            def get_init_inputs():
                return []
        """
        shapes = import_problem(problem_file(self, source))["shapes"]
        for shape in shapes["tests"][1:] + shapes["held_out"]:
            self.assertEqual(len({shape["depth"], shape["height"], shape["width"]}), 3, shape)

    def test_the_held_out_time_estimate_counts_the_fp64_forward(self):
        # fp64 convolutions on the CPU run 10-50 times slower than fp32 ones (no MKL-DNN in double):
        # KernelBench's conv2d spent 40 s of a 42 s import on the held-out shape's fp64 forward
        runner = Runner(None, "cpu")
        shape = {"n": 9}
        runner.own[Runner.key(shape)] = types.SimpleNamespace(seconds=0.01)
        self.assertAlmostEqual(runner.estimate_seconds(100, [(shape, 100)]), 1.5 * 3 * 0.01)
        runner.full_runs[Runner.key(shape)] = types.SimpleNamespace(seconds=0.01, seconds64=1.0)
        self.assertAlmostEqual(runner.estimate_seconds(100, [(shape, 100)]), 1.5 * 1.01)
        self.assertAlmostEqual(runner.estimate_seconds(200, [(shape, 100)]), 1.5 * 1.01 * 2)

    def test_the_work_a_shape_is_timed_by_counts_inputs_and_outputs_not_a_fixed_weight(self):
        # KernelBench's Gemm_Sigmoid_LogSumExp: a fixed 4096 x 2048 weight is the largest tensor at
        # every test shape, so by it the held-out shape (10^5 times the tests' work) looked no bigger
        source = """
            import torch
            import torch.nn as nn
            batch_size = 64
            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gemm = nn.Linear(8, 4096)
                def forward(self, x):
                    return self.gemm(x).sum(dim=1)
            def get_inputs():
                return [torch.rand(batch_size, 8)]
            def get_init_inputs():
                return []
        """
        evaluator = Evaluator(ProblemFile(problem_file(self, source)))
        self.assertEqual(moving_elements(evaluator, {"batch_size": 3}), 3 * 8 + 3)
        self.assertEqual(moving_elements(evaluator, {"batch_size": 3000}), 3000 * 8 + 3000)

    def test_a_model_that_calls_a_closure_over_its_own_layers_runs_in_fp64(self):
        # KernelBench's MiniGPTBlock: self.mlpf = lambda x: m.c_proj(m.c_fc(x)), m = self.mlp; a deep
        # copy made double kept calling the fp32 layers, so the fp64 run failed and the task fell
        # back to KernelBench's plain 1e-4 tolerance
        source = """
            import torch
            import torch.nn as nn
            batch_size = 8
            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mlp = nn.Linear(16, 16)
                    m = self.mlp
                    self.mlpf = lambda x: torch.tanh(m(x))
                def forward(self, x):
                    return self.mlpf(x)
            def get_inputs():
                return [torch.rand(batch_size, 16)]
            def get_init_inputs():
                return []
        """
        facts = import_problem(problem_file(self, source))
        self.assertFalse([n for n in facts["notes"] if "fp64" in n], facts["notes"])
        self.assertIn("max_abs_ref", facts["checks"]["out"]["atol"])

    def test_parameters_too_big_for_their_fp64_run_at_every_size_are_refused_before_any_is_built(self):
        # KernelBench's ShallowWideMLP: 6 GiB of fp32 weights whatever its sizes; each own-dtype run
        # fits, each fp64 run does not, and building the model for the former spent the time limit
        source = """
            import torch
            import torch.nn as nn
            batch_size = 64
            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gemm = nn.Linear(4096, 4096)
                def forward(self, x):
                    return self.gemm(x)
            def get_inputs():
                return [torch.rand(batch_size, 4096)]
            def get_init_inputs():
                return []
        """
        real = layout.free_memory_bytes
        self.addCleanup(setattr, layout, "free_memory_bytes", real)
        layout.free_memory_bytes = lambda device: 300 << 20  # the weight is 64 MiB: 192 MiB with fp64
        with self.assertRaisesRegex(ProblemError, r"^running the program at batch_size=1 on cpu needs about "
                                    r".*largest tensor gemm.weight \[4096, 4096\], and an fp64 copy"):
            import_problem(problem_file(self, source))

    def test_choosing_shapes_runs_no_real_forward_where_the_meta_device_cannot(self):
        # Sizing a shape needs its tensors' sizes, not the outputs a real forward gives: KernelBench's
        # 3D transposed convolution + max pool (no meta kernel in torch 1.13) spent 80 s of a
        # 90 s limit in forwards run only to size the shapes it was scaling
        log = os.path.join(tempfile.mkdtemp(prefix="kforge-test-"), "real_forwards")
        self.addCleanup(shutil.rmtree, os.path.dirname(log))
        source = """
            import torch
            import torch.nn as nn
            batch_size = 64
            dim = 4096
            class Model(nn.Module):
                def forward(self, x):
                    if x.device.type != "meta":
                        with open(LOG, "a") as f:
                            f.write(f"{tuple(x.shape)}\\n")
                    return torch.median(x, dim=1).values
            def get_inputs():
                return [torch.rand(batch_size, dim)]
            def get_init_inputs():
                return []
        """.replace("LOG", repr(log))
        evaluator = Evaluator(ProblemFile(problem_file(self, source)))
        evaluator.layout({"batch_size": 3, "dim": 5}, outputs=False)
        self.assertEqual(moving_elements(evaluator, {"batch_size": 3, "dim": 7}), 21 + 3 * evaluator.meta_forward)
        self.assertFalse(os.path.exists(log))
        if not evaluator.meta_forward:  # the dims of the outputs still come from a small real forward
            self.assertEqual(evaluator.layout({"batch_size": 3, "dim": 5}).outputs[0].dims, (3,))
            self.assertTrue(os.path.exists(log))

    def test_without_a_meta_kernel_sizes_of_equal_file_values_still_get_their_own_dims(self):
        # KernelBench's 3D max pool over a 128^3 cube: with no meta kernel (torch 1.13), output dims
        # come from real forwards at small shapes only, and every test shape is a cube too
        source = """
            import torch
            import torch.nn as nn
            batch_size = 16
            channels = 32
            depth = 128
            height = 128
            width = 128
            class Model(nn.Module):
                def forward(self, x):
                    return torch.median(x[:, :, 4:, 4:, 4:], dim=1).values
            def get_inputs():
                return [torch.rand(batch_size, channels, depth, height, width)]
            def get_init_inputs():
                return []
        """
        facts = import_problem(problem_file(self, source))
        self.assertEqual([a["dims"] for a in facts["args"]],
                         [["batch_size", "channels", "depth", "height", "width"],
                          ["batch_size", "depth - 4", "height - 4", "width - 4"]])

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
