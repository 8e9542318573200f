"""A KernelBench-format problem file: loading it with its sizes rebound, and running it under seeds.

A problem is one Python file with `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()` and
module-level variables that set its sizes. To run it at other sizes, the file is parsed and every
top-level assignment to a rebound name gets the new value before the module runs, so values the file
computes from it (`hidden = dim * 4`) follow, exactly as if the user had edited the number. An int
element of a module-level literal tuple of ints is rebound the same way under its own name
(`input_shape = (32768,)` gives `input_shape_0`): that element of the literal is rewritten. Models
and inputs are made under `torch.manual_seed` and inside `DeviceMode`, so the same seeds give the
same tensors on the same device, made where they will be used.

Everything the program does wrong becomes a `ProblemError` whose message names what was called, the
exception's last line and the line of the problem file where it was raised: the importer prints it
as `{"error": ...}` and the reference process replies with it.
"""
import ast
import inspect
import numbers
import os
import sys
import traceback
import types

import torch

from .device_mode import DeviceMode
from .model_state import quiet_random_modules, remember_state, restore_state

DTYPE_NAMES = {
    torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64",
    torch.int8: "i8", torch.uint8: "u8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
    torch.bool: "u8",
}
TORCH_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
                "i8": torch.int8, "u8": torch.uint8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64}
KNOWN_DTYPES = "f16 bf16 f32 f64 i8 u8 i16 i32 i64"


# The process that loaded this module. A program that forks (os.fork() at import, in get_inputs, in
# forward) leaves a copy of the importer or of the reference process running on in the child: it
# would print a second result, or read the worker's next request, and fork again at every run of
# the program. The copy ends as soon as the program's code hands back to kforge's.
_OWNER_PID = os.getpid()


def _leave_if_forked():
    if os.getpid() != _OWNER_PID:
        os._exit(0)


class ProblemError(Exception):
    """The problem file is not a usable KernelBench problem; the message says why and where.
    `cause` is the program's own exception where there was one."""

    def __init__(self, message, cause=None):
        super().__init__(message)
        self.cause = cause


def dtype_name(dtype, what):
    """kforge's name of a torch dtype (`torch.bool` is `u8`); a ProblemError for one it lacks."""
    name = DTYPE_NAMES.get(dtype)
    if name is None:
        raise ProblemError(f"{what} has dtype {str(dtype).replace('torch.', '')}, which kforge has no "
                           f"name for (kforge's dtypes: {KNOWN_DTYPES})")
    return name


def raised(what, error, path):
    """A ProblemError for `error` raised while doing `what`, pointing at the problem file's line."""
    text = str(error).strip().splitlines()
    message = f"{type(error).__name__}: {text[-1] if text else ''}".rstrip(": ")
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename) == path:
            line = frame.lineno
    where = f" ({os.path.basename(path)} line {line})" if line else ""
    return ProblemError(f"{what} raises {message}{where}{_environment_hint(error)}", error)


