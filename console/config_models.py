"""Pydantic models of the TOML config. Every model forbids unknown keys so typos are caught."""

# No `from __future__ import annotations` here: pydantic evaluates every field's annotation
# when the class is made, and a string one is compiled first (typing.ForwardRef) — a few ms
# of the console's start-up for these classes.

import ipaddress
import re
from collections import Counter
from typing import Annotated, Any, Literal, Self, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from console import ui_defaults

FlagValue = str | int | float | bool

_FLAG_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_DNS_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")

DEFAULT_CONCURRENCY = [1, 2, 4, 8, 16, 32, 64, 128, 256]
WorkloadKind = Literal["random", "shared-prefix", "multi-turn", "long-context", "sharegpt",
                       "trace"]


def rate_out(value: float) -> float | str:
    """A request rate for JSON: infinity (bench_serving's "all at once") as "inf"."""
    return "inf" if value == float("inf") else value


class StrictModel(BaseModel):
    # Each class's validator is built when it first validates (a config file, a form), not
    # when this module is imported: most never validate before the console's first frame.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


ModelT = TypeVar("ModelT", bound=BaseModel)


def built_in(model: type[ModelT], **values: Any) -> ModelT:
    """`model` holding values written in this code base (the demo's config), not read from a
    file or a user: constructed, not validated. Validating is what builds pydantic's validator
    for a class (the first one also scans every installed package for pydantic plugins):
    ~25 ms of CPU that `plateau demo` would pay before its first frame. tests/test_demo_config.py
    validates every value built this way."""
    return model.model_construct(**values)


MAX_TEXT_CHARS = 4096
"""A path, address, user or env name longer than this is a mistake (PATH_MAX is 4096): refused
in `config check`, never carried to the host nor echoed back."""


def _bounded_text(value: str, what: str) -> str:
    if len(value) > MAX_TEXT_CHARS:
        raise ValueError(f"{what} is {len(value)} characters long (at most {MAX_TEXT_CHARS})")
    return _no_control_chars(value, what)


def _check_address(value: str) -> str:
    """A host name (RFC 1123: labels of 1-63 letters, digits or hyphens, 253 in all) or an IP
    literal; asyncssh and the resolver fail later with a traceback on anything else."""
    if not value:
        return value
    try:
        ipaddress.ip_address(value.strip("[]"))
        return value
    except ValueError:
        pass
    name = value[:-1] if value.endswith(".") else value
    if len(name) > 253:
        raise ValueError(f"host name is {len(name)} characters long (at most 253)")
    for label in name.split("."):
        if not _DNS_LABEL.match(label):
            shown = label if len(label) <= 20 else label[:20] + "…"
            raise ValueError(f"host name label {shown!r} is not 1-63 letters, digits or "
                             "hyphens (not starting or ending with a hyphen)")
    return value


def _check_run_dir(value: str) -> str:
    # `~` and `~/...` are resolved against the host's home on connect; `~user` is not.
    if value.startswith("~") and value != "~" and not value.startswith("~/"):
        raise ValueError("may start with `~/` (the SSH user's home on the host), not `~user`")
    return value


def _no_control_chars(value: str, what: str) -> str:
    # C0, DEL and C1 (0x9b is a one-byte CSI on some terminals): any of them printed back can
    # fake an output line or drive the terminal.
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value):
        raise ValueError(f"{what} must not contain control characters or newlines")
    return value


def _check_dict_keys(value: dict[str, object], what: str) -> None:
    for name in value:
        _no_control_chars(name, f"{what} name {name!r}")


