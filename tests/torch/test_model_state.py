"""model_state.py (through problem.py, layout.py and facts.py): the mode a model runs in, every tensor it
holds, and its state kept the same from call to call."""
import unittest

import torch

from support import problem_file
from kforge_torch.facts import import_problem
from kforge_torch.layout import check_memory, run_real
from kforge_torch.problem import ProblemError, ProblemFile

BATCHNORM = """
    import torch
    import torch.nn as nn

    batch_size = 6
    channels = 3
    width = 5

    class Model(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.bn = nn.BatchNorm1d(channels)

        def forward(self, x):
            return self.bn(x)

    def get_inputs():
        return [torch.rand(batch_size, channels, width) * 4 + 2]

    def get_init_inputs():
        return [channels]
"""

# An LSTM-style initial state drawn in __init__ as plain attributes, one rebound in forward (the
# KernelBench LSTM's `self.c0 = self.h0.to(x.device)`), and a non-persistent buffer.
ATTRIBUTES = """
    import torch
    import torch.nn as nn

    batch_size = 4
    hidden = 8

    class Model(nn.Module):
        def __init__(self, hidden):
            super().__init__()
            self.h0 = torch.randn(batch_size, hidden)
            self.c0 = torch.randn(batch_size, hidden)
            self.register_buffer("shift", torch.randn(hidden), persistent=False)
            self.proj = nn.Linear(hidden, hidden)

        def forward(self, x):
            self.c0 = self.h0.to(x.device)
            return self.proj(x + self.h0 * self.c0) + self.shift

    def get_inputs():
        return [torch.randn(batch_size, hidden)]

    def get_init_inputs():
        return [hidden]
"""

# A forward whose output depends on state it changes: a counter buffer.
COUNTER = """
    import torch
    import torch.nn as nn

    n = 8

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(1))

        def forward(self, x):
            self.calls += 1
            return x * self.calls

    def get_inputs():
        return [torch.randn(n)]

    def get_init_inputs():
        return []
"""


class Mode(unittest.TestCase):
    def test_batchnorm_runs_in_training_mode_as_kernelbench_runs_it(self):
        program = ProblemFile(problem_file(self, BATCHNORM)).load()
        model = program.build_model(2, "cpu")
        x = program.make_inputs(1, "cpu")[0]
        out = program.run_forward(model, [x], "cpu")[0][0]
        mean = x.double().mean(dim=(0, 2), keepdim=True)
        var = x.double().var(dim=(0, 2), unbiased=False, keepdim=True)
        expected = (x.double() - mean) / torch.sqrt(var + 1e-5)  # weight 1, bias 0 as built
        self.assertLess(float((out.double() - expected).abs().max()), 1e-5)

    def test_forwards_leave_the_running_statistics_as_built(self):
        program = ProblemFile(problem_file(self, BATCHNORM)).load()
        model = program.build_model(2, "cpu")
        x = program.make_inputs(1, "cpu")[0]
        for _ in range(2):
            program.run_forward(model, [x], "cpu")
        self.assertTrue(torch.equal(model.bn.running_mean, torch.zeros(3)))
        self.assertTrue(torch.equal(model.bn.running_var, torch.ones(3)))
        self.assertEqual(int(model.bn.num_batches_tracked), 0)

    def test_an_output_that_depends_on_state_the_forward_changes_is_the_same_every_call(self):
        program = ProblemFile(problem_file(self, COUNTER)).load()
        model = program.build_model(2, "cpu")
        x = program.make_inputs(1, "cpu")[0]
        first = program.run_forward(model, [x], "cpu")[0][0]
        second = program.run_forward(model, [x], "cpu")[0][0]
        self.assertTrue(torch.equal(first, x) and torch.equal(second, x))
        run = run_real(ProblemFile(problem_file(self, COUNTER)), {}, 1, 2, "cpu")
        self.assertEqual(float(run.state["calls"]), 0.0)  # what kernels get: the state the forward starts from
        self.assertTrue(torch.equal(run.outputs64[0], run.inputs[0].double()))

    def test_dropout_is_quieted_with_a_note_and_the_mode_is_described(self):
        source = BATCHNORM.replace("return self.bn(x)", "return self.drop(self.bn(x))").replace(
            "self.bn = nn.BatchNorm1d(channels)", "self.bn = nn.BatchNorm1d(channels)\n"
            "            self.drop = nn.Dropout(0.25)")
        facts = import_problem(problem_file(self, source))
        self.assertTrue(any("`drop` (Dropout, p=0.25)" in note and "identity" in note for note in facts["notes"]))
        self.assertIn("training mode", facts["mode"])
        self.assertIn("`bn` (BatchNorm1d) normalises with the statistics of the batch", facts["mode"])
        self.assertIn("`drop` (Dropout, p=0.25) is the identity", facts["mode"])

    def test_a_model_without_mode_dependent_modules_has_no_mode_sentence(self):
        facts = import_problem(problem_file(self, COUNTER))
        self.assertEqual(facts["mode"], "")


class HeldTensors(unittest.TestCase):
    def test_plain_tensor_attributes_and_non_persistent_buffers_are_arguments(self):
        facts = import_problem(problem_file(self, ATTRIBUTES))
        params = {a["key"]: a["dims"] for a in facts["args"] if a["role"] == "param"}
        self.assertEqual(params["h0"], ["batch_size", "hidden"])
        self.assertEqual(params["c0"], ["batch_size", "hidden"])
        self.assertEqual(params["shift"], ["hidden"])
        self.assertIn("measured", facts["checks"]["out"])  # the fp64 run converts the attributes too

    def test_an_attribute_the_forward_rebinds_is_restored_with_its_own_values(self):
        problem = ProblemFile(problem_file(self, ATTRIBUTES))
        program = problem.load()
        model = program.build_model(2, "cpu")
        h0, c0 = model.h0.clone(), model.c0.clone()
        x = program.make_inputs(1, "cpu")[0]
        program.run_forward(model, [x], "cpu")
        self.assertTrue(torch.equal(model.h0, h0) and torch.equal(model.c0, c0))
        self.assertIsNot(model.c0, model.h0)
        run = run_real(problem, {}, 1, 2, "cpu")
        own, ref = run.outputs[0].double(), run.outputs64[0]
        self.assertLess(float((own - ref).abs().max()), 1e-5)


class Memory(unittest.TestCase):
    def test_a_run_that_would_not_fit_is_refused_with_its_size(self):
        source = BATCHNORM.replace("batch_size = 6", "batch_size = 1 << 40")
        program = ProblemFile(problem_file(self, source)).load()
        with self.assertRaisesRegex(ProblemError, r"needs about .* GiB .*largest tensor input 0 \[1099511627776, 3, 5\]"):
            check_memory(program, {}, "cpu", fp64=True)


if __name__ == "__main__":
    unittest.main()
