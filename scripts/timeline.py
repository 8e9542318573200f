#!/usr/bin/env python3
"""What each GPU ran when, from the `timeline` lines of a `kforge optimize --log-level debug` log.

    python3 scripts/timeline.py optimize.log [--gap 0.3]

The GPU evaluator logs when each GPU begins and ends a job (a screen, a confirmation, a held-out
check), a variant of another GPU's sweep, or the final step of another GPU's sweep; the search logs
when it records each item. Under mpirun the controller (rank 0) logs them all, remote GPUs
included. Per GPU this prints its busy time (the union of its spans), its idle gaps longer than
--gap seconds, and its spans in order; then when each item was recorded. Labels: S12, C12, H12 the
screen, confirmation and held-out check of item 12 (the search numbers a job of item N as
3N + kind); v12.3 variant 3 of item 12's sweep run as a helper; F12 the final step of item 12's
sweep run as a helper. A span inside another one (a confirmation run between the variants of a
sweep) is listed where it starts. Times are seconds since the log's first timeline line.
"""
import argparse
import collections
import re
import sys

LINE = re.compile(r"timeline (\d+\.\d+) (\S+) (begin|end) (job|variant|final) (\S+)(?: (\w+))?")
RECORD = re.compile(r"timeline (\d+\.\d+) record (\d+)")
KIND_LETTER = {"screen": "S", "confirm": "C", "held_out": "H"}


def label(what, ticket, kind):
    if what == "job":
        return f"{KIND_LETTER.get(kind, '?')}{int(ticket) // 3}"
    if what == "variant":
        board, index = ticket.split(":")
        return f"v{int(board) // 3}.{index}"
    return f"F{int(ticket) // 3}"


def union_seconds(spans):
    total, end = 0.0, None
    for begin, finish, _ in sorted(spans):
        if end is None or begin > end:
            total += finish - begin
            end = finish
        elif finish > end:
            total += finish - end
            end = finish
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--gap", type=float, default=0.3, help="idle gaps longer than this are shown (seconds)")
    args = parser.parse_args()
    events, records = [], []
    with open(args.log, errors="replace") as f:
        for line in f:
            if m := LINE.search(line):
                events.append(m.groups())
            elif m := RECORD.search(line):
                records.append((float(m.group(1)), int(m.group(2))))
    if not events:
        sys.exit(f"{args.log}: no timeline lines (run kforge with --log-level debug)")
    t0 = min(float(e[0]) for e in events)
    opened, spans = {}, collections.defaultdict(list)
    for t, gpu, edge, what, ticket, kind in events:
        key = (gpu, what, ticket)
        if edge == "begin":
            opened[key] = float(t) - t0
        elif key in opened:
            spans[gpu].append((opened.pop(key), float(t) - t0, label(what, ticket, kind)))
    end = max(finish for gpu_spans in spans.values() for _, finish, _ in gpu_spans)
    for gpu in sorted(spans):
        gpu_spans = sorted(spans[gpu])
        busy = union_seconds(gpu_spans)
        print(f"{gpu}: busy {busy:.1f} s of {end:.1f} s ({100 * busy / end:.0f}%)")
        parts, reached = [], 0.0
        for begin, finish, name in gpu_spans:
            if begin - reached > args.gap:
                parts.append(f"[idle {reached:.1f}-{begin:.1f}]")
            parts.append(f"{name}({begin:.1f}-{finish:.1f})")
            reached = max(reached, finish)
        if end - reached > args.gap:
            parts.append(f"[idle {reached:.1f}-{end:.1f}]")
        print("  " + " ".join(parts))
    if records:
        print("recorded: " + " ".join(f"{seq}@{t - t0:.1f}" for t, seq in records))


if __name__ == "__main__":
    main()