class HostConfig(StrictModel):
    """A machine we reach over SSH (or locally with `local = true`)."""

    name: str
    address: str = ""
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    user: str | None = None
    identity_files: list[str] = Field(default_factory=list)
    known_hosts: Literal["strict", "accept-new"] = "strict"
    known_hosts_file: str | None = None
    jump_host: str | None = None
    python: str = "python3"
    run_dir: str = "~/.plateau"
    profile: str | None = None
    local: bool = False
    sim_state_file: str | None = None
    # How long the host keeps the lease for a holder whose connection dropped: it may
    # reconnect and carry on; nobody else may take it meanwhile (console/server/lease.py).
    lease_grace_s: Annotated[float, Field(ge=0.0, le=3600.0)] = 30.0
    # Its [groups.NAME] defaults fill the keys this entry leaves unset.
    group: str | None = None

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _HOST_NAME.match(value):
            raise ValueError("host name may contain letters, digits, '.', '_' and '-' only")
        return value

    @field_validator("address", "user", "jump_host", "python", "run_dir")
    @classmethod
    def _check_text(cls, value: str | None) -> str | None:
        return None if value is None else _bounded_text(value, "value")

    @field_validator("address")
    @classmethod
    def _check_address(cls, value: str) -> str:
        return _check_address(value)

    @field_validator("run_dir")
    @classmethod
    def _check_run_dir(cls, value: str) -> str:
        return _check_run_dir(value)

    @model_validator(mode="after")
    def _address_unless_local(self) -> Self:
        if not self.local and not self.address:
            raise ValueError("`address` is required unless `local = true`")
        return self


# Size limits for a launch profile. Linux caps ONE argv string at 128 KiB (MAX_ARG_STRLEN),
# and over SSH the whole launch command travels as one string (the login shell's `-c`
# argument), base64-encoded, which grows it by 4/3 (console/host/scripts.py). 64 KiB in all
# keeps the encoded command under that cap with room for the wrappers; 32 KiB per value is far
# above any real flag (inline JSON overrides run to a few KB) and keeps a typo'd file-instead-
# of-path from ever reaching the host. Past these a host answers "Connection reset by peer"
# or "Argument list too long", after a 100+ KB command line was printed: refuse up front.
MAX_VALUE_BYTES = 32 * 1024
MAX_COMMAND_BYTES = 64 * 1024


def oversize_values(profile: "ServerProfile") -> list[str]:
    """One message per profile value (named by its key) over the limits above."""
    items: list[tuple[str, str]] = [(f"launch[{i}]", part) for i, part in enumerate(profile.launch)]
    items.append(("model_path", profile.model_path))
    items += [(f"flags.{name}", value) for name, value in profile.flags.items()
              if isinstance(value, str)]
    items += [(f"extra_args[{i}]", arg) for i, arg in enumerate(profile.extra_args)]
    items += [(f"env.{name}", value) for name, value in profile.env.items()]
    problems = [
        f"{key} is {_kib(size)} long; a value may be at most {_kib(MAX_VALUE_BYTES)}"
        for key, value in items if (size := len(value.encode("utf-8"))) > MAX_VALUE_BYTES
    ]
    total = sum(len(a.encode("utf-8")) + 1 for a in profile.argv()) + sum(
        len(f"{k}={v}".encode()) + 1 for k, v in profile.env.items()
    )
    if not problems and total > MAX_COMMAND_BYTES:
        problems.append(f"the launch command is {_kib(total)} long; at most "
                        f"{_kib(MAX_COMMAND_BYTES)} fits one remote command")
    return problems


def _kib(size: int) -> str:
    return f"{size / 1024:.0f} KiB" if size >= 1024 else f"{size} bytes"


ServerEngineName = Literal["sglang", "openai", "transformers-serve"]
"""The inference engines Plateau knows (console/engines/ holds one module each; a new engine
adds its name here, its module there and one line in console/engines/registry.py)."""

MODEL_ARG: dict[str, str] = {"sglang": "--model-path", "openai": "--model",
                             "transformers-serve": ""}
"""How each engine's launch command takes the model when the profile does not say
(`model_arg`): a flag, or "" for a positional argument (`transformers serve MODEL`)."""

_INSTALL_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,39}\Z")


