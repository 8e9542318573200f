"""An ordinary model file as a KernelBench-form program: `--model-class NAME --inputs EXPR`.

A user's file defines a model class and no get_inputs(); kforge model needs a program whose sizes
are module variables (they follow into the regions' problems). The shim imports the user's file,
names its class Model, and turns every int literal of the inputs expression into a module variable
named after its value (`torch.randn(8, 128, 768)` -> `n8 = 8`, `n128 = 128`, `n768 = 768`), so extract
moves each one alone to see which follow into the regions (equal values move together).
"""
import ast
import os


class ShimError(ValueError):
    pass


class _Lift(ast.NodeTransformer):
    def __init__(self, smallest=1):
        self.sizes = {}
        self.smallest = smallest

    def visit_Constant(self, node):
        if type(node.value) is int and node.value >= self.smallest:
            name = f"n{node.value}"
            self.sizes[name] = node.value
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
        return node


def _expression(text, what):
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ShimError(f"{what} '{text}' is not a Python expression: {e.msg}") from None


def write_shim(model_path, model_class, inputs, init_inputs, out_dir):
    """Writes OUT_DIR/shim/<stem>.py for `model_path`'s `model_class`; returns its path."""
    if not model_class.isidentifier():
        raise ShimError(f"--model-class '{model_class}' is not a Python name")
    lift = _Lift()
    inputs_tree = lift.visit(_expression(inputs, "--inputs"))
    init_tree = _expression(init_inputs, "--init-inputs")
    path = os.path.abspath(model_path)
    stem = os.path.splitext(os.path.basename(path))[0]
    if not stem.isidentifier():
        raise ShimError(f"{os.path.basename(path)}: its name is not importable as a Python module")
    lines = [f'"""{os.path.basename(path)}\'s {model_class} in KernelBench form (kforge model wrote this shim)."""',
             "import os", "import sys", "", "import torch  # noqa: F401  (the inputs expression may use it)", "",
             f"sys.path.insert(0, {os.path.dirname(path)!r})",
             f"import {stem} as _user  # noqa: E402", "",
             "globals().update({k: v for k, v in vars(_user).items() if not k.startswith('__')})", ""]
    lines += [f"{name} = {value}" for name, value in sorted(lift.sizes.items(), key=lambda kv: kv[1])]
    lines += ["", f"Model = _user.{model_class}", "", "",
              "def get_inputs():",
              f"    value = {ast.unparse(inputs_tree.body)}",
              "    return list(value) if isinstance(value, (list, tuple)) else [value]", "", "",
              "def get_init_inputs():",
              f"    value = {ast.unparse(init_tree.body)}",
              "    return list(value) if isinstance(value, (list, tuple)) else [value]", ""]
    folder = os.path.join(out_dir, "shim")
    os.makedirs(folder, exist_ok=True)
    shim = os.path.join(folder, stem + ".py")
    with open(shim, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return shim


def lift_input_literals(model_path, out_dir):
    """A KernelBench file whose get_inputs() writes its sizes as literals (`torch.rand(2, channels,
    image_size, image_size)`): the same file with each int literal >= 2 of get_inputs() made a module
    variable (`n2 = 2`) as the shim does, written to OUT_DIR/shim/<stem>.py; None when get_inputs
    has no such literal."""
    path = os.path.abspath(model_path)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    lift = _Lift(smallest=2)
    for i, node in enumerate(tree.body):
        if isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            tree.body[i] = lift.visit(node)
            break
    if not lift.sizes:
        return None
    at = next(i for i, node in enumerate(tree.body) if isinstance(node, ast.FunctionDef) and node.name == "get_inputs")
    for name, value in sorted(lift.sizes.items(), key=lambda kv: -kv[1]):
        tree.body.insert(at, ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.Constant(value),
                                        lineno=0))
    folder = os.path.join(out_dir, "shim")
    os.makedirs(folder, exist_ok=True)
    shim = os.path.join(folder, os.path.basename(path))
    header = (f"# {os.path.basename(path)} with get_inputs()'s int literals as module variables (kforge model "
              "extract wrote this: it finds the sizes that follow into the regions among module variables)\n")
    with open(shim, "w", encoding="utf-8") as f:
        f.write(header + ast.unparse(ast.fix_missing_locations(tree)) + "\n")
    return shim
