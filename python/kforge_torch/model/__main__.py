"""`python3 -m kforge_torch.model {profile,extract,assemble,check} ... [--result FILE]`: kforge model's
PyTorch side.

`kforge model` runs these in a killable child (as `task import` runs the importer) and reads the one
JSON object each writes: the result, or {"error": "..."} with exit 1. With `--result FILE` it goes to
FILE (kforge passes a fresh file of its own, so that nothing the model prints, even through fd 1,
can stand in for the result); without, to stdout. What the model's own file prints goes to stderr.
"""
import argparse
import contextlib
import json
import math
import sys
import traceback


class _Parser(argparse.ArgumentParser):
    result_out = None

    def error(self, message):
        _Parser.result_out.write({"error": f"usage: {message}"})
        sys.exit(1)


def _safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_safe(v) for v in value]
    return value


def _sizes(text):
    """`batch_size=2,seq_len=64` -> {"batch_size": 2, "seq_len": 64}."""
    from .shim import ShimError
    out = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        name, _, value = item.partition("=")
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise ShimError(f"--sizes '{text}': expected name=integer pairs, e.g. batch_size=2,seq_len=64") from None
        if out[name.strip()] < 1:
            raise ShimError(f"--sizes '{text}': {name.strip()} = {out[name.strip()]}: a size is a whole number of "
                            "at least 1 (a problem of size 0 has nothing to compute)")
    return out


def _device(text):
    import torch
    if text == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if text.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("--device cuda: this torch sees no CUDA device")
    return text


class _Result:
    """Where the one JSON object goes: FILE (written whole, then renamed) or stdout."""

    def __init__(self, argv):
        self.path = None
        if "--result" in argv:
            at = argv.index("--result")
            self.path = argv[at + 1] if at + 1 < len(argv) else None
            del argv[at:at + 2]
        self.stdout = sys.stdout

    def write(self, value):
        text = json.dumps(value)
        if self.path is None:
            print(text, file=self.stdout)
            return
        import os
        partial = self.path + ".partial"
        with open(partial, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(partial, self.path)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    result_out = _Result(argv)
    _Parser.result_out = result_out
    parser = _Parser(prog="python3 -m kforge_torch.model")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("profile", "extract"):
        p = sub.add_parser(name)
        p.add_argument("model")
        p.add_argument("-o", "--output", required=True)
        p.add_argument("--device", default="auto")
        p.add_argument("--top", type=int)
        p.add_argument("--min-share", type=float, default=0.02)
        p.add_argument("--no-measure", action="store_true")
        p.add_argument("--model-class")
        p.add_argument("--inputs")
        p.add_argument("--init-inputs", default="[]")
        p.add_argument("--sizes", default="", help="name=value,...: module variables rebound first")
    p = sub.add_parser("assemble")
    p.add_argument("folder")
    p = sub.add_parser("check")
    p.add_argument("folder")
    p.add_argument("--device", default="auto")
    p.add_argument("--mode", default="auto", choices=("auto", "kernels", "reference"))
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
    except Exception as e:
        result_out.write({"error": f"{sys.executable} cannot import torch ({type(e).__name__}: {e})"})
        return 1
    from ..problem import ProblemError
    from .shim import ShimError, write_shim
    from .memory import TooLarge
    from .sizes import TorchTooOld
    try:
        with contextlib.redirect_stdout(sys.stderr):
            if args.command in ("profile", "extract"):
                from .extract import extract
                if args.model_class:
                    if not args.inputs:
                        raise ShimError("--model-class needs --inputs (an expression that makes the forward's "
                                         "inputs, e.g. \"[torch.randn(8, 512)]\")")
                    args.model = write_shim(args.model, args.model_class, args.inputs, args.init_inputs, args.output)
                result = extract(args.model, args.output, _device(args.device), args.top, args.min_share,
                                 not args.no_measure, write=args.command == "extract", sizes=_sizes(args.sizes))
            elif args.command == "assemble":
                from .assemble import assemble
                result = assemble(args.folder)
            else:
                from .assemble import check
                result = check(args.folder, _device(args.device), args.mode)
    except ProblemError as e:
        result_out.write({"error": str(e)})
        return 1
    except ShimError as e:  # --model-class, --inputs
        result_out.write({"error": str(e)})
        return 1
    except (TorchTooOld, TooLarge) as e:
        result_out.write({"error": str(e)})
        return 1
    except Exception as e:
        where = traceback.extract_tb(e.__traceback__)[-1]
        first = str(e).strip().splitlines()[0][:500] if str(e).strip() else ""
        result_out.write({"error": f"{type(e).__name__}: {first} (at {where.filename.rsplit('/', 1)[-1]}:"
                                   f"{where.lineno})"})
        traceback.print_exc(file=sys.stderr)
        return 1
    result_out.write(_safe(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
