"""dims.fit_dim: every documented form is found, in the documented order, and only where it holds."""
import unittest

import support  # noqa: F401
from kforge_torch.dims import fit_dim, moving_symbols

SYMBOLS = ["a", "b", "c"]
SHAPES = [{"a": a, "b": b, "c": c} for a in (5, 6, 7, 8, 9, 10, 11, 12, 13, 17, 33, 64)
          for b, c in ((3, 4), (4, 9), (9, 2), (10, 7))]


def fit(formula):
    points = [(z, formula(z)) for z in SHAPES]
    result = fit_dim(points, SYMBOLS)
    if result is not None:
        assert all(result.evaluate(z) == v for z, v in points), result.text
    return result and result.text


class FitDim(unittest.TestCase):
    def test_each_form_is_found_with_its_constants(self):
        cases = {
            "7": lambda z: 7,
            "a": lambda z: z["a"],
            "b + 3": lambda z: z["b"] + 3,
            "a - 2": lambda z: z["a"] - 2,
            "c * 4": lambda z: z["c"] * 4,
            "a / 4": lambda z: z["a"] // 4,
            "a * 2 + 1": lambda z: (z["a"] - 1) * 2 + 3,     # transposed conv: stride 2, kernel 3, no padding
            "b * 3 - 2": lambda z: (z["b"] - 1) * 3 - 2 + 3 - 0,  # stride 3, kernel 3, padding 1
            "(a - 1) / 2 + 1": lambda z: (z["a"] + 2 - 3) // 2 + 1,   # conv: kernel 3, padding 1, stride 2
            "(a + 1) / 2 + 1": lambda z: (z["a"] + 2 * 2 - 3) // 2 + 1,  # kernel 3, padding 2, stride 2
            "(a - 1) / 8 + 1": lambda z: (z["a"] + 7) // 8,              # ceil-mode pooling, ceil_div(a, 8)
            "a + b": lambda z: z["a"] + z["b"],                      # torch.cat((x, hidden), dim=1)
            "b + c - 1": lambda z: z["b"] + z["c"] - 1,
            "a * b": lambda z: z["a"] * z["b"],
            "a * a": lambda z: z["a"] ** 2,
            "b * c * 3": lambda z: z["b"] * z["c"] * 3,
            "a * b * c": lambda z: z["a"] * z["b"] * z["c"],
        }
        for text, formula in cases.items():
            with self.subTest(text):
                self.assertEqual(fit(formula), text)

    def test_a_dim_no_form_expresses_is_not_fitted(self):
        self.assertIsNone(fit(lambda z: (z["a"] + 7) // 8 * 8))
        self.assertIsNone(fit(lambda z: z["a"] * z["b"] + 1))
        self.assertIsNone(fit(lambda z: z["a"] + z["b"] + z["c"]))

    def test_a_strided_transposed_convolution_gets_an_affine_dim(self):
        # ConvTranspose2d(kernel 3, stride 2, padding 0): (h - 1) * 2 + 3, which no other form gives
        points = [({"h": h}, (h - 1) * 2 + 3) for h in (1, 2, 3, 17, 128, 129, 256)]
        self.assertEqual(fit_dim(points, ["h"]).text, "h * 2 + 1")

    def test_a_constant_dim_beats_every_symbol_form(self):
        points = [({"a": 4}, 4)]
        self.assertEqual(fit_dim(points, ["a"]).text, "4")

    def test_moving_symbols_are_those_whose_change_alone_changes_the_value(self):
        points = [(z, z["a"] * 2) for z in SHAPES]
        self.assertEqual(moving_symbols(points, SYMBOLS), ["a"])


if __name__ == "__main__":
    unittest.main()