def _environment_hint(error):
    """What to do where the program needs more than this python3 has: a module it lacks, or a torch
    API newer than its torch (KernelBench's attention problems call F.scaled_dot_product_attention,
    which torch 2.0 added)."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        return (f"; {sys.executable} has no module {error.name.split('.')[0]}: install it for that python3, or "
                "point KFORGE_PYTHON at one that has it")
    if isinstance(error, AttributeError) and isinstance(getattr(error, "obj", None), types.ModuleType) \
            and getattr(error.obj, "__name__", "").split(".")[0] == "torch":
        return (f"; this PyTorch ({torch.__version__}) has no {error.obj.__name__}.{error.name}: import with a "
                "newer one (KFORGE_PYTHON)")
    if isinstance(error, AttributeError) and str(error).startswith("module 'torch"):
        return f"; this PyTorch ({torch.__version__}) lacks it: import with a newer one (KFORGE_PYTHON)"
    return ""


class ProblemFile:
    """One problem file, parsed once; `load(sizes)` runs it with module variables rebound."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        try:
            with open(self.path, encoding="utf-8") as f:
                self.source = f.read()
        except OSError as e:
            raise ProblemError(f"cannot read {path}: {e.strerror}") from None
        except UnicodeDecodeError as e:
            raise ProblemError(f"{path} is not UTF-8 text: {e}") from None
        try:
            self.tree = ast.parse(self.source, filename=self.path)
        except SyntaxError as e:
            raise ProblemError(f"{os.path.basename(self.path)} line {e.lineno}: SyntaxError: {e.msg}") from None
        except ValueError as e:  # before Python 3.12 a NUL byte is a ValueError, not a SyntaxError
            raise ProblemError(f"{os.path.basename(self.path)}: {e}") from None
        self._code = {}  # compiled code by rebound sizes
        self.top_level_names = set()
        for node in self.tree.body:
            for target in _assigned_targets(node):
                self.top_level_names.update(_names_in(target))
        self.tuple_elements = _tuple_elements(self.tree, self.top_level_names)

    def load(self, sizes=None):
        """Runs the file with each name in `sizes` rebound to its value; a Program."""
        sizes = dict(sizes or {})
        for name in sizes:
            if name not in self.top_level_names and name not in self.tuple_elements:
                raise ProblemError(f"{name} is not a variable assigned at the top level of "
                                   f"{os.path.basename(self.path)}, so it cannot be rebound")
        key = tuple(sorted(sizes.items()))
        code = self._code.get(key)
        if code is None:
            tree = ast.parse(self.source, filename=self.path) if sizes else self.tree
            if sizes:
                elements = {}  # tuple variable -> {index: value}
                for name, value in sizes.items():
                    if name in self.tuple_elements:
                        variable, index = self.tuple_elements[name]
                        elements.setdefault(variable, {})[index] = value
                plain = {k: v for k, v in sizes.items() if k not in self.tuple_elements}
                tree.body = [rebound for node in tree.body
                             for rebound in _rebind(_rebind_elements(node, elements), plain,
                                                    os.path.basename(self.path))]
            code = compile(ast.fix_missing_locations(tree), self.path, "exec")
            if len(self._code) > 256:
                self._code.clear()
            self._code[key] = code
        module = types.ModuleType("kforge_problem_" + _identifier(os.path.basename(self.path)[:-3]))
        module.__file__ = self.path
        sys.modules[module.__name__] = module  # for tools that look a class's module up (torch.compile)
        try:
            exec(code, module.__dict__)
        except (Exception, SystemExit) as e:  # sys.exit() in the file is the file's failure too
            raise raised(f"running {os.path.basename(self.path)}", e, self.path) from None
        finally:
            _leave_if_forked()
        for name, value in sizes.items():
            if self.value_of(name, module.__dict__) != value:
                raise ProblemError(f"rebinding {name} to {value} did not hold: the file changes it after "
                                   "assigning it")
        return Program(self, module.__dict__)

    def value_of(self, name, namespace):
        """The value of module variable or tuple element `name` in `namespace`; None where it has none."""
        if name not in self.tuple_elements:
            return namespace.get(name)
        variable, index = self.tuple_elements[name]
        value = namespace.get(variable)
        return value[index] if isinstance(value, tuple) and index < len(value) else None


def _assigned_targets(node):
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return [node.target]
    return []


def _names_in(target):
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for element in target.elts for n in _names_in(element)]
    return []


def _int_tuple_literal(node):
    """Whether `node` is a literal tuple whose every element is an int literal (not a bool): `(32768,)`."""
    return (isinstance(node, ast.Tuple) and node.elts
            and all(isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts))


def _tuple_elements(tree, top_level_names):
    """Each int element of a module-level tuple of int literals (`input_shape = (32768,)`), by the name
    it is rebound under: `input_shape_0` -> ("input_shape", 0). Only a variable assigned on its own
    (one target, a name) counts; private names (a leading `_`) do not, as for module_vars. A name
    another top-level variable or an earlier element already has gets `_2` (then `_3`...)."""
    elements, taken = {}, set(top_level_names)
    for node in tree.body:
        targets = _assigned_targets(node)
        if (len(targets) != 1 or not isinstance(targets[0], ast.Name) or targets[0].id.startswith("_")
                or not _int_tuple_literal(node.value)):
            continue
        variable = targets[0].id
        if any(v == variable for v, _ in elements.values()):
            continue  # assigned twice: the first assignment names its elements
        for index in range(len(node.value.elts)):
            base = f"{variable}_{index}"
            name, n = base, 2
            while name in taken:
                name, n = f"{base}_{n}", n + 1
            taken.add(name)
            elements[name] = (variable, index)
    return elements


