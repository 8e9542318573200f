"""problem.py and device_mode.py: rebinding module variables, running under seeds, naming, errors."""
import unittest

import torch

from support import problem_file
from kforge_torch.device_mode import DeviceMode
from kforge_torch.problem import Namer, ProblemError, ProblemFile, forward_input_names, param_arg_name

SCALED = """
    import torch
    import torch.nn as nn

    batch_size = 8
    dim: int = 16
    hidden = dim * 4
    rows, cols = 3, 5

    class Model(nn.Module):
        def __init__(self, hidden):
            super().__init__()
            self.proj = nn.Linear(dim, hidden)

        def forward(self, x, *rest):
            return self.proj(x)

    def get_inputs():
        return [torch.randn(batch_size, dim)]

    def get_init_inputs():
        return [hidden]
"""


class Rebinding(unittest.TestCase):
    def test_rebound_values_flow_into_values_computed_from_them(self):
        program = ProblemFile(problem_file(self, SCALED)).load({"dim": 3, "cols": 7})
        self.assertEqual(program.module_vars()["hidden"], 12)
        self.assertEqual(program.module_vars()["cols"], 7)
        self.assertEqual(program.module_vars()["rows"], 3)
        model = program.build_model(1, "cpu")
        self.assertEqual(tuple(model.proj.weight.shape), (12, 3))

    def test_a_name_not_assigned_at_the_top_level_cannot_be_rebound(self):
        with self.assertRaisesRegex(ProblemError, "width is not a variable assigned at the top level"):
            ProblemFile(problem_file(self, SCALED)).load({"width": 3})

    def test_each_name_of_a_chained_assignment_is_rebound_on_its_own(self):
        path = problem_file(self, SCALED + "\n    a = b = c = 4\n    d = a * 10 + b\n")
        file = ProblemFile(path)
        self.assertEqual({k: file.load({"b": 5}).namespace[k] for k in "abcd"}, {"a": 4, "b": 5, "c": 4, "d": 45})
        self.assertEqual({k: file.load({"a": 2, "c": 3}).namespace[k] for k in "abcd"},
                         {"a": 2, "b": 4, "c": 3, "d": 24})
        self.assertNotIn("_kforge_chained_value", file.load({"a": 2}).namespace)

    def test_a_name_unpacked_from_a_value_that_is_not_a_literal_tuple_is_refused_with_its_line(self):
        path = problem_file(self, "a, b = divmod(9, 2)\n")
        with self.assertRaisesRegex(ProblemError, "line 1 assigns it together"):
            ProblemFile(path).load({"a": 5})

    def test_a_value_the_file_changes_later_is_reported(self):
        path = problem_file(self, SCALED + "\n    batch_size += 1\n")
        with self.assertRaisesRegex(ProblemError, "rebinding batch_size to 4 did not hold"):
            ProblemFile(path).load({"batch_size": 4})

    def test_each_int_element_of_a_module_level_tuple_is_a_variable_named_by_its_index(self):
        path = problem_file(self, SCALED + "\n    input_shape = (32768, 4)\n    mixed = (3, 0.5)\n"
                                           "    flags = (True,)\n    _hidden = (9,)\n")
        module_vars = ProblemFile(path).load().module_vars()
        self.assertEqual(module_vars["input_shape_0"], 32768)
        self.assertEqual(module_vars["input_shape_1"], 4)
        for name in ("mixed_0", "mixed_1", "flags_0", "_hidden_0", "input_shape"):
            self.assertNotIn(name, module_vars)

    def test_rebinding_a_tuple_element_rewrites_the_literal_and_the_other_elements_keep_their_values(self):
        path = problem_file(self, SCALED + "\n    input_shape = (32768, 4, 6)\n    total = sum(input_shape)\n")
        program = ProblemFile(path).load({"input_shape_1": 7, "dim": 3})
        self.assertEqual(program.namespace["input_shape"], (32768, 7, 6))
        self.assertEqual(program.namespace["total"], 32768 + 7 + 6)
        self.assertEqual(program.module_vars()["input_shape_1"], 7)
        self.assertEqual(program.module_vars()["hidden"], 12)

    def test_a_tuple_element_name_another_variable_has_gets_a_suffix(self):
        path = problem_file(self, SCALED + "\n    shape = (5, 6)\n    shape_0 = 2\n")
        file = ProblemFile(path)
        self.assertEqual(file.tuple_elements, {"shape_0_2": ("shape", 0), "shape_1": ("shape", 1)})
        program = file.load({"shape_0_2": 9})
        self.assertEqual((program.namespace["shape"], program.namespace["shape_0"]), ((9, 6), 2))

    def test_a_tuple_the_file_changes_later_is_reported(self):
        path = problem_file(self, SCALED + "\n    shape = (5, 6)\n    shape = shape[::-1]\n")
        with self.assertRaisesRegex(ProblemError, "rebinding shape_0 to 4 did not hold"):
            ProblemFile(path).load({"shape_0": 4})



