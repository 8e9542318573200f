"""The assembled model's runtime and what extract writes for models it has not seen.

Each test would fail if its mechanism broke: a replaced region that ran through Python (a callable in
the staged graph) instead of its operator, an operator given a live-in in the wrong layout, a fake
kernel that torch.compile could not trace, a problem file that drew a norm's weight of ones as ones
(a kernel ignoring it passed), a permuted live-in drawn contiguous (the region's view failed), a
device read off an input fx had already dropped, an eager estimate that counted a hand-written
RMSNorm as one pass, a bare AttributeError for an API the installed torch lacks.
"""
import operator
import os
import tempfile
import unittest

import support  # noqa: F401  (python/ on sys.path)
import torch

from kforge_torch.model import capture as cap
from kforge_torch.model import estimate
from kforge_torch.model import regions as reg
from kforge_torch.model import runtime
from kforge_torch.model.extract import extract
from kforge_torch.model.sizes import torch_too_old
from kforge_torch.problem import ProblemFile

MODELS = os.path.join(support.ROOT, "tests", "fixtures", "model")
HAS_FAKE = hasattr(torch.library, "register_fake")
HAS_SDPA = hasattr(torch.nn.functional, "scaled_dot_product_attention")

# A region whose live-in is stored permuted: `scaled` keeps x's transposed strides (elementwise
# operators follow their input's layout), and the GEMM region reads it.
PERMUTED = '''
import torch
import torch.nn as nn
batch_size = 3
seq_len = 8
width = 16


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        scaled = x.transpose(1, 2) * 2.0
        return self.proj(scaled.reshape(-1, width)).relu() + self.norm.weight.sum()


def get_inputs():
    return [torch.randn(batch_size, width, seq_len)]


def get_init_inputs():
    return []
'''

# A hand-written RMSNorm in fp32 (six operators as eager runs it: its casts do nothing in fp32).
RMSNORM = '''
import torch
import torch.nn as nn
rows = 64
width = 256


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-5)
        return y.type_as(x) * self.weight


def get_inputs():
    return [torch.randn(rows, width)]


def get_init_inputs():
    return []
'''


def _cut(path, sizes=None):
    program = ProblemFile(path).load(sizes)
    model = program.build_model(0, "cpu")
    inputs = program.make_inputs(1, "cpu")
    captured = cap.capture(model, inputs)
    part = reg.partition(captured)
    _, _, state = cap.model_state(model)
    keep = {n for r in part.regions for n in r.inputs} | {n for r in part.regions for n in r.outputs}
    cap.record(captured, [t.detach().clone() for t in state] + inputs, keep)
    return model, inputs, captured, part, state


class _Operator:
    """Stands in for an ExportedOperator: a CPU operator of a test library that runs the region's
    own operators on what it is given, and refuses a live-in that is not contiguous, as the export's
    operator does."""

    def __init__(self, library, namespace, part, region):
        reference = runtime.ReferenceRegion(part, region)
        layouts = [reg.input_layout(n) for n in region.inputs]
        count = len(region.inputs)
        name = f"r{region.index}"
        params = [f"Tensor x{i}" for i in range(count)] + [f"Tensor s{j}" for j in range(len(region.state))]
        result = "Tensor" if len(region.outputs) == 1 else "(" + ", ".join(["Tensor"] * len(region.outputs)) + ")"
        library.define(f"{name}({', '.join(params)}) -> {result}")
        self.calls = 0

        def run(*args):
            self.calls += 1
            inputs = list(args[:count])
            for x in inputs:
                if not x.is_contiguous():
                    raise RuntimeError("a live-in reached the operator non-contiguous")
            inputs = [x.permute(*reg.inverse_order(lay[1])) if lay and lay[0] == "permute" else x
                      for x, lay in zip(inputs, layouts)]
            outs = [o.contiguous() for o in reference(inputs, list(args[count:]))]
            return outs[0] if len(outs) == 1 else tuple(outs)

        library.impl(name, run, "CPU")
        self.overload = getattr(getattr(torch.ops, namespace), name).default
        self.order = [("input", i) for i in range(count)] + [("state", j) for j in range(len(region.state))]
        self.reference = reference
        self.__name__ = name


