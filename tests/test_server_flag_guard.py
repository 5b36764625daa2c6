"""The guard on --host/--port/--model-path/--api-key holds for every name SGLang's argparse
would resolve to them (allow_abbrev), checked against the real parser and over sshd."""

from __future__ import annotations

import argparse
import os

import pytest

from console.config_models import FlagValue, ServerProfile
from console.host.ssh import SshTransport
from console.server.flags import FlagSchema, parse_help
from console.server.known import TYPE_HINTS
from console.server.lifecycle import LifecycleError
from console.server.validate import guarded_target, validate_profile
from console.sim.args import build_sglang_parser
from tests.support.server_fixtures import ServerEnv

HOSTILE = [
    ({"ho": "0.0.0.0"}, [], "host"),
    ({"po": 1}, [], "port"),
    ({}, ["--po", "1"], "port"),
    ({}, ["--model-p=other/model"], "model-path"),
    ({"api-k": "leaked"}, [], "api-key"),
    ({"hos": "0.0.0.0"}, [], "host"),
]


@pytest.fixture(scope="module")
def schema() -> FlagSchema:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        text = build_sglang_parser().format_help()
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return parse_help(text, version="0.5.23").with_hints(TYPE_HINTS)


def _profile(flags: dict[str, FlagValue], extra: list[str]) -> ServerProfile:
    return ServerProfile(model_path="m", port=30000, flags=flags, extra_args=extra)


def _parse(profile: ServerProfile) -> argparse.Namespace:
    return build_sglang_parser().parse_args(profile.argv()[len(profile.launch):])


@pytest.mark.parametrize(("flags", "extra", "target"), HOSTILE)
def test_abbreviation_refused_as_argparse_resolves_it(
    schema: FlagSchema, flags: dict[str, FlagValue], extra: list[str], target: str
) -> None:
    profile = _profile(flags, extra)
    # What the server would really do with this command line: argparse takes the abbreviation.
    dest = target.replace("-", "_")
    assert getattr(_parse(profile), dest) != getattr(_parse(_profile({}, [])), dest)
    report = validate_profile(profile, schema)
    refused = [i for i in report.errors if i.code == "profile-field"]
    assert refused, report.summary()
    assert f"--{target}" in refused[0].message


def test_legitimate_names_pass_and_resolution_matches_argparse(schema: FlagSchema) -> None:
    assert guarded_target("tp", schema) is None  # --tp-size, an abbreviation argparse allows
    assert guarded_target("host", None) == "host"
    assert guarded_target("po", None) == "port"  # no schema: any prefix of a guarded name
    assert guarded_target("model", schema) == "model-path"  # SGLang's alias
    assert [s.name for s in schema.resolve("ho")] == ["host"]
    assert validate_profile(_profile({"tp": 2}, []), schema).ok


@pytest.mark.sshd
async def test_abbreviated_host_refused_over_ssh(
    server_env: ServerEnv, ssh_transport: SshTransport
) -> None:
    life = server_env.lifecycle(ssh_transport)
    profile = server_env.profile(ho="0.0.0.0")
    with pytest.raises(LifecycleError) as caught:
        await life.start("wide-open", profile, server_env.record_event)
    assert "--host" in str(caught.value) and "ho" in str(caught.value)
    assert server_env.logs() == []  # nothing was launched
