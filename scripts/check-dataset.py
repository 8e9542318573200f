#!/usr/bin/env python3
"""Checks a `kforge dataset` file against `kforge inspect --json` of the archives it was made from.

    scripts/check-dataset.py KFORGE DATASET.jsonl ARCHIVE...

Per archive: candidate records = inspect's candidates, per verdict as inspect counts them, and the
model calls (inside candidate records, their plans' planner calls included, or alone) = inspect's
LLM calls; every model call that
succeeded carries prompt messages and a reply. Prints one line per archive and exits 1 on any
mismatch. Needs nothing but Python 3 (it is also what a pipeline reading the format sees).
"""
import collections
import json
import os
import subprocess
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    kforge, dataset, archives = sys.argv[1], sys.argv[2], sys.argv[3:]
    records = collections.defaultdict(list)
    with open(dataset, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            record = json.loads(line)
            if record.get("schema") != "kforge.dataset/1":
                sys.exit(f"{dataset}:{number}: schema is {record.get('schema')!r}")
            records[record["archive"]].append(record)
    ok = True
    for archive in archives:
        report = json.loads(subprocess.run([kforge, "inspect", archive, "--json"], check=True,
                                           capture_output=True, text=True).stdout)
        mine = records[os.path.basename(archive)]
        candidates = [r for r in mine if r["kind"] == "candidate"]
        calls = [r["call"] for r in mine if r["call"] is not None]
        # Two-phase candidates carry their planner's calls too (all but the record's own call).
        calls += [c for r in mine if r["kind"] == "candidate" and r.get("plan") for c in r["plan"]["calls"]]
        verdicts = collections.Counter(r["verdict"] for r in candidates)
        problems = []
        if len(candidates) != report["budget"]["candidates"]:
            problems.append(f"{len(candidates)} candidates, inspect {report['budget']['candidates']}")
        if len(calls) != report["budget"]["llm"]["calls"]:
            problems.append(f"{len(calls)} model calls, inspect {report['budget']['llm']['calls']}")
        for verdict, count in report["verdicts"].items():
            if verdicts.get(verdict, 0) != count:
                problems.append(f"{verdicts.get(verdict, 0)} {verdict}, inspect {count}")
        empty = [c["call_id"] for c in calls if c["status"] == "ok" and (not c["messages"] or not c["reply"])]
        if empty:
            problems.append(f"calls without prompt or reply: {empty[:5]}")
        improving = sum(1 for r in candidates if r["improvement"]["improving"])
        print(f"dataset {os.path.basename(archive)}: {len(candidates)} candidates "
              f"({verdicts.get('correct', 0)} correct, {improving} improving), {len(calls)} model calls, "
              f"{len(mine) - len(candidates)} alone: " + ("; ".join(problems) if problems else "matches inspect"))
        ok = ok and not problems
    print("dataset check:", "OK" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