_LIBRARIES = []


def _operators(part, tag):
    namespace = f"kforge_test_{tag}"
    library = torch.library.Library(namespace, "DEF")
    _LIBRARIES.append(library)  # an operator lives as long as its library object
    return {r.index: _Operator(library, namespace, part, r) for r in part.regions if r.compute}


class OperatorPathTest(unittest.TestCase):
    def test_replaced_regions_are_operator_calls_and_give_the_model(self):
        model, inputs, captured, part, state = _cut(os.path.join(MODELS, "gpt_block.py"))
        operators = _operators(part, "gpt")
        gm = runtime.staged_module(part, {i: runtime.OperatorCall(op, part.regions[i]) for i, op in operators.items()})
        for node in gm.graph.nodes:  # no Python between kernels: operators and tuple access only
            if node.op == "call_function":
                self.assertTrue(isinstance(node.target, torch._ops.OpOverload) or node.target is operator.getitem,
                                f"{node.target} is called from Python")
        with torch.no_grad():
            want = captured.gm(*[t.clone() for t in state], *inputs)
            got = gm(*[t.clone() for t in state], *inputs)
        self.assertTrue(all(torch.equal(a, b) for a, b in zip(want, got)))
        self.assertEqual(sum(op.calls for op in operators.values()), sum(1 for r in part.regions if r.compute))

    def test_a_permuted_live_in_reaches_the_operator_as_its_bytes(self):
        path = support.problem_file(self, PERMUTED)
        model, inputs, captured, part, state = _cut(path)
        layouts = [(r.name, reg.input_layout(n)) for r in part.regions for n in r.inputs]
        self.assertIn(("gemm_relu_add", ("permute", (0, 2, 1))), layouts)
        operators = _operators(part, "permuted")
        gm = runtime.staged_module(part, {i: runtime.OperatorCall(op, part.regions[i]) for i, op in operators.items()})
        with torch.no_grad():
            want = captured.gm(*[t.clone() for t in state], *inputs)
            got = gm(*[t.clone() for t in state], *inputs)
        self.assertTrue(all(torch.equal(a, b) for a, b in zip(want, got)))

    @unittest.skipUnless(HAS_FAKE, f"torch {torch.__version__} has no torch.library.register_fake (2.4+)")
    def test_torch_compile_traces_the_operators_through_their_fake_kernels(self):
        model, inputs, captured, part, state = _cut(os.path.join(MODELS, "mlp_stack.py"))
        operators = _operators(part, "compiled")
        for index, op in operators.items():
            runtime.register_fake(op, part.regions[index], op.reference)
        gm = runtime.staged_module(part, {i: runtime.OperatorCall(op, part.regions[i]) for i, op in operators.items()})
        compiled = torch.compile(gm)
        with torch.no_grad():
            want = captured.gm(*[t.clone() for t in state], *inputs)
            got = compiled(*[t.clone() for t in state], *inputs)
        self.assertTrue(all(torch.allclose(a, b, rtol=1e-5, atol=1e-5) for a, b in zip(want, got)))
        self.assertGreater(sum(op.calls for op in operators.values()), 0)


# A stand-in for an export's loader (kforge export --torch writes the real one, which builds a CUDA
# extension): load_op() defines an operator on the CPU, in a namespace of its own per folder
# (kforge_cpu_<hash>: torch 1.13 has no library fragments), computed by the problem's own Model,
# and ModelNew calls it as the export's ModelNew calls its operator.
FAKE_LOADER = '''
import hashlib
import importlib.util
import os
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
NAMESPACE = "kforge_cpu_" + hashlib.sha1((HERE + {op!r}).encode()).hexdigest()[:12]
PROBLEM = os.path.join(HERE, {problem_file!r})
OP = {op!r}
INPUTS = {inputs}
ATTRS = {attrs!r}
CALLS = [0]


def _problem():
    spec = importlib.util.spec_from_file_location("problem_" + OP, PROBLEM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_PROBLEM = _problem()
_LIBRARY = []


def load_op():
    if not _LIBRARY:
        library = torch.library.Library(NAMESPACE, "DEF")
        _LIBRARY.append(library)
        params = [f"Tensor x{{i}}" for i in range(INPUTS)] + [f"Tensor {{a}}" for a in ATTRS]
        library.define(f"{{OP}}({{', '.join(params)}}) -> {result}")

        def run(*args):
            CALLS[0] += 1
            model = _PROBLEM.Model()
            for attr, value in zip(ATTRS, args[INPUTS:]):
                getattr(model, attr).data = value
            return model(*args[:INPUTS])

        library.impl(OP, run, "CPU")
    return getattr(getattr(torch.ops, NAMESPACE), OP)


class ModelNew(_PROBLEM.Model):
    def forward(self, *inputs):
        return load_op()(*[x.contiguous() for x in inputs], *[getattr(self, a) for a in ATTRS])
'''


