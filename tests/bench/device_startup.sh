#!/bin/bash
# bench_app_startup.py on a device machine (16 cores, no network), from the repository root:
#   run  command="RUNS=7 CPURUNS=11 BASE=.base/start bash tests/bench/device_startup.sh"
#        carry=[".whl", ".base"]
# .whl/ holds cp312 wheels of the dependencies (pip download --only-binary=:all:
# --python-version 3.12 ...); BASE a baseline tree made here with
#   git archive REV console widgets themes | tar -x -C .base/start
# (the machine gets the working tree without .git). Output: $OUT/startup.txt.
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 \
  | tail -2
export PYTHONPATH=/tmp/site:$PWD
PY=$(python3 -c 'import sys; print(sys.executable)')
# The benchmark runs `plateau` from beside the interpreter, as an install puts it there.
printf '#!%s\nimport sys\nfrom console.cli import main\nsys.exit(main())\n' "$PY" \
  > "$(dirname "$PY")/plateau"
chmod +x "$(dirname "$PY")/plateau"
python3 -c 'import sys, textual, pydantic; print(sys.version.split()[0], textual.__version__,
pydantic.__version__)'
nproc; uptime
python3 tests/bench/bench_app_startup.py --runs "${RUNS:-5}" --cpu --cpu-runs "${CPURUNS:-11}" \
  --compare-baseline "${BASE:-.base/start}" 2>&1 | tee "$OUT/startup.txt"
