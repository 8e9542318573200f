"""kforge model's PyTorch side: the cut into regions, the problem files, the assembled wiring.

Each test would fail if its mechanism broke: a region whose problem file computed something else
than the model does there, a replaced region whose outputs were wired to the wrong readers, sizes
that did not follow into a problem file, a repeated block not recognised as one problem.
"""
import json
import os
import tempfile
import unittest

import support  # noqa: F401  (python/ on sys.path)
import torch

from kforge_torch.model import capture as cap
from kforge_torch.model import regions as reg
from kforge_torch.model import runtime
from kforge_torch.model.extract import extract
from kforge_torch.problem import ProblemFile

MODELS = os.path.join(support.ROOT, "tests", "fixtures", "model")


def _load(name):
    program = ProblemFile(os.path.join(MODELS, name + ".py")).load()
    model = program.build_model(0, "cpu")
    inputs = program.make_inputs(1, "cpu")
    return program, model, inputs


def _cut(name):
    program, model, inputs = _load(name)
    captured = cap.capture(model, inputs)
    part = reg.partition(captured)
    state = [t.detach().clone() for t in captured.state_of(model)]
    keep = {n for r in part.regions for n in r.inputs} | {n for r in part.regions for n in r.outputs}
    cap.record(captured, state + inputs, keep)
    return model, inputs, captured, part, state


class RegionsTest(unittest.TestCase):
    def test_gpt_block_cuts_like_a_fusing_compiler(self):
        _, _, _, part, _ = _cut("gpt_block")
        names = [r.name for r in part.regions]
        self.assertEqual(len(part.regions), 17)  # 8 per block and the final LayerNorm
        self.assertEqual(names[:8], ["layernorm", "gemm", "bmm_mul_masked_fill_softmax", "bmm", "gemm_add",
                                     "layernorm", "gemm_mul_pow_add", "gemm_add"])
        keys = {}
        for region in part.regions:
            keys.setdefault(reg.structure_key(part, region), []).append(region.index)
        self.assertEqual(sorted(len(v) for v in keys.values()), [2, 2, 2, 2, 2, 2, 5])
        for region in part.regions:  # regions hand on whole tensors, never views
            for node in region.outputs:
                self.assertNotIn(node, part.derived)
                self.assertNotIn(reg.op_name(node), reg.VIEWS)

    def test_conv_block_keeps_the_batchnorm_counter_outside(self):
        _, _, _, part, _ = _cut("conv_bn_relu")
        self.assertEqual([r.name for r in part.regions], ["conv", "batchnorm_relu", "conv", "batchnorm_add_relu"])
        self.assertEqual([r.mutates for r in part.regions], [False, True, False, True])
        self.assertTrue(all(reg.op_name(n) == "add_" for n in part.top))
        self.assertEqual(len(part.top), 2)


@support.extended
class AssembledWiringTest(unittest.TestCase):
    def _staged(self, name, call_for):
        model, inputs, captured, part, _ = _cut(name)
        replaced = {r.index: call_for(part, r) for r in part.regions}
        gm = runtime.staged_module(part, replaced)
        _, _, state = cap.model_state(model)
        with torch.no_grad():
            want = cap.unflatten_output(captured, captured.gm(*[t.clone() for t in state], *inputs))
            got = cap.unflatten_output(captured, gm(*[t.clone() for t in state], *inputs))
        return want, got

    def test_every_region_replaced_by_its_own_operators_gives_the_model(self):
        for name in ("gpt_block", "mlp_stack", "conv_bn_relu"):
            want, got = self._staged(name, runtime.ReferenceRegion)
            self.assertTrue(torch.equal(want, got), name)

    def test_a_replaced_region_is_really_called(self):
        def zeros(part, region):
            reference = runtime.ReferenceRegion(part, region)
            if region.name != "gemm_mul_pow_add":
                return reference
            return lambda inputs, state: [torch.zeros_like(o) for o in reference(inputs, state)]
        want, got = self._staged("gpt_block", zeros)
        self.assertFalse(torch.allclose(want, got))


