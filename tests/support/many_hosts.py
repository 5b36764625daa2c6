"""A config of N hosts (for `config show` at scale: a test and tests/bench/bench_config_show)."""

from __future__ import annotations


def config_text(hosts: int) -> str:
    parts = ['[profiles.main]\nmodel_path = "org/model"\nflags = { tp-size = 2 }\n']
    for index in range(hosts):
        parts.append(
            f'[[hosts]]\nname = "gpu-box-{index}"\naddress = "gpu-box-{index}.example"\n'
            f'user = "ops"\nprofile = "main"\n'
        )
    return "\n".join(parts)