class AssembledKernelsTest(unittest.TestCase):
    """The assembled model in kernels mode, on the CPU: every replaced region is its operator, called
    from the staged graph (and, where torch has register_fake, under torch.compile)."""

    def _assemble(self):
        import json
        import shutil
        from kforge_torch.model.assemble import assemble
        out = tempfile.TemporaryDirectory()
        self.addCleanup(out.cleanup)
        folder = out.name
        doc = extract(os.path.join(MODELS, "mlp_stack.py"), folder, "cpu", None, 0.0, False)
        os.makedirs(os.path.join(folder, "kernels"))
        winners = []
        for row in doc["regions"]:
            if "problem" not in row:
                continue
            shutil.copyfile(os.path.join(folder, row["problem"]), os.path.join(folder, "kernels", row["id"] + ".py"))
            result = "Tensor" if len(row["outputs"]) == 1 else "(" + ", ".join(["Tensor"] * len(row["outputs"])) + ")"
            with open(os.path.join(folder, "kernels", row["id"] + "_load.py"), "w", encoding="utf-8") as f:
                f.write(FAKE_LOADER.format(problem_file=row["id"] + ".py", op=row["id"], inputs=len(row["inputs"]),
                                           attrs=row["attrs"], result=result))
            winners.append({"problem": row["id"], "loader": f"kernels/{row['id']}_load.py"})
        with open(os.path.join(folder, "winners.json"), "w", encoding="utf-8") as f:
            json.dump({"winners": winners, "considered": []}, f)
        written = assemble(folder)
        return folder, written, len(winners)

    def _models(self, folder, written):
        program = ProblemFile(os.path.join(MODELS, "mlp_stack.py")).load()
        original = program.build_model(3, "cpu")
        os.environ["KFORGE_MODEL_REGIONS"] = "kernels"
        self.addCleanup(os.environ.pop, "KFORGE_MODEL_REGIONS", None)
        assembled = ProblemFile(written["assembled"]).load().build_model(3, "cpu")
        assembled.load_state_dict(original.state_dict())
        return original, assembled, program.make_inputs(4, "cpu")

    def test_each_replaced_region_is_its_operator_called_from_the_staged_graph(self):
        folder, written, count = self._assemble()
        self.assertEqual(len(written["replaced"]), count)
        original, assembled, inputs = self._models(folder, written)
        with torch.no_grad():
            want = original(*inputs)
            got = assembled(*inputs)
            got_again = assembled(*inputs)
        self.assertTrue(torch.allclose(want, got, rtol=1e-5, atol=1e-6))
        self.assertTrue(torch.equal(got, got_again))
        assembly = assembled.__dict__["_kforge_assembly"]
        gm = next(iter(assembly.staged.values()))[0]
        called = [n.target for n in gm.graph.nodes if n.op == "call_function"]
        ops = [t for t in called if isinstance(t, torch._ops.OpOverload) and t.namespace.startswith("kforge_cpu_")]
        self.assertEqual(len(ops), count)
        self.assertTrue(all(isinstance(t, torch._ops.OpOverload) or t is operator.getitem for t in called))
        self.assertTrue(all(e.order for e in assembly.exported.values()))

    def test_regions_left_to_inductor_are_the_models_own_operators_under_compile_only(self):
        folder, written, count = self._assemble()
        original, assembled, inputs = self._models(folder, written)
        with torch.no_grad():
            assembled(*inputs)
        assembly = assembled.__dict__["_kforge_assembly"]
        keep = sorted(assembly.exported)[:1]
        assembly.set_under_compile(keep)
        entry = next(iter(assembly.staged.values()))

        def kforge_ops(gm):
            return [n.target for n in gm.graph.nodes if n.op == "call_function"
                    and isinstance(n.target, torch._ops.OpOverload) and n.target.namespace.startswith("kforge_cpu_")]
        self.assertEqual(len(kforge_ops(entry[0])), count)  # eager: every replaced region
        self.assertEqual(len(kforge_ops(entry[1])), 1)      # under torch.compile: the one kept
        with torch.no_grad():
            got = cap.unflatten_output(entry[2], entry[1](*entry[3], *inputs))
            self.assertTrue(torch.allclose(original(*inputs), got, rtol=1e-5, atol=1e-6))

    @unittest.skipUnless(HAS_FAKE, f"torch {torch.__version__} has no torch.library.register_fake (2.4+)")
    def test_the_assembled_model_compiles_with_its_operators_in_the_graph(self):
        folder, written, count = self._assemble()
        original, assembled, inputs = self._models(folder, written)
        with torch.no_grad():
            want = original(*inputs)
            assembled(*inputs)  # the first call captures the model, eagerly
            compiled = torch.compile(assembled)
            got = compiled(*inputs)
        self.assertTrue(torch.allclose(want, got, rtol=1e-4, atol=1e-5))


