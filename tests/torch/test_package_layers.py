"""The kforge_torch package's modules import one way: no circle, counting imports made inside
functions too (a lazy import is still a dependency). A new circle fails this test, naming it."""
import ast
import os
import unittest

import support

PACKAGE = os.path.join(support.ROOT, "python", "kforge_torch")


def module_name(path):
    rel = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def imports_of(path, name):
    """The package's modules `path` imports (relative imports, resolved)."""
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package.split(".")
            base = base[:len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
            if node.module is None:  # from . import x
                found.update(f"{target}.{alias.name}" for alias in node.names)
            else:
                found.add(target)
    return found


def graph():
    modules = {}
    for folder, _, files in os.walk(PACKAGE):
        for file in files:
            if file.endswith(".py"):
                path = os.path.join(folder, file)
                modules[module_name(path)] = path
    return {name: {m for m in imports_of(path, name) if m in modules and m != name} for name, path in modules.items()}


def find_cycle(edges):
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


class PackageLayersTest(unittest.TestCase):
    def test_no_module_imports_one_that_imports_it_back(self):
        edges = graph()
        self.assertGreater(len(edges), 20)
        cycle = find_cycle(edges)
        self.assertIsNone(cycle, "import circle: " + " -> ".join(cycle or []))

    def test_the_check_sees_a_circle(self):
        self.assertEqual(find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}), ["a", "b", "c", "a"])
        self.assertIsNone(find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}))


if __name__ == "__main__":
    unittest.main()
