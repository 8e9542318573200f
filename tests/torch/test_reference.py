"""The reference process over its pipes: the protocol, fp64 fallback, inputs written before the forward."""
import os
import struct
import tempfile
import unittest

import numpy as np

from support import problem_file
from kforge_torch.reference_client import ReferenceClient

SOURCE = """
    import torch
    import torch.nn as nn
    n = 6
    class Model(nn.Module):
        def forward(self, x, k):
            x.mul_(k)
            return x + 1
    def get_inputs():
        return [torch.randn(n), 3.0]
    def get_init_inputs():
        return []
"""
ARGS = [{"name": "x", "dtype": "f32", "from": "input 0"}, {"name": "k", "dtype": "f32", "from": "input 1",
                                                             "value": "3.0"},
        {"name": "out", "dtype": "f32", "from": "output 0"}]


class Protocol(unittest.TestCase):
    def setUp(self):
        self.client = ReferenceClient()
        self.addCleanup(self.client.__exit__)
        scratch = tempfile.TemporaryDirectory()
        self.addCleanup(scratch.cleanup)
        self.buffers = os.path.join(scratch.name, "buffers.bin")
        with open(self.buffers, "wb") as f:
            f.truncate(48)

    def setup(self, source=SOURCE, args=ARGS):
        return self.client.ask({"op": "setup", "problem": problem_file(self, source), "symbols": ["n"],
                                "args": args, "device": "cpu"})

    def location(self, offset):
        return {"file": self.buffers, "offset": offset, "bytes": 24}

    def read(self, offset):
        return np.fromfile(self.buffers, dtype=np.float32, count=6, offset=offset)

    def test_requests_before_setup_and_unknown_ops_are_refused_and_the_process_goes_on(self):
        reply = self.client.ask({"op": "prepare"})
        self.assertFalse(reply["ok"])
        self.assertIn("first request must be setup", reply["error"])
        self.assertTrue(self.setup()["ok"])
        self.assertIn("unknown op", self.client.ask({"op": "launch"})["error"])
        self.assertEqual(self.client.close(), 0)

    def test_inputs_are_written_before_a_forward_that_changes_them_in_place(self):
        self.setup()
        reply = self.client.ask({"op": "prepare", "sizes": {"n": 6}, "input_seed": 3, "param_seed": 4,
                                 "what": "expected", "buffers": {"x": self.location(0), "out": self.location(24)}})
        self.assertTrue(reply["ok"], reply)
        self.assertEqual(reply["precision"], "fp64")
        x, out = self.read(0), self.read(24)
        np.testing.assert_allclose(out, x.astype(np.float64) * 3 + 1, rtol=1e-6)

    def test_a_scalar_has_no_buffer(self):
        self.setup()
        reply = self.client.ask({"op": "prepare", "sizes": {"n": 6}, "input_seed": 3, "param_seed": 4,
                                 "what": "inputs", "buffers": {"k": self.location(0)}})
        self.assertIn("is a scalar and has no buffer", reply["error"])

    def test_a_program_that_cannot_run_in_fp64_gives_its_own_dtype_with_the_reason(self):
        source = SOURCE.replace("return x + 1", "return x @ torch.ones(x.shape[0], x.shape[0])")
        self.setup(source)
        reply = self.client.ask({"op": "prepare", "sizes": {"n": 6}, "input_seed": 3, "param_seed": 4,
                                 "what": "expected", "buffers": {"out": self.location(0)}})
        self.assertTrue(reply["ok"], reply)
        self.assertEqual(reply["precision"], "own")
        self.assertIn("does not run in fp64", reply["note"])

    def test_integer_outputs_are_the_programs_own_where_fp64_rounds_them_otherwise(self):
        # 0.1 in fp32 times 25 is 2.5 in fp32 (a tie, rounded to even: 2) but 2.5000000373 in fp64
        # (3). PyTorch computes 2; so must the reference. The float output stays fp64's.
        source = """
            import torch
            import torch.nn as nn
            n = 6
            class Model(nn.Module):
                def forward(self, x):
                    x.mul_(25)
                    return torch.round(x).to(torch.int8), x
            def get_inputs():
                return [torch.full((n,), 0.1)]
            def get_init_inputs():
                return []
        """
        args = [{"name": "x", "dtype": "f32", "from": "input 0"}, {"name": "q", "dtype": "i8", "from": "output 0"},
                {"name": "y", "dtype": "f32", "from": "output 1"}]
        self.setup(source, args)
        reply = self.client.ask({"op": "prepare", "sizes": {"n": 6}, "input_seed": 3, "param_seed": 4,
                                 "what": "expected", "buffers": {"x": self.location(0), "q": {"file": self.buffers,
                                 "offset": 24, "bytes": 6}}})
        self.assertTrue(reply["ok"], reply)
        self.assertEqual(reply["precision"], "fp64")
        self.assertIn("integer output(s) 0 are the program's own", reply["note"])
        np.testing.assert_array_equal(np.fromfile(self.buffers, dtype=np.int8, count=6, offset=24), [2] * 6)
        # The input was written before either forward scaled it in place, and the fp64 forward saw 0.1
        # too: its float output is 2.5000000373, not the own forward's 2.5 scaled again.
        np.testing.assert_array_equal(self.read(0), np.full(6, 0.1, dtype=np.float32))
        reply = self.client.ask({"op": "prepare", "sizes": {"n": 6}, "input_seed": 3, "param_seed": 4,
                                 "what": "expected", "buffers": {"y": self.location(24)}})
        self.assertTrue(reply["ok"], reply)
        self.assertNotIn("integer output", reply["note"])
        np.testing.assert_array_equal(self.read(24), np.full(6, np.float32(np.float64(np.float32(0.1)) * 25)))

    def test_warm_compile_is_advice_that_never_fails_and_refuses_a_bad_limit(self):
        self.setup()
        ask = {"op": "warm_compile", "sizes": {"n": 6}, "input_seed": 3, "param_seed": 4}
        reply = self.client.ask(ask)
        self.assertTrue(reply["ok"], reply)
        self.assertFalse(reply["warmed"])  # on the CPU there is no GPU compile to warm
        self.assertIn("only a GPU", reply["note"])
        self.assertIn("limit_seconds", self.client.ask(dict(ask, limit_seconds=0))["error"])
        self.assertIn("sizes must give exactly", self.client.ask(dict(ask, sizes={}))["error"])

    def test_a_broken_frame_ends_the_process_with_status_2(self):
        os.write(self.client.requests, struct.pack("<I", 3) + b"{{{")
        self.assertEqual(self.client.close(), 2)


if __name__ == "__main__":
    unittest.main()
