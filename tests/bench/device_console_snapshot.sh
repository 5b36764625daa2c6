#!/usr/bin/env bash
# Run on the device machine (repo root; wheels for textual/pydantic/asyncssh/... installed in
# /tmp/site, e.g. `pip install --target /tmp/site .whl/*.whl`):
# the console against the real GPU through the local transport + NVML, headless.
mkdir -p .devrun; printf "[[hosts]]\nname = \"h200\"\nlocal = true\npython = \"python3\"\nrun_dir = \"/tmp/plateau-run\"\n" > .devrun/config.toml
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TEXTUAL_ANIMATIONS=none
C="python3 -m console.cli --config .devrun/config.toml"
# A load on every GPU (matmuls + NCCL all-reduce + H2D copies) that outlasts the snapshots:
# they start once every rank is in its loop, and the load is stopped after the last one (the
# old script's fixed 45 s load ended before its last snapshot).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rm -f /tmp/plateau-load.ready
python3 tests/bench/gpu_load.py --seconds 300 --ready /tmp/plateau-load.ready > $OUT/load.out 2>&1 &
LP=$!
for _ in $(seq 1 180); do [ -f /tmp/plateau-load.ready ] && break; kill -0 $LP 2>/dev/null || break; sleep 1; done
[ -f /tmp/plateau-load.ready ] || { echo "load never became ready"; cat $OUT/load.out; }
$C snapshot h200 --after 10 --size 160x48 --out $OUT/dash160.txt; echo rc=$?
$C snapshot h200 --after 10 --size 160x48 --out $OUT/dash160.svg; echo rc=$?
$C snapshot h200 --after 8 --size 120x40 --screen topology --out $OUT/topo.txt; echo rc=$?
$C snapshot h200 --after 8 --size 120x40 --out $OUT/dash120.txt; echo rc=$?
$C snapshot h200 --after 8 --size 80x24 --out $OUT/dash80.txt; echo rc=$?
kill -0 $LP 2>/dev/null && echo "load ran through every snapshot" || echo "WARNING: load ended early"
kill $LP; wait
head -14 $OUT/dash160.txt; head -22 $OUT/topo.txt; head -12 $OUT/dash120.txt; head -8 $OUT/dash80.txt
