#!/usr/bin/env bash
# ctest's entry for python/kforge_torch's unit tests (tests/torch/*.py): run under the python3
# kforge itself would use ($KFORGE_PYTHON, else python3 on PATH, else /usr/bin/python3: the first
# that imports torch). Without one, exit 77: ctest reports the entry as skipped, with the reason.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
candidates=()
if [ -n "${KFORGE_PYTHON:-}" ]; then candidates=("$KFORGE_PYTHON"); else candidates=(python3 /usr/bin/python3); fi
for python in "${candidates[@]}"; do
    if command -v "$python" >/dev/null 2>&1 && "$python" -c "import torch" >/dev/null 2>&1; then
        cd "$root" && exec "$python" -m unittest discover -s tests/torch
    fi
done
echo "SKIPPED: no python3 here imports torch (tried ${candidates[*]}); ./kf installs python3-torch"
exit 77