class Running(unittest.TestCase):
    def test_the_same_seed_gives_the_same_inputs_and_parameters(self):
        program = ProblemFile(problem_file(self, SCALED)).load()
        a, b = program.make_inputs(5, "cpu"), program.make_inputs(5, "cpu")
        self.assertTrue(torch.equal(a[0], b[0]))
        self.assertFalse(torch.equal(a[0], program.make_inputs(6, "cpu")[0]))
        m1, m2 = program.build_model(9, "cpu"), program.build_model(9, "cpu")
        self.assertTrue(torch.equal(m1.proj.weight, m2.proj.weight))
        self.assertTrue(m1.training)  # as the constructor leaves it, as KernelBench runs it

    def test_a_call_that_raises_names_the_call_and_the_file_line(self):
        path = problem_file(self, SCALED.replace("return [torch.randn(batch_size, dim)]",
                                                 "return [torch.randn(batch_size, dim) / undefined_name]"))
        with self.assertRaisesRegex(ProblemError, r"get_inputs\(\) raises NameError: .*undefined_name.* "
                                                  r"\(problem.py line 19\)"):
            ProblemFile(path).load().make_inputs(0, "cpu")

    def test_a_module_this_python_lacks_and_a_torch_api_newer_than_its_torch_say_what_to_do(self):
        # KernelBench's Mamba problems import einops; its attention ones call
        # F.scaled_dot_product_attention, which torch 2.0 added
        missing = SCALED.replace("    import torch\n", "    import torch\n    import kforge_no_such_module\n", 1)
        path = problem_file(self, missing)
        with self.assertRaisesRegex(ProblemError, r"ModuleNotFoundError: .* \(problem.py line 3\); .* has no module "
                                                  r"kforge_no_such_module: install it .* or point KFORGE_PYTHON"):
            ProblemFile(path).load()
        path = problem_file(self, SCALED.replace("return self.proj(x)",
                                                 "return torch.nn.functional.kforge_attention_of_the_future(x)"))
        program = ProblemFile(path).load()
        with self.assertRaisesRegex(ProblemError, r"this PyTorch \(.*\) has no torch.nn.functional."
                                                  r"kforge_attention_of_the_future: import with a newer one"):
            program.run_forward(program.build_model(1, "cpu"), program.make_inputs(1, "cpu"), "cpu")

    def test_inputs_that_are_not_tensors_or_numbers_are_refused(self):
        path = problem_file(self, SCALED.replace("return [torch.randn(batch_size, dim)]", "return [None]"))
        with self.assertRaisesRegex(ProblemError, "returned a NoneType at position 0"):
            ProblemFile(path).load().make_inputs(0, "cpu")

    def test_a_file_without_get_init_inputs_is_refused(self):
        path = problem_file(self, SCALED.replace("def get_init_inputs", "def init_inputs"))
        with self.assertRaisesRegex(ProblemError, "defines no get_init_inputs"):
            ProblemFile(path).load()


class DevicePlacement(unittest.TestCase):
    def test_factories_without_a_device_and_cuda_requests_land_on_the_target(self):
        with DeviceMode("meta"):
            made = [torch.randn(3), torch.zeros(2, device="cuda"), torch.ones(2).cuda(), torch.ones(2).to("cuda"),
                    torch.nn.Linear(2, 3).weight]
        self.assertTrue(all(t.device.type == "meta" for t in made))

    def test_an_explicit_cpu_tensor_stays_on_the_cpu(self):
        with DeviceMode("meta"):
            self.assertEqual(torch.arange(4, device="cpu").device.type, "cpu")


class Naming(unittest.TestCase):
    def test_names_follow_the_forward_signature_and_args_become_in_n(self):
        class M(torch.nn.Module):
            def forward(self, x, y, *args):
                return x

        self.assertEqual(forward_input_names(M, 4), ["x", "y", "in2", "in3"])

    def test_state_dict_keys_become_identifiers(self):
        self.assertEqual(param_arg_name("gemm.weight"), "gemm_weight")
        self.assertEqual(param_arg_name("0.bias"), "p_0_bias")

    def test_collisions_with_symbols_keywords_and_earlier_names_get_a_suffix(self):
        namer = Namer(["dim"])
        self.assertEqual([namer.unique(n) for n in ("dim", "x", "x", "x", "float")],
                         ["dim_2", "x", "x_2", "x_3", "float_2"])


if __name__ == "__main__":
    unittest.main()
