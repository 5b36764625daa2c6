"""`plateau config check [FILE]` and `plateau config show`."""

from __future__ import annotations

import argparse
import json

from console.config import (
    LoadedConfig,
    discover_config_path,
    flatten_config,
    load_config,
    redacted,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("config", help="check or show the configuration")
    actions = parser.add_subparsers(dest="config_action", metavar="ACTION", required=True)
    check = actions.add_parser("check", help="validate a config file")
    check.add_argument("file", nargs="?", help="file to check (default: the discovered config)")
    check.set_defaults(handler=_check)
    show = actions.add_parser("show", help="print the effective config and each value's source")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(handler=_show)


def _check(args: argparse.Namespace) -> int:
    loaded = load_config(args.file or args.config)
    config = loaded.config
    where = loaded.path or "built-in defaults"
    print(
        f"{where}: OK ({len(config.hosts)} host(s), {len(config.profiles)} profile(s), "
        f"{len(config.sweeps)} sweep preset(s))"
    )
    return 0


def _show(args: argparse.Namespace) -> int:
    loaded = load_config(args.config)
    _path, reason = discover_config_path(args.config)
    data = redacted(loaded.config.model_dump(mode="json"))
    if args.json:
        rows = [
            {"key": key, "value": value, "source": loaded.source_of(path)}
            for key, path, value in flatten_config(data)
        ]
        hosts = [{"name": host.name, "source": loaded.host_source(index)}
                 for index, host in enumerate(loaded.config.hosts)]
        print(json.dumps({"file": str(loaded.path) if loaded.path else None, "values": rows,
                          "hosts": hosts}))
        return 0
    print(f"# config: {loaded.path or 'none'} (from {reason})")
    shown_host: object = None
    for key, path, value in flatten_config(data):
        if len(path) > 1 and path[0] == "hosts" and path[1] != shown_host:
            shown_host = path[1]
            print(_host_header(loaded, int(path[1])))
        print(f"{key} = {json.dumps(value)}    # {loaded.source_of(path)}")
    return 0


def _host_header(loaded: LoadedConfig, index: int) -> str:
    """`# host gpu-01: /home/me/.ssh/config:12 (Host gpu-01)` before each host's values."""
    return f"# host {loaded.config.hosts[index].name}: {loaded.host_source(index)}"