def _rebind_elements(node, elements):
    """`node` with the literal tuple it assigns to a variable of `elements` given the new element
    values (`elements[variable]` maps an index to its value); the other elements keep the file's."""
    targets = _assigned_targets(node)
    if (elements and len(targets) == 1 and isinstance(targets[0], ast.Name) and targets[0].id in elements
            and _int_tuple_literal(node.value)):
        for index, value in elements[targets[0].id].items():
            if index < len(node.value.elts):
                node.value.elts[index] = ast.copy_location(ast.Constant(value), node.value.elts[index])
    return node


_CHAIN = "_kforge_chained_value"


def _rebind(node, sizes, filename):
    """The statements that replace `node`: itself, with each assignment to a name of `sizes` given
    that name's value. A chained assignment (`height = width = 128`, common in KernelBench files)
    becomes one assignment per target from a temporary, so each name can be rebound on its own."""
    targets = _assigned_targets(node)
    names = [n for t in targets for n in _names_in(t) if n in sizes]
    if not names:
        return [node]
    if len(targets) > 1 and all(isinstance(t, ast.Name) for t in targets):
        first = ast.Assign(targets=[ast.Name(_CHAIN, ast.Store())], value=node.value)
        each = [ast.Assign(targets=[t], value=ast.Constant(sizes[t.id]) if t.id in sizes
                           else ast.Name(_CHAIN, ast.Load())) for t in targets]
        statements = [first] + each + [ast.Delete(targets=[ast.Name(_CHAIN, ast.Del())])]
        return [ast.copy_location(statement, node) for statement in statements]
    if len(targets) == 1 and isinstance(targets[0], ast.Name):
        node.value = ast.Constant(sizes[targets[0].id])
        return [node]
    if (len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List))
            and isinstance(node.value, (ast.Tuple, ast.List))
            and len(node.value.elts) == len(targets[0].elts)
            and all(isinstance(t, ast.Name) for t in targets[0].elts)):
        for i, target in enumerate(targets[0].elts):
            if target.id in sizes:
                node.value.elts[i] = ast.Constant(sizes[target.id])
        return [node]
    raise ProblemError(f"cannot rebind {names[0]}: {filename} line {node.lineno} assigns it together with "
                       "other names from one value that is not a literal tuple; give it an assignment of its own")


def _identifier(text):
    return "".join(c if c.isalnum() else "_" for c in text)


