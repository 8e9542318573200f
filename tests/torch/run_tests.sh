#!/usr/bin/env bash
# ctest's entries for python/kforge_torch's unit tests (tests/torch/*.py): `run_tests.sh [GROUP]`
# runs the model's modules (test_model_*.py, GROUP model), every other module (GROUP rest), the slow
# tests marked @extended that those two skip (GROUP extended: `./kf test extended`, which CI runs) or,
# without GROUP, every test; run under the python3
# kforge itself would use ($KFORGE_PYTHON, else python3 on PATH, else /usr/bin/python3: the first
# that imports torch). Without one, exit 77: ctest reports the entry as skipped, with the reason.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
candidates=()
if [ -n "${KFORGE_PYTHON:-}" ]; then candidates=("$KFORGE_PYTHON"); else candidates=(python3 /usr/bin/python3); fi
for python in "${candidates[@]}"; do
    if command -v "$python" >/dev/null 2>&1 && "$python" -c "import torch" >/dev/null 2>&1; then
        cd "$here" || exit 1
        case "${1:-all}" in
        all) KFORGE_EXTENDED_TESTS=1 exec "$python" -m unittest discover -s . ;;
        model) modules=(test_model_*.py) ;;
        rest) modules=()
              for m in test_*.py; do [[ $m == test_model_* ]] || modules+=("$m"); done ;;
        extended) KFORGE_EXTENDED_TESTS=1 exec "$python" -m unittest test_fixtures test_model_regions.AssembledWiringTest ;;
        *) echo "run_tests.sh: no group '$1' (model, rest, extended)" >&2; exit 2 ;;
        esac
        exec "$python" -m unittest "${modules[@]%.py}"
    fi
done
echo "SKIPPED: no python3 here imports torch (tried ${candidates[*]}); ./kf installs python3-torch"
exit 77