class ProblemFileTest(unittest.TestCase):
    def _extract(self, path, **kw):
        out = tempfile.TemporaryDirectory()
        self.addCleanup(out.cleanup)
        doc = extract(path, out.name, "cpu", None, 0.0, False, **kw)
        return out.name, doc

    def test_a_permuted_live_in_is_drawn_as_it_lies_in_memory(self):
        path = support.problem_file(self, PERMUTED)
        model, inputs, captured, part, state = _cut(path)
        out, doc = self._extract(path)
        region = next(r for r in part.regions if r.name == "gemm_relu_add")
        row = next(r for r in doc["regions"] if r["key"] == runtime.region_key(part, region))
        program = ProblemFile(os.path.join(out, row["problem"])).load()
        drawn = program.make_inputs(3, "cpu")
        self.assertEqual(tuple(drawn[0].shape), (3, 16, 8))  # x's own order, not the transposed view's
        self.assertTrue(drawn[0].is_contiguous())
        problem = program.build_model(0, "cpu")
        index_of = {n: i for i, n in enumerate(captured.placeholders())}
        for attr, node in zip(row["attrs"], region.state):
            getattr(problem, attr).data.copy_(state[index_of[node]])
        with torch.no_grad():
            got = problem(*[reg.as_problem_input(n, n.meta["kforge_value"]) for n in region.inputs])
        self.assertTrue(torch.allclose(got, region.outputs[0].meta["kforge_value"], rtol=1e-5, atol=1e-6))

    def test_a_constant_parameter_is_drawn_perturbed(self):
        out, doc = self._extract(os.path.join(MODELS, "gpt_block.py"))
        row = next(r for r in doc["regions"] if r["name"] == "layernorm")
        program = ProblemFile(os.path.join(out, row["problem"])).load()
        problem = program.build_model(0, "cpu")
        weight, bias = (getattr(problem, a) for a in row["attrs"])
        self.assertGreater(weight.std().item(), 0.05)  # the model's is all ones
        self.assertGreater(bias.abs().max().item(), 0.05)  # the model's is all zeros
        self.assertAlmostEqual(weight.mean().item(), 1.0, delta=0.05)

    def test_an_rmsnorm_is_estimated_as_eager_runs_it(self):
        path = support.problem_file(self, RMSNORM)
        _, _, _, part, _ = _cut(path)
        (region,) = part.regions
        flops, fused_bytes, seconds = estimate.region_work(region)
        self.assertGreater(seconds, 5 * fused_bytes / estimate.BANDWIDTH)
        self.assertGreaterEqual(seconds, 6 * estimate.KERNEL_FLOOR)  # pow, mean, add, rsqrt, mul, mul

    def test_a_model_too_large_to_capture_is_refused_before_any_tensor_is_made(self):
        from kforge_torch.model.memory import TooLarge, check_capture_memory
        large = support.problem_file(self, """
            import torch
            batch_size = 1 << 20
            width = 1 << 16
            class Model(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = torch.nn.Linear(width, 8)
                def forward(self, x):
                    return torch.relu(self.proj(x * 2.0))
            def get_inputs():
                return [torch.randn(batch_size, width)]
            def get_init_inputs():
                return []
        """)  # its input alone is 256 GiB: made for real, it would take the machine down
        logged = []
        with self.assertRaisesRegex(TooLarge, "256.00 GiB.*--sizes"):
            check_capture_memory(ProblemFile(large), None, "cpu", logged.append)
        small = support.problem_file(self, RMSNORM)
        check_capture_memory(ProblemFile(small), None, "cpu", logged.append)
        self.assertTrue(any("the capture needs about" in line for line in logged))

    def test_a_missing_torch_api_names_the_version_it_needs(self):
        error = torch_too_old(AttributeError("module 'torch.nn.functional' has no attribute "
                                             "'scaled_dot_product_attention'"))
        self.assertIn("torch 2.0 or later", str(error))
        self.assertIn(torch.__version__, str(error))
        self.assertIsNone(torch_too_old(AttributeError("'NoneType' object has no attribute 'device'")))

    @unittest.skipIf(HAS_SDPA, "this torch has scaled_dot_product_attention")
    def test_the_llama_block_on_an_old_torch_says_which_torch_it_needs(self):
        from kforge_torch.model.sizes import TorchTooOld
        with self.assertRaisesRegex(TorchTooOld, "scaled_dot_product_attention.*torch 2.0"):
            self._extract(os.path.join(MODELS, "llama_block.py"),
                          sizes={"batch_size": 1, "seq_len": 16, "dim": 128, "ffn_dim": 256})

    @unittest.skipUnless(HAS_SDPA, f"torch {torch.__version__} has no scaled_dot_product_attention (2.0+)")
    def test_llama_block_regions_run_at_other_sizes(self):
        sizes = {"batch_size": 2, "seq_len": 32, "dim": 256, "ffn_dim": 512}
        model, inputs, captured, part, state = _cut(os.path.join(MODELS, "llama_block.py"), sizes)
        out, doc = self._extract(os.path.join(MODELS, "llama_block.py"), sizes=sizes)
        self.assertEqual(doc["size_symbols"], {"batch_size": 2, "seq_len": 32})
        names = [r["name"] for r in sorted(doc["regions"], key=lambda r: r["id"])]
        self.assertIn("attention", names)
        index_of = {n: i for i, n in enumerate(captured.placeholders())}
        by_key = {r["key"]: r for r in doc["regions"]}
        for region in part.regions:
            row = by_key[runtime.region_key(part, region)]
            program = ProblemFile(os.path.join(out, row["problem"])).load()
            with open(os.path.join(out, row["problem"]), encoding="utf-8") as f:
                text = f.read()
            self.assertNotIn("x0.device", text)
            self.assertNotIn("_scaled_dot_product_flash", text)
            problem = program.build_model(0, "cpu")
            for attr, node in zip(row["attrs"], region.state):
                getattr(problem, attr).data.copy_(state[index_of[node]])
            with torch.no_grad():  # the model's own values, as the model hands them over
                got = problem(*[reg.as_problem_input(n, n.meta["kforge_value"]) for n in region.inputs])
            for g, node in zip(got if isinstance(got, tuple) else [got], region.outputs):
                self.assertTrue(torch.allclose(g.float(), node.meta["kforge_value"].float(), rtol=2e-2, atol=2e-2),
                                row["id"])
            # and at other sizes than the model's (the importer's test shapes)
            other = ProblemFile(os.path.join(out, row["problem"])).load({"batch_size": 3, "seq_len": 17})
            with torch.no_grad():
                other.build_model(0, "cpu")(*other.make_inputs(5, "cpu"))


if __name__ == "__main__":
    unittest.main()
