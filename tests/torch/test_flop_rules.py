"""FLOPs by rule (flop_rules.py), for a torch without FlopCounterMode: each test would fail if a
matrix product, a convolution or attention were counted wrongly, or a pointwise operator counted."""
import unittest

import support  # noqa: F401  (python/ on sys.path)
import torch
import torch.nn.functional as F

from kforge_torch.checks import count_flops
from kforge_torch.flop_rules import RuleFlopCounter
from kforge_torch.problem import ProblemFile


def counted(fn, *tensors):
    with torch.no_grad(), RuleFlopCounter() as counter:
        fn(*tensors)
    return counter.total


class RuleFlopCounterTest(unittest.TestCase):
    def test_matrix_products_count_two_flops_per_multiply_add(self):
        a, b = torch.empty(64, 32, device="meta"), torch.empty(32, 16, device="meta")
        self.assertEqual(counted(torch.mm, a, b), 2 * 64 * 32 * 16)
        bias = torch.empty(16, device="meta")
        self.assertEqual(counted(lambda: torch.addmm(bias, a, b)), 2 * 64 * 32 * 16)
        x, y = torch.empty(5, 64, 32, device="meta"), torch.empty(5, 32, 16, device="meta")
        self.assertEqual(counted(torch.bmm, x, y), 5 * 2 * 64 * 32 * 16)
        w = torch.empty(16, 32, device="meta")
        self.assertEqual(counted(lambda: F.linear(torch.empty(7, 64, 32, device="meta"), w)), 2 * 7 * 64 * 32 * 16)

    def test_pointwise_operators_count_nothing(self):
        x = torch.empty(1024, 1024, device="meta")
        self.assertEqual(counted(lambda: torch.relu(x * 2 + 1).sum()), 0)

    def test_a_convolution_counts_its_products(self):
        x = torch.empty(2, 8, 32, 32, device="meta")
        w = torch.empty(16, 4, 3, 3, device="meta")  # groups = 2: 4 input channels per group
        flops = counted(lambda: F.conv2d(x, w, padding=1, groups=2))
        self.assertEqual(flops, 2 * (2 * 16 * 32 * 32) * 4 * 9)

    @unittest.skipUnless(hasattr(F, "scaled_dot_product_attention"), "no scaled_dot_product_attention (torch 2.0+)")
    def test_causal_attention_counts_half_the_scores(self):
        q = torch.empty(2, 4, 128, 64)
        full = counted(lambda: F.scaled_dot_product_attention(q, q, q))
        causal = counted(lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True))
        self.assertEqual(full, 4 * 2 * 4 * 128 * 128 * 64)
        self.assertEqual(causal, full // 2)


class ImportedFlopsTest(unittest.TestCase):
    def test_a_gemm_program_has_its_flops_on_every_torch(self):
        path = support.problem_file(self, """
            import torch
            batch_size = 128
            class Model(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.linear = torch.nn.Linear(1024, 512)
                def forward(self, x):
                    return torch.relu(self.linear(x))
            def get_inputs():
                return [torch.randn(batch_size, 1024)]
            def get_init_inputs():
                return []
        """)
        notes = []
        flops = count_flops(ProblemFile(path), [{"batch_size": 128}, {"batch_size": 3}], notes)
        self.assertEqual([f["flops"] for f in flops], [2 * 128 * 1024 * 512, 2 * 3 * 1024 * 512])


if __name__ == "__main__":
    unittest.main()