class ServerProfile(StrictModel):
    """How to launch an inference server (SGLang unless `engine` says otherwise): command,
    model, flags, environment."""

    launch: list[str] = Field(default_factory=lambda: ["python", "-m", "sglang.launch_server"])
    model_path: str
    engine: ServerEngineName = "sglang"
    model_arg: str | None = None
    """How the launch command takes the model: a flag (`--model`), "" for positional; None:
    the engine's way (MODEL_ARG)."""
    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 30000
    flags: dict[str, FlagValue] = Field(default_factory=dict)
    extra_args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    log_dir: str | None = None
    api_key_env: str | None = None
    description: str = ""
    # Other installs of SGLang on the host this profile can run on: a version label -> its
    # launch command (another venv, container or build). `plateau ab --a P@0.5.18 --b
    # P@0.5.23` A/Bs an upgrade with the same flags (console/jobs/upgrade.py).
    installs: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("model_path", "host", "log_dir", "api_key_env", "description", "model_arg")
    @classmethod
    def _check_text(cls, value: str | None) -> str | None:
        return None if value is None else _bounded_text(value, "value")

    @field_validator("launch")
    @classmethod
    def _check_launch(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("`launch` must name a program, e.g. [\"sglang\", \"serve\"]")
        for part in value:
            _no_control_chars(part, "launch argument")
        return value

    @field_validator("flags")
    @classmethod
    def _check_flags(cls, value: dict[str, FlagValue]) -> dict[str, FlagValue]:
        for name, flag_value in value.items():
            if not _FLAG_NAME.match(name):
                raise ValueError(
                    f"flag name {name!r} must look like 'attention-backend' (no leading --)"
                )
            if isinstance(flag_value, str):
                _no_control_chars(flag_value, f"flag {name}")
        return value

    @field_validator("env")
    @classmethod
    def _check_env(cls, value: dict[str, str]) -> dict[str, str]:
        for name, env_value in value.items():
            if not _ENV_NAME.match(name):
                raise ValueError(f"environment variable name {name!r} is not valid")
            _no_control_chars(env_value, f"env {name}")
        return value

    @field_validator("extra_args")
    @classmethod
    def _check_extra(cls, value: list[str]) -> list[str]:
        for arg in value:
            _no_control_chars(arg, "extra argument")
        return value

    @field_validator("installs")
    @classmethod
    def _check_installs(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for label, launch in value.items():
            if not _INSTALL_LABEL.match(label):
                raise ValueError(f"install label {label!r} must look like '0.5.23'")
            if not launch:
                raise ValueError(f"install {label!r}: its launch command is empty")
            for part in launch:
                _no_control_chars(part, "launch argument")
        return value

    @model_validator(mode="after")
    def _check_sizes(self) -> Self:
        problems = oversize_values(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def argv(self) -> list[str]:
        """The server's command line: launch + model + host/port + flags + extra args."""
        model_arg = MODEL_ARG[self.engine] if self.model_arg is None else self.model_arg
        model = [model_arg, self.model_path] if model_arg else [self.model_path]
        args = [*self.launch, *model, "--host", self.host, "--port", str(self.port)]
        for name, value in self.flags.items():
            if value is True:
                args.append(f"--{name}")
            elif value is False:
                continue
            else:
                args += [f"--{name}", str(value)]
        return args + list(self.extra_args)


SloMs = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class SloSpec(StrictModel):
    """Latency objectives in milliseconds (console/bench/slo.py): a request meets them when its
    TTFT, its TPOT (its mean inter-token gap) and its end-to-end latency are each at or under
    the given ones (SGLang bench_serving's --goodput ttft/tpot/e2el); a step meets them when
    its p99s do."""

    ttft_p99_ms: SloMs | None = None
    itl_p99_ms: SloMs | None = None
    e2e_p99_ms: SloMs | None = None

    @model_validator(mode="after")
    def _at_least_one(self) -> Self:
        if self.ttft_p99_ms is None and self.itl_p99_ms is None and self.e2e_p99_ms is None:
            raise ValueError("an SLO needs at least one of ttft_p99_ms, itl_p99_ms, e2e_p99_ms")
        return self


Price = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class CostConfig(StrictModel):
    """`[cost]`: what a joule and a GPU-hour cost, for cost per million output tokens
    (console/bench/energy.py)."""

    electricity_per_kwh: Price | None = None
    gpu_hour: Price | None = None
    currency: Annotated[str, Field(min_length=1, max_length=8)] = "$"

    @field_validator("currency")
    @classmethod
    def _plain(cls, value: str) -> str:
        return _no_control_chars(value, "currency")


class WarmupLoad(StrictModel):
    """The load a sweep runs before its first step when the server may not have converged
    since it started (console/bench/warmup.py): rounds of `prompts` requests at `concurrency`
    (None: the sweep's highest level, at most 32) until a round shows no warm-up and its
    median TPOT is within 5 % of the round before, or `max_rounds` ran."""

    concurrency: Annotated[int, Field(ge=1, le=4096)] | None = None
    prompts: Annotated[int, Field(ge=1)] | None = None  # per round; None: 2 x concurrency
    max_rounds: Annotated[int, Field(ge=1, le=100)] = 8


class SweepPreset(StrictModel):
    """A concurrency sweep: what load to offer at each step."""

    concurrency: list[Annotated[int, Field(ge=1, le=65536)]] = Field(
        default_factory=lambda: list(DEFAULT_CONCURRENCY)
    )
    input_len: Annotated[int, Field(ge=1)] = 1024
    output_len: Annotated[int, Field(ge=1)] = 1024
    range_ratio: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    num_prompts: Annotated[int, Field(ge=1)] | None = None
    prompts_per_concurrency: Annotated[int, Field(ge=1)] = 4
    step_seconds: Annotated[float, Field(gt=0)] | None = None
    warmup_prompts: Annotated[int, Field(ge=0)] = 0
    # Before the first step, load the server until its latency converged (a fresh restart's
    # JIT compiles and slow first steps); None: measure from the first request.
    warmup_load: WarmupLoad | None = None
    flush_cache: bool = True
    repeats: Annotated[int, Field(ge=1, le=20)] = 1
    endpoint: Literal["generate", "completions", "chat"] = "generate"
    ignore_eos: bool = True
    engine: Literal["native", "bench-serving"] = "native"
    request_timeout_s: Annotated[float, Field(gt=0)] = 600.0
    stop_on_failure: bool = False
    # Steady state: measure over the longest span with in-flight >= ratio x the step's
    # concurrency (SGLang's steady_state.py; console/bench/steady.py).
    steady_ratio: Annotated[float, Field(gt=0.0, le=1.0)] = 0.8
    # What the requests hold (console/bench/workload.py says each kind's source): random,
    # shared-prefix (bench_serving's generated-shared-prefix: `prefix_groups` system prompts
    # of `prefix_len` tokens, `prompts_per_group` questions of input_len each), multi-turn
    # (`turns` per conversation, each carrying the previous answers), long-context (inputs up
    # to the model's context length), sharegpt (bundled real lengths), trace (`trace_file`,
    # a Mooncake JSONL trace replayed at its timestamps).
    workload: WorkloadKind = "random"
    prefix_groups: Annotated[int, Field(ge=1)] = 64
    prompts_per_group: Annotated[int, Field(ge=1)] = 16
    prefix_len: Annotated[int, Field(ge=1)] = 2048
    turns: Annotated[int, Field(ge=1, le=1000)] = 4
    trace_file: str | None = None
    # Open loop: a step per rate (requests/s, inf = all at once), arrivals Poisson, or gamma
    # with `burstiness` != 1; `max_concurrency` caps requests in flight as bench_serving's
    # --max-concurrency. None: the closed-loop concurrency sweep.
    request_rate: list[Annotated[float, Field(gt=0.0)]] | None = None
    burstiness: Annotated[float, Field(gt=0.0, le=100.0)] = 1.0
    max_concurrency: Annotated[int, Field(ge=1, le=65536)] | None = None
    # Latency objectives: per step, the share of requests meeting them and goodput.
    slo: SloSpec | None = None

    @field_validator("concurrency")
    @classmethod
    def _non_empty(cls, value: list[int]) -> list[int]:
        if not value:
            raise ValueError("at least one concurrency level is needed")
        return value

    @field_validator("request_rate")
    @classmethod
    def _rates(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and not value:
            raise ValueError("at least one request rate is needed")
        return value

    @field_serializer("request_rate")
    def _rates_out(self, value: list[float] | None) -> list[float | str] | None:
        # JSON has no infinity: "inf" (which float() and this model read back)
        return None if value is None else [rate_out(v) for v in value]

    @model_validator(mode="after")
    def _trace_needs_file(self) -> Self:
        if self.workload == "trace" and not self.trace_file:
            raise ValueError("workload 'trace' needs trace_file")
        if self.workload == "trace" and self.request_rate is None and \
                self.max_concurrency is None:
            raise ValueError(TRACE_NEEDS_OPEN_LOOP)
        return self


# A trace is replayed at its own timestamps, which only an open-loop step does: a closed-loop
# concurrency sweep would cycle its rows (128 requests from a 30-row trace) at no timestamp.
TRACE_NEEDS_OPEN_LOOP = (
    "a trace replays at its timestamps: give max_concurrency (--max-concurrency N, a cap on "
    "requests in flight) or request_rate (--request-rate R, its mean rate scaled to R), not a "
    "concurrency sweep, which would cycle its rows")


class UiConfig(StrictModel):
    ascii: bool = ui_defaults.ASCII
    gpu_interval_s: Annotated[float, Field(ge=0.25)] = 1.0
    # Hosts not on screen (other hosts' dashboards, fleet rows scrolled away) sample slower.
    offscreen_interval_s: Annotated[float, Field(ge=0.25, le=600.0)] = 5.0
    log_tail_lines: Annotated[int, Field(ge=0, le=100_000)] = 500
    log_max_lines: Annotated[int, Field(ge=1000, le=5_000_000)] = ui_defaults.LOG_MAX_LINES
    gpu_load_mid: Annotated[float, Field(ge=0, le=100)] = ui_defaults.GPU_LOAD_MID
    gpu_load_high: Annotated[float, Field(ge=0, le=100)] = ui_defaults.GPU_LOAD_HIGH


class HostGroup(StrictModel):
    """Defaults for every host whose `group` names this one (its own keys win)."""

    python: str | None = None
    run_dir: str | None = None
    profile: str | None = None
    user: str | None = None
    known_hosts: Literal["strict", "accept-new"] | None = None
    lease_grace_s: Annotated[float, Field(ge=0.0, le=3600.0)] | None = None

    @field_validator("python", "run_dir", "user")
    @classmethod
    def _check_text(cls, value: str | None) -> str | None:
        return None if value is None else _bounded_text(value, "value")

    @field_validator("run_dir")
    @classmethod
    def _check_run_dir(cls, value: str | None) -> str | None:
        return None if value is None else _check_run_dir(value)


class SshConfigSource(StrictModel):
    """Hosts taken from an OpenSSH client config: its `Host` aliases that match `include`."""

    file: str = "~/.ssh/config"
    include: list[str]
    exclude: list[str] = Field(default_factory=list)
    group: str | None = None

    @field_validator("file", "include", "exclude")
    @classmethod
    def _check_patterns(cls, value: str | list[str]) -> str | list[str]:
        for item in [value] if isinstance(value, str) else value:
            _bounded_text(item, "pattern")
        return value

    @field_validator("include")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError('name at least one Host pattern, e.g. ["gpu-*"]')
        return value


class PlateauConfig(StrictModel):
    """The whole config file."""

    theme: str = ui_defaults.THEME
    default_host: str | None = None
    hosts: list[HostConfig] = Field(default_factory=list)
    # More hosts, beside [[hosts]]: an inventory file and ~/.ssh/config (console/hostsources).
    inventory: str | None = None
    ssh_config: SshConfigSource | None = None
    groups: dict[str, HostGroup] = Field(default_factory=dict)
    profiles: dict[str, ServerProfile] = Field(default_factory=dict)
    sweeps: dict[str, SweepPreset] = Field(default_factory=dict)
    keymap: dict[str, str] = Field(default_factory=dict)
    ui: UiConfig = Field(default_factory=UiConfig.model_construct)  # defaults: never validated
    cost: CostConfig | None = None

    @field_validator("profiles", "sweeps", "keymap", "groups")
    @classmethod
    def _check_names(cls, value: dict[str, object], info: ValidationInfo) -> dict[str, object]:
        _check_dict_keys(value, str(info.field_name).rstrip("s"))
        return value

    @field_validator("theme", "default_host")
    @classmethod
    def _check_text(cls, value: str | None) -> str | None:
        return None if value is None else _no_control_chars(value, "value")

    @model_validator(mode="after")
    def _cross_references(self) -> Self:
        names = [host.name for host in self.hosts]
        duplicates = sorted(name for name, seen in Counter(names).items() if seen > 1)
        if duplicates:
            raise ValueError(f"duplicate host name(s): {', '.join(duplicates)}")
        # Hosts from the inventory or ~/.ssh/config are known only once those are read
        # (console/hostsources/merge.py checks default_host then).
        others = self.inventory is not None or self.ssh_config is not None
        if self.default_host is not None and self.default_host not in names and not others:
            raise ValueError(f"default_host {self.default_host!r} is not one of the hosts")
        # An inventory may define more groups: merge.py checks group names once it is read.
        groups_known = self.inventory is None
        for host in self.hosts:
            self.check_host_refs(host, groups=groups_known)
        for name, group in self.groups.items():
            self.check_group_refs(name, group)
        if self.ssh_config is not None and groups_known:
            self.check_group(self.ssh_config.group, "ssh_config")
        return self

    def check_host_refs(self, host: HostConfig, *, groups: bool = True) -> None:
        """The profile and (with `groups`) the group a host names exist."""
        if host.profile is not None and host.profile not in self.profiles:
            raise ValueError(f"host {host.name!r} names unknown profile {host.profile!r}")
        if groups:
            self.check_group(host.group, f"host {host.name!r}")

    def check_group_refs(self, name: str, group: HostGroup) -> None:
        if group.profile is not None and group.profile not in self.profiles:
            raise ValueError(f"group {name!r} names unknown profile {group.profile!r}")

    def check_group(self, group: str | None, who: str) -> None:
        if group is not None and group not in self.groups:
            known = ", ".join(sorted(self.groups)) or "none defined"
            raise ValueError(f"{who} names unknown group {group!r} (groups: {known})")

    def host(self, name: str | None) -> HostConfig:
        """The host called `name`, or the default/first one when `name` is None."""
        wanted = name or self.default_host
        for host in self.hosts:
            if wanted is None or host.name == wanted:
                return host
        if wanted is None:
            raise KeyError("no hosts configured: add a [[hosts]] entry to the config")
        known = ", ".join(h.name for h in self.hosts) or "none configured"
        raise KeyError(f"unknown host {wanted!r} (known: {known})")

    def sweep(self, name: str = "default") -> SweepPreset:
        return self.sweeps.get(name, SweepPreset())


class InventoryFile(StrictModel):
    """An inventory file (`inventory = "hosts.toml"`): [[hosts]] entries and [groups.NAME]
    tables, the same keys as the config's own (console/hostsources/inventory.py says why TOML;
    console/hostsources/merge.py how its groups join the config's)."""

    hosts: list[HostConfig] = Field(default_factory=list)
    groups: dict[str, HostGroup] = Field(default_factory=dict)

    @field_validator("groups")
    @classmethod
    def _check_names(cls, value: dict[str, object]) -> dict[str, object]:
        _check_dict_keys(value, "group")
        return value
