#!/usr/bin/env bash
# check: kforge under mpirun on one GPU machine: a rank killed mid-run, the run finished and resumed
# claim: README 'Several GPUs, several hosts'; docs/cluster.md
# device time: about 3 min
#
# kforge over MPI on a GPU machine: `mpirun -n 2` with both ranks on this machine's GPU
# (rank 0 runs the search and drives GPU 0; rank 1 is an evaluation service driving the same GPU,
# so their timings disturb each other: this checks the machinery, not the numbers). A softmax run
# with the builtin proposer; once it has recorded some candidates, rank 1 is killed with SIGKILL;
# the run must finish on rank 0's GPU. Then `resume` under mpirun adds candidates. Prints the
# figures: candidates and busy share per GPU, wall times. Logs and archives go to $OUT.
#   KF_MPI_BUDGET (40)  KF_MPI_KILL_AT (8 recorded candidates)  KF_MPI_RESUME (+16)
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-/tmp/kforge-mpi}"
mkdir -p "$out"
command -v mpirun >/dev/null || { echo "gpu-mpi-check: no mpirun on this machine"; exit 1; }
[ -f "$here/.gpu/libkforge_mpi.so" ] || { echo "gpu-mpi-check: .gpu/libkforge_mpi.so is missing (scripts/pack-gpu.sh)"; exit 1; }
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export KFORGE_MPI_PEER_TIMEOUT_S="${KFORGE_MPI_PEER_TIMEOUT_S:-5}"
budget="${KF_MPI_BUDGET:-40}"
kill_at="${KF_MPI_KILL_AT:-8}"
more="${KF_MPI_RESUME:-+16}"
archive="$out/mpi-softmax.kforge"
rm -f "$archive"*
mpi=(mpirun --enable-recovery --bind-to none -n 2)
mpirun --version | head -1
nvidia-smi --query-gpu=name --format=csv,noheader | head -1

echo "== mpirun -n 2 kforge optimize (rank 1 killed after ${kill_at} candidates)"
start=$(date +%s)
"${mpi[@]}" "$KF" optimize tasks/softmax_f32.json --model builtin --budget "$budget" --seed 5 --no-knowledge \
    --progress lines --json -o "$archive" >"$out/optimize.json" 2>"$out/optimize.log" &
mpirun_pid=$!
rank1=""
for _ in $(seq 1 900); do
    if grep -q "\[${kill_at}/${budget}\]" "$out/optimize.log" 2>/dev/null; then
        for pid in $(pgrep -P "$mpirun_pid"); do
            tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && rank1=$pid
        done
        break
    fi
    kill -0 "$mpirun_pid" 2>/dev/null || break
    sleep 1
done
if [ -n "$rank1" ]; then kill -9 "$rank1" && echo "killed rank 1 (pid $rank1) at $(( $(date +%s) - start ))s"; else echo "FAILED: rank 1 not found"; fi
wait "$mpirun_pid"; rc=$?
echo "optimize rc=$rc in $(( $(date +%s) - start ))s"
grep -E "MPI|lost|share the|GPUs:" "$out/optimize.log" | head -12

echo "== mpirun -n 2 kforge resume --budget $more"
start=$(date +%s)
"${mpi[@]}" "$KF" resume "$archive" --budget "$more" --progress lines --json >"$out/resume.json" 2>"$out/resume.log"
echo "resume rc=$? in $(( $(date +%s) - start ))s"

"$KF" inspect "$archive" --json >"$out/inspect.json"; echo "inspect rc=$?"
"$KF" inspect "$archive" | sed -n '/^GPUs/,/no GPU ran/p'
python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
for name in ("optimize", "resume"):
    try:
        s = json.loads((out / f"{name}.json").read_text())
    except Exception as e:
        print(f"{name}: no summary ({e})"); continue
    c = s["candidates"]
    print(f"{name}: state {s['state']}, stop {s['stop']['reason']}, {c['this_session']} candidates in "
          f"{s['elapsed_s']:.0f} s ({60 * c['this_session'] / max(s['elapsed_s'], 1e-9):.1f}/min), "
          f"best {s['best']['fitness'] if s['best'] else '-'}")
    for g in s["gpus"]:
        print(f"  {g['label']:8} rank {g['rank']} {g['name']}: {g['candidates']} candidates, "
              f"{g['evaluations']} evaluations, busy {100 * g['busy']:.0f}% of {g['wall_s']:.0f} s"
              f"{', LOST' if g['lost'] else ''}, {g['restarts']} restarts")
r = json.loads((out / "inspect.json").read_text())
g = r["gpus"]
print(f"archive: {r['budget']['candidates']} candidates = {g['candidates_measured']} measured on a GPU "
      f"+ {g['candidates_without_gpu']} without; state {r['run']['state']}")
PY
