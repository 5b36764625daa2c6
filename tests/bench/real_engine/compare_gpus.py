"""Plateau's GPU panel against nvidia-smi, sampled together while the server is under load.

    python compare_gpus.py PLATEAU_JSONL SMI_CSV OUT.json

Reads the samples each wrote over the same seconds and reports the mean of util, memory,
power and SM clock from each, with the relative difference.
"""

from __future__ import annotations

import csv
import json
import sys
from statistics import mean


def plateau_means(path: str) -> dict[str, float]:
    rows: dict[str, list[float]] = {"util": [], "mem_mib": [], "power_w": [], "sm_mhz": []}
    with open(path) as fh:
        for line in fh:
            item = json.loads(line)
            if item.get("type") != "sample":
                continue
            for gpu in item["data"].get("gpus") or []:
                for key, name in (("util", "util_gpu"), ("mem_mib", "mem_used_mib"),
                                  ("power_w", "power_w"), ("sm_mhz", "sm_clock_mhz")):
                    if isinstance(gpu.get(name), int | float):
                        rows[key].append(float(gpu[name]))
    return {k: mean(v) for k, v in rows.items() if v}


def smi_means(path: str) -> dict[str, float]:
    rows: dict[str, list[float]] = {"util": [], "mem_mib": [], "power_w": [], "sm_mhz": []}
    with open(path) as fh:
        for rec in csv.reader(fh):
            if len(rec) < 4 or not rec[0].strip()[0].isdigit():
                continue
            for key, text in zip(("util", "mem_mib", "power_w", "sm_mhz"), rec, strict=False):
                rows[key].append(float(text.strip().split()[0]))
    return {k: mean(v) for k, v in rows.items() if v}


def main() -> None:
    ours, theirs = plateau_means(sys.argv[1]), smi_means(sys.argv[2])
    report = {key: {"plateau": ours.get(key), "nvidia_smi": theirs.get(key),
                    "diff_pct": (100 * (ours[key] - theirs[key]) / theirs[key]
                                 if key in ours and theirs.get(key) else None)}
              for key in ("util", "mem_mib", "power_w", "sm_mhz")}
    with open(sys.argv[3], "w") as fh:
        json.dump(report, fh, indent=1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
