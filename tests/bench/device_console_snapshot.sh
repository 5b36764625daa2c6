#!/usr/bin/env bash
# Run on the device machine (repo root; wheels for textual/pydantic/asyncssh/... in .whl/):
# the console against the real GPU through the local transport + NVML, headless.
mkdir -p .devrun; printf "[[hosts]]\nname = \"h200\"\nlocal = true\npython = \"python3\"\nrun_dir = \"/tmp/plateau-run\"\n" > .devrun/config.toml
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TEXTUAL_ANIMATIONS=none
C="python3 -m console.cli --config .devrun/config.toml"
# a GPU load in the background so the panel shows something real (bf16 matmuls, ~40 s)
python3 - <<'PY' &
import torch, time
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t = time.time()
while time.time() - t < 45:
    for _ in range(50): a @ a
    torch.cuda.synchronize()
PY
sleep 8
$C snapshot h200 --after 10 --size 160x48 --out $OUT/dash160.txt; echo rc=$?
$C snapshot h200 --after 10 --size 160x48 --out $OUT/dash160.svg; echo rc=$?
$C snapshot h200 --after 8 --size 120x40 --screen topology --out $OUT/topo.txt; echo rc=$?
$C snapshot h200 --after 8 --size 80x24 --out $OUT/dash80.txt; echo rc=$?
wait
head -14 $OUT/dash160.txt; head -16 $OUT/topo.txt; head -8 $OUT/dash80.txt
