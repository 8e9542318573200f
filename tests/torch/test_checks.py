"""checks.py: measured tolerances, the bytes expression, determinism."""
import unittest

import torch

from support import problem_file
from kforge_torch.checks import bytes_expression, check_determinism, output_check
from kforge_torch.problem import ProblemError, ProblemFile


class Tolerances(unittest.TestCase):
    def test_atol_is_four_times_the_excess_over_rtol_relative_to_the_largest_reference(self):
        ref = torch.tensor([1.0, -2.0, 4.0], dtype=torch.float64)
        own = (ref + torch.tensor([0.0, 1e-4, 0.0], dtype=torch.float64)).float()
        notes = []
        check = output_check("out", "f32", [({"n": 3}, own, ref)], notes)
        excess = float((own.double() - ref).abs()[1] - 1e-5 * 2.0)
        self.assertAlmostEqual(float(check["atol"].split(" * ")[0]), 4 * excess / 4.0, delta=2e-6)
        self.assertEqual(check["rtol"], "1e-05")
        self.assertEqual(check["measured"]["shape"], {"n": 3})
        self.assertEqual(notes, [])

    def test_a_tiny_error_gets_the_floor_and_a_huge_one_the_cap_with_a_note(self):
        ref = torch.linspace(-1, 1, 101, dtype=torch.float64)
        notes = []
        # The absolute floor: four times the rounding of ref to fp32 (at most 2^-25 at |ref| <= 1).
        atol = output_check("out", "f32", [({}, ref.float(), ref)], notes)["atol"]
        self.assertRegex(atol, r"^1e-06 \* max_abs_ref \+ [0-9.e-]+$")
        self.assertLessEqual(float(atol.split(" + ")[1]), 4 * 2 ** -25 * 1.01)
        check = output_check("out", "bf16", [({}, (ref + 0.5).bfloat16(), ref)], notes)
        self.assertEqual(check["atol"], "0.01 * max_abs_ref + 0.01")  # the floor at KernelBench's bf16 atol
        self.assertEqual(check["rtol"], "0.01")
        self.assertTrue(any("capped at 0.01" in n for n in notes), notes)

    def test_an_output_near_zero_by_cancellation_keeps_an_absolute_floor(self):
        # A loss of two classes: lse - target logit. Measured where the loss is of ordinary size, the
        # check must still accept fp32 rounding on inputs where the loss comes out tiny (the run's
        # secret draws those), which a tolerance relative to |loss| alone rejects.
        torch.manual_seed(0)
        samples = []
        for _ in range(4):
            logits = torch.randn(64, 2, dtype=torch.float64) * 3
            targets = torch.randint(0, 2, (64,))
            ref = torch.nn.functional.cross_entropy(logits, targets)
            own = torch.nn.functional.cross_entropy(logits.float(), targets)
            samples.append(({"batch": 64}, own.reshape(1), ref.reshape(1)))
        check = output_check("loss", "f32", samples, [])
        k, floor = check["atol"].replace(" * max_abs_ref", "").split(" + ")
        tiny = torch.tensor([[9.0, -6.5]], dtype=torch.float64)  # the loss is about 1.9e-7
        ref = torch.nn.functional.cross_entropy(tiny, torch.tensor([0]))
        own = torch.nn.functional.cross_entropy(tiny.float(), torch.tensor([0])).double()
        err, size = float((own - ref).abs()), float(ref.abs())
        self.assertGreater(err, float(k) * size + float(check["rtol"]) * size)  # relative alone rejects it
        self.assertLessEqual(err, float(k) * size + float(floor) + float(check["rtol"]) * size)

    def test_an_output_that_is_rounding_noise_around_zero_accepts_the_program_s_own_result(self):
        # KernelBench level 2 #23: the mean of a GroupNorm's output over everything but the batch is 0
        # up to rounding (about 1e-17 in fp64, 1e-8 in fp32); the cap binds, and the check must still
        # take the program's own fp32 result and a kernel's exact zeros, yet reject a real error
        torch.manual_seed(0)
        x = torch.rand(4, 8, 50, dtype=torch.float64) * 3
        def program(t):
            return torch.nn.functional.group_norm(t, 2).mean(dim=[1, 2])
        ref, own = program(x), program(x.float())
        notes = []
        check = output_check("out", "f32", [({"batch": 4}, own, ref)], notes)
        self.assertTrue(any("capped at 0.01" in n for n in notes), notes)
        k, floor = check["atol"].replace(" * max_abs_ref", "").split(" + ")
        def passes(candidate):
            allowed = float(k) * float(ref.abs().max()) + float(floor) + float(check["rtol"]) * ref.abs()
            return bool(((candidate.double() - ref).abs() <= allowed).all())
        self.assertTrue(passes(own))
        self.assertTrue(passes(torch.zeros(4)))
        self.assertFalse(passes(torch.full((4,), 1e-3)))
        self.assertLessEqual(float(floor), 1e-4)

    def test_integer_outputs_are_exact_and_a_missing_fp64_run_falls_back_with_a_note(self):
        notes = []
        self.assertEqual(output_check("idx", "i64", [({}, torch.arange(3), torch.arange(3))], notes),
                         {"metric": "exact"})
        self.assertEqual(output_check("out", "f32", [({}, torch.ones(3), None)], notes), {"atol": "0.0001",
                                                                                          "rtol": "0.0001"})
        self.assertTrue(any("no fp64 run" in n for n in notes))

    def test_own_nan_where_the_reference_is_finite_hits_the_cap(self):
        notes = []
        check = output_check("out", "f32", [({}, torch.tensor([float("nan"), 1.0]),
                                             torch.tensor([1.0, 1.0], dtype=torch.float64))], notes)
        self.assertEqual(check["atol"], "0.01 * max_abs_ref")


class Bytes(unittest.TestCase):
    def test_terms_with_the_same_symbols_are_added_and_constants_folded(self):
        args = [{"kind": "tensor", "dtype": "f32", "dims": ["batch", "dim"]},
                {"kind": "tensor", "dtype": "f32", "dims": ["dim", "batch"]},
                {"kind": "tensor", "dtype": "bf16", "dims": ["16", "3", "3"]},
                {"kind": "tensor", "dtype": "i64", "dims": ["(h - 1) / 2 + 1"]},
                {"kind": "scalar", "dtype": "f32", "value": "0.5"}]
        self.assertEqual(bytes_expression(args), "8 * batch * dim + 288 + 8 * ((h - 1) / 2 + 1)")


class Determinism(unittest.TestCase):
    SOURCE = """
        import torch
        import torch.nn as nn
        n = 16
        class Model(nn.Module):
            def forward(self, x):
                return x * 2
        def get_inputs():
            return [torch.randn(n)]
        def get_init_inputs():
            return []
    """

    def test_a_deterministic_program_passes(self):
        check_determinism(ProblemFile(problem_file(self, self.SOURCE)).load(), "cpu")

    def test_dropout_forced_on_is_not_deterministic(self):
        program = ProblemFile(problem_file(self, self.SOURCE.replace("return x * 2",
                                                                     "return nn.functional.dropout(x, 0.5, True)")))
        with self.assertRaisesRegex(ProblemError, "not deterministic: two forwards"):
            check_determinism(program.load(), "cpu")


if __name__ == "__main__":
    unittest.main()
