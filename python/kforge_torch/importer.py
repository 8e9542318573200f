"""`python3 -m kforge_torch.importer PROBLEM.py [--symbols a,b] [--device cpu]`: the facts of a problem.

`kforge task import` runs this in a killable child and turns its JSON into a `kforge.task/1` spec;
`facts.import_problem` does the work. This file is the command line: torch is imported only after
the arguments are read, so a missing or broken torch is reported as JSON like any other failure.

On success it prints one JSON object (the facts) on stdout and exits 0; on a problem it prints
`{"error": "..."}` and exits 1. What the problem file prints goes to stderr, never into the JSON.
"""
import argparse
import contextlib
import json
import math
import os
import sys
import traceback


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        print(json.dumps({"error": f"usage: {message}"}))
        sys.exit(1)


def main(argv=None):
    parser = _Parser(prog="python3 -m kforge_torch.importer", description=__doc__.splitlines()[0])
    parser.add_argument("problem", help="a KernelBench-format problem file")
    parser.add_argument("--symbols", help="comma-separated int module variables to use as the size symbols")
    parser.add_argument("--device", default="cpu", help="where the checking forwards run (cpu or cuda)")
    args = parser.parse_args(argv)
    stdout = sys.stdout
    try:
        import torch  # noqa: F401  (a missing torch is the first thing to say)
    except Exception as e:
        print(json.dumps({"error": f"{sys.executable} cannot import torch ({type(e).__name__}: {e})"}), file=stdout)
        return 1
    from .facts import import_problem
    from .problem import ProblemError
    symbols = None if args.symbols is None else [s.strip() for s in args.symbols.split(",") if s.strip()]
    try:
        with contextlib.redirect_stdout(sys.stderr):
            facts = import_problem(args.problem, symbols, args.device)
    except ProblemError as e:
        print(json.dumps({"error": str(e)}), file=stdout)
        return 1
    except Exception as e:  # not the program's own error (those are ProblemErrors): the importer's
        where = traceback.extract_tb(e.__traceback__)[-1]
        print(json.dumps({"error": f"kforge's importer failed on this program ({type(e).__name__}: "
                                   f"{str(e).strip().splitlines()[-1][:500] if str(e).strip() else ''} at "
                                   f"{os.path.basename(where.filename)}:{where.lineno}); if the program is "
                                   "valid PyTorch, please report it with the program"}), file=stdout)
        return 1
    except (SystemExit, KeyboardInterrupt) as e:  # the program's own, not an Exception
        what = f"sys.exit({e.code!r})" if isinstance(e, SystemExit) else "KeyboardInterrupt"
        print(json.dumps({"error": f"{args.problem}: the program raised {what} while it was imported and run"}),
              file=stdout)
        return 1
    print(json.dumps(_json_safe(facts)), file=stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