class Program:
    """A problem file run once at some sizes: its Model, input functions and module variables."""

    def __init__(self, problem_file, namespace):
        self.file = problem_file
        self.path = problem_file.path
        self.namespace = namespace
        name = os.path.basename(self.path)
        missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not callable(namespace.get(n))]
        if missing:
            raise ProblemError(f"{name} defines no {' and no '.join(missing)}; a KernelBench problem defines "
                               "class Model(nn.Module), get_inputs() and get_init_inputs()")
        self.Model = namespace["Model"]
        self.random_modules = []  # the dropout modules the last build_model quieted
        if not (isinstance(self.Model, type) and issubclass(self.Model, torch.nn.Module)):
            raise ProblemError(f"{name}: Model is not a torch.nn.Module subclass")

    def module_vars(self):
        """The file's module-level numbers (ints, floats, bools) after it ran, by name, then each int
        element of a module-level literal tuple of ints under its element name (`input_shape_0`)."""
        found = {k: v for k, v in self.namespace.items()
                 if not k.startswith("_") and isinstance(v, (bool, int, float)) and k in self.file.top_level_names}
        for name in self.file.tuple_elements:
            value = self.file.value_of(name, self.namespace)
            if type(value) is int:
                found[name] = value
        return found

    def build_model(self, param_seed, device):
        """`Model(*get_init_inputs())` under `param_seed`, made on `device`, in the mode its constructor
        leaves it (training, as KernelBench runs it) but with dropout quieted, its state remembered so
        that `run_forward` leaves it as built (model_state.py says why). `random_modules` lists the
        dropout modules quieted."""
        torch.manual_seed(param_seed)
        with DeviceMode(device):
            init = self._call("get_init_inputs()", self.namespace["get_init_inputs"])
            if not isinstance(init, (list, tuple)):
                raise ProblemError(f"get_init_inputs() returned a {type(init).__name__}, not a list")
            model = self._call("Model(*get_init_inputs())", self.Model, *init)
        if not isinstance(model, torch.nn.Module):
            raise ProblemError(f"Model(*get_init_inputs()) gave a {type(model).__name__}, not an nn.Module")
        self.random_modules = quiet_random_modules(model)
        remember_state(model)
        return model

    def make_inputs(self, input_seed, device):
        """`get_inputs()` under `input_seed` with `device` as the default device; a list of tensors
        and Python numbers."""
        torch.manual_seed(input_seed)
        with DeviceMode(device):
            values = self._call("get_inputs()", self.namespace["get_inputs"])
        if not isinstance(values, (list, tuple)):
            raise ProblemError(f"get_inputs() returned a {type(values).__name__}, not a list of tensors and "
                               "numbers")
        for i, value in enumerate(values):
            if not isinstance(value, (torch.Tensor, numbers.Number)) or isinstance(value, complex):
                raise ProblemError(f"get_inputs() returned a {type(value).__name__} at position {i}; forward "
                                   "inputs must be tensors or Python numbers")
            if isinstance(value, torch.Tensor) and value.device.type not in ("cpu", torch.device(device).type):
                raise ProblemError(f"get_inputs() returned a tensor on the {value.device} device at position {i}; "
                                   "inputs must hold their data (made without a device, on the GPU or on the CPU)")
        return list(values)

    def run_forward(self, model, inputs, device):
        """`model(*inputs)` without gradients: (list of output tensors, whether it was a tuple/list). The
        model's buffers and tensor attributes are as before the call afterwards."""
        with torch.no_grad(), DeviceMode(device):
            try:
                out = self._call("Model.forward", model, *inputs)
            finally:
                restore_state(model)
        if isinstance(out, torch.Tensor):
            return [out], False
        if isinstance(out, (tuple, list)) and out and all(isinstance(t, torch.Tensor) for t in out):
            return list(out), True
        kinds = type(out).__name__
        if isinstance(out, (tuple, list)):
            kinds += " of " + ", ".join(sorted({type(t).__name__ for t in out})) if out else " (empty)"
        raise ProblemError(f"forward returned a {kinds}, not a tensor or a tuple/list of tensors")

    def _call(self, what, fn, *args):
        try:
            return fn(*args)
        except ProblemError:
            raise
        except (Exception, SystemExit) as e:
            raise raised(what, e, self.path) from None
        finally:
            _leave_if_forked()


def forward_input_names(model_class, count):
    """Names of the first `count` forward inputs: parameter names, `in{i}` for `*args` and extras."""
    try:
        parameters = list(inspect.signature(model_class.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        parameters = []
    names = []
    for p in parameters:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return [names[i] if i < len(names) else f"in{i}" for i in range(count)]


_RESERVED = set("""auto bool break case char class const constexpr continue default delete do double else enum
extern float for goto if inline int long namespace new operator private protected public register restrict return
short signed sizeof static struct switch template this throw typedef typename union unsigned using virtual void
volatile while half threadIdx blockIdx blockDim gridDim warpSize""".split())


class Namer:
    """Unique argument names: a name taken by an earlier one, a size symbol or a C++ keyword gets `_2`."""

    def __init__(self, symbols):
        self.taken = set(symbols) | _RESERVED

    def unique(self, name):
        candidate, n = name, 2
        while candidate in self.taken:
            candidate, n = f"{name}_{n}", n + 1
        self.taken.add(candidate)
        return candidate


def param_arg_name(key):
    """`gemm.weight` -> `gemm_weight`; a name that would start with a digit gets `p_`."""
    name = _identifier(key)
    return "p_" + name if name[:1].isdigit() else name