class ExtractTest(unittest.TestCase):
    def test_problem_files_compute_what_the_model_computes_there(self):
        model, inputs, captured, part, state = _cut("mlp_stack")
        with tempfile.TemporaryDirectory() as out:
            doc = extract(os.path.join(MODELS, "mlp_stack.py"), out, "cpu", None, 0.0, False)
            written = [r for r in doc["regions"] if "problem" in r]
            self.assertEqual(len(written), 5)
            by_key = {r["key"]: r for r in written}
            index_of = {n: i for i, n in enumerate(captured.placeholders())}
            for region in part.regions:
                row = by_key[runtime.region_key(part, region)]
                program = ProblemFile(os.path.join(out, row["problem"])).load()
                problem = program.Model()
                for attr, node in zip(row["attrs"], region.state):
                    getattr(problem, attr).data.copy_(state[index_of[node]])
                with torch.no_grad():
                    got = problem(*[n.meta["kforge_value"] for n in region.inputs])
                want = region.outputs[0].meta["kforge_value"]
                self.assertTrue(torch.allclose(got, want, rtol=1e-5, atol=1e-6), row["id"])

    def test_a_model_is_cut_at_the_sizes_given(self):
        with tempfile.TemporaryDirectory() as out:
            doc = extract(os.path.join(MODELS, "mlp_stack.py"), out, "cpu", None, 0.0, False, sizes={"batch_size": 7})
            self.assertEqual(doc["size_symbols"], {"batch_size": 7})
            self.assertEqual(doc["regions"][0]["inputs"][0][0], 7)

    def test_sizes_follow_into_the_problems(self):
        with tempfile.TemporaryDirectory() as out:
            doc = extract(os.path.join(MODELS, "gpt_block.py"), out, "cpu", None, 0.0, False)
            self.assertEqual(doc["size_symbols"], {"batch_size": 4, "seq_len": 256})
            self.assertTrue(any("n_embd" in note for note in doc["size_notes"]))
            counts = sorted(r["count"] for r in doc["regions"])
            self.assertEqual(counts, [2, 2, 2, 2, 2, 2, 5])
            for row in doc["regions"]:
                problem_file = ProblemFile(os.path.join(out, row["problem"]))
                program = problem_file.load({"batch_size": 3, "seq_len": 37})
                outputs = program.Model()(*program.make_inputs(0, "cpu"))
                outputs = outputs if isinstance(outputs, tuple) else (outputs,)
                self.assertTrue(all(o.shape[0] in (3, 3 * 37, 3 * 8) for o in outputs), row["id"])
            with open(os.path.join(out, "model.json")) as f:
                self.assertEqual(json.load(f)["regions_total"], 17)


class ShimTest(unittest.TestCase):
    def test_an_ordinary_file_is_cut_with_its_input_sizes_as_variables(self):
        with tempfile.TemporaryDirectory() as out:
            model = os.path.join(out, "plain_net.py")
            with open(model, "w") as f:
                f.write("import torch.nn as nn\n"
                        "class Net(nn.Module):\n"
                        "    def __init__(self, width):\n"
                        "        super().__init__()\n"
                        "        self.a = nn.Linear(width, 2 * width)\n"
                        "    def forward(self, x):\n"
                        "        return nn.functional.relu(self.a(x))\n")
            from kforge_torch.model.shim import ShimError, write_shim
            shim = write_shim(model, "Net", "[torch.randn(6, 10, 32)]", "[32]", out)
            doc = extract(shim, out, "cpu", None, 0.0, False)
            self.assertEqual(doc["size_symbols"], {"n6": 6, "n10": 10})  # n32 sizes the weight
            self.assertEqual([r["name"] for r in doc["regions"]], ["gemm_relu"])
            with self.assertRaises(ShimError):
                write_shim(model, "Net", "[torch.randn(6,", "[]", out)

    def test_sizes_written_as_literals_of_get_inputs_become_variables(self):
        with tempfile.TemporaryDirectory() as out:
            model = os.path.join(out, "literal_batch.py")
            with open(model, "w") as f:
                f.write("import torch\nimport torch.nn as nn\nwidth = 16\n"
                        "class Model(nn.Module):\n"
                        "    def __init__(self, width):\n"
                        "        super().__init__()\n"
                        "        self.a = nn.Linear(width, width)\n"
                        "    def forward(self, x):\n"
                        "        return torch.tanh(self.a(x))\n"
                        "def get_inputs():\n    return [torch.randn(5, width)]\n"
                        "def get_init_inputs():\n    return [width]\n")
            doc = extract(model, out, "cpu", None, 0.0, False)
            self.assertEqual(doc["size_symbols"], {"n5": 5})
            self.assertTrue(doc["model"].endswith(os.path.join("shim", "literal_batch.py")))
            row = doc["regions"][0]
            program = ProblemFile(os.path.join(out, row["problem"])).load({"n5": 3})
            self.assertEqual(program.Model()(*program.make_inputs(0, "cpu")).shape, (3, 16))


if __name__ == "__main__":
    unittest.main()
