"""A fake `pynvml` (nvidia-ml-py) for running the agent's NVML backend on a machine without
a GPU. It mimics the shapes the agent relies on: return types, per-entry nvmlReturn in field
values, NotSupported errors, the READ-index tuple bug of 13.615.71, GPM sample/metrics structs.

Behaviour is set by environment variables so the agent can be run as a real subprocess:
  FAKE_NVML_GPUS=N          number of GPUs (default 2)
  FAKE_NVML_FAIL_INIT=msg   nvmlInit raises NVMLError_DriverNotLoaded(msg)
  FAKE_NVML_NVLINK=1        GPUs 0<->1 joined by 4 active NVLinks
  FAKE_NVML_NVLINK=switch   every GPU's 18 links go to an NVSwitch (an HGX board, as the
                            2 x H200 machine reported: remote type SWITCH, placeholder bus id)
  FAKE_NVML_NO_ALL_LINKS=1  the NVLink throughput fields refuse the all-links scope (UINT_MAX)
  FAKE_NVML_NO_REMOTE_TYPE=1  no nvmlDeviceGetNvLinkRemoteDeviceType (an older driver)
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

NVML_P2P_CAPS_INDEX_READ = (0,)  # the 13.615.71 trailing-comma bug, reproduced on purpose
NVML_GPM_METRICS_GET_VERSION = 1
nvmlMemory_v2 = 0x02000028
_N = int(os.environ.get("FAKE_NVML_GPUS", "2"))
_NVLINK_MODE = os.environ.get("FAKE_NVML_NVLINK", "")
_NVLINK = _NVLINK_MODE in ("1", "switch")
_SWITCH = _NVLINK_MODE == "switch"
_LINKS = 18 if _SWITCH else 4
_ALL_LINKS = 0xFFFFFFFF
_NO_ALL_LINKS = os.environ.get("FAKE_NVML_NO_ALL_LINKS") == "1"
_CALLS = {"pcie": 0, "field_values": 0}


class NVMLError(Exception):
    value = 999


class NVMLError_NotSupported(NVMLError):
    value = 3


class NVMLError_InvalidArgument(NVMLError):
    value = 2


class NVMLError_DriverNotLoaded(NVMLError):
    value = 9


class NVMLError_Timeout(NVMLError):
    value = 10


class NVMLError_FunctionNotFound(NVMLError):
    value = 13


class _H:
    def __init__(self, i: int) -> None:
        self.i = i


class _Obj:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)

    if TYPE_CHECKING:  # attributes as given: pynvml's ctypes structs, loosely
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...


def nvmlInit() -> None:
    msg = os.environ.get("FAKE_NVML_FAIL_INIT")
    if msg:
        raise NVMLError_DriverNotLoaded(msg)


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetCount() -> int:
    return _N


def nvmlDeviceGetHandleByIndex(i: int) -> _H:
    if not 0 <= i < _N:
        raise NVMLError_InvalidArgument("bad index")
    return _H(i)


def nvmlSystemGetDriverVersion() -> str:
    return "580.159.04"


def nvmlSystemGetNVMLVersion() -> bytes:
    return b"13.580.159.04"  # old bindings return bytes: the agent must decode


def nvmlSystemGetCudaDriverVersion() -> int:
    return 13000


def nvmlDeviceGetName(h: _H) -> str:
    return "NVIDIA H200"


def nvmlDeviceGetUUID(h: _H) -> str:
    return f"GPU-0000000{h.i}-aaaa-bbbb-cccc-dddddddddddd"


def nvmlDeviceGetPciInfo(h: _H) -> _Obj:
    return _Obj(busId="00000000:%02X:00.0" % (0x1B + h.i))


def nvmlDeviceGetCudaComputeCapability(h: _H) -> tuple[int, int]:
    return (9, 0)


def nvmlDeviceGetMaxClockInfo(h: _H, kind: int) -> int:
    return {1: 1980, 2: 3201}[kind]


def nvmlDeviceGetClockInfo(h: _H, kind: int) -> int:
    return {1: 1485 if h.i == 0 else 345, 2: 3201}[kind]


def nvmlDeviceGetMaxPcieLinkGeneration(h: _H) -> int:
    return 5


def nvmlDeviceGetMaxPcieLinkWidth(h: _H) -> int:
    return 16


def nvmlDeviceGetCurrPcieLinkGeneration(h: _H) -> int:
    return 5 if h.i == 0 else 1


def nvmlDeviceGetCurrPcieLinkWidth(h: _H) -> int:
    return 16


def nvmlGpmQueryDeviceSupport(h: _H) -> _Obj:
    return _Obj(isSupportedDevice=1 if h.i == 0 else 0)


def nvmlGpmSampleAlloc() -> _Obj:
    return _Obj(t=None)


def nvmlGpmSampleGet(h: _H, s: _Obj) -> _Obj:
    s.t = time.time()
    return s


def nvmlGpmSampleFree(s: _Obj) -> None:
    pass


class _Metric:
    def __init__(self) -> None:
        self.metricId = 0
        self.nvmlReturn = 0
        self.value = 0.0


class c_nvmlGpmMetricsGet_t:
    def __init__(self) -> None:
        self.version = 0
        self.numMetrics = 0
        self.sample1 = None
        self.sample2 = None
        self.metrics = [_Metric() for _ in range(8)]


def nvmlGpmMetricsGet(mg: c_nvmlGpmMetricsGet_t) -> c_nvmlGpmMetricsGet_t:
    values = {2: 92.5, 3: 13.6, 5: 89.5, 10: 15.9, 20: 1024.0, 21: 512.0}
    if _NVLINK:
        values.update({60: 42000.0, 61: 43000.0})  # NVLink RX / TX, all links, MiB/s
    for k in range(mg.numMetrics):
        m = mg.metrics[k]
        m.value = values.get(m.metricId, 0.0)
        m.nvmlReturn = 0 if m.metricId in values else 3
    return mg


def nvmlDeviceGetEnforcedPowerLimit(h: _H) -> int:
    return 700000


def nvmlDeviceGetPowerUsage(h: _H) -> int:
    return 685123 if h.i == 0 else 75000


def nvmlDeviceGetMemoryInfo(h: _H, version: int | None = None) -> _Obj:
    if version is None:
        return _Obj(used=615 * 1048576, total=143771 * 1048576)
    return _Obj(used=(40000 if h.i == 0 else 0) * 1048576, total=143771 * 1048576,
                reserved=615 * 1048576)


def nvmlDeviceGetUtilizationRates(h: _H) -> _Obj:
    return _Obj(gpu=100 if h.i == 0 else 0, memory=37 if h.i == 0 else 0)


def nvmlDeviceGetTemperature(h: _H, sensor: int) -> int:
    return 61 if h.i == 0 else 30


def nvmlDeviceGetCurrentClocksEventReasons(h: _H) -> int:
    return 0x4 if h.i == 0 else 0x1


def nvmlDeviceGetTotalEccErrors(h: _H, kind: int, counter: int) -> int:
    return 0


def nvmlDeviceGetFanSpeed(h: _H) -> int:
    raise NVMLError_NotSupported("fan")


def nvmlDeviceGetPerformanceState(h: _H) -> int:
    return 0 if h.i == 0 else 8


def nvmlDeviceGetComputeRunningProcesses(h: _H) -> list[_Obj]:
    if h.i != 0:
        return []
    return [_Obj(pid=os.getpid(), usedGpuMemory=40000 * 1048576),
            _Obj(pid=999999999, usedGpuMemory=None)]


def nvmlDeviceGetPcieThroughput(h: _H, counter: int) -> int:
    _CALLS["pcie"] += 1
    time.sleep(0.002)  # the real call blocks ~20 ms
    return 2048 if counter == 0 else 1024


class _Val:
    def __init__(self, ret: int, ui: int = 0, ull: int = 0, ts: int = 0) -> None:
        self.nvmlReturn = ret
        self.timestamp = ts
        self.value = _Obj(uiVal=ui, ullVal=ull, dVal=float(ui))


def _link_kib(h: _H, fid: int, link: int, now_us: int) -> int:
    """A per-link cumulative counter (KiB): TX grows twice as fast as RX, GPU 1 at half GPU
    0's rate, so sums, scopes and directions can be told apart."""
    per_ms = (2 if fid == 138 else 1) * (1 + link % 3) * (2 - h.i % 2)
    return now_us // 1000 * per_ms


def nvmlDeviceGetFieldValues(h: _H, ids: list[int | tuple[int, int]]) -> list[_Val]:
    # Real NVML reads scopeId only from a (fieldId, scopeId) tuple; a bare int is scope 0.
    _CALLS["field_values"] += 1
    out = []
    now_us = int(time.time() * 1e6)
    for fid in ids:
        fid, scope = fid if isinstance(fid, tuple) else (fid, 0)
        if fid == 91:
            out.append(_Val(0, ui=_LINKS) if _NVLINK else _Val(3))
        elif fid == 82:
            out.append(_Val(0, ui=44))
        elif fid in (138, 139) and _NVLINK:
            if scope == _ALL_LINKS:
                if _NO_ALL_LINKS:
                    out.append(_Val(2))  # NVML_ERROR_INVALID_ARGUMENT
                    continue
                total = sum(_link_kib(h, fid, k, now_us) for k in range(_LINKS))
                out.append(_Val(0, ull=total, ts=now_us))
            elif 0 <= scope < _LINKS:
                out.append(_Val(0, ull=_link_kib(h, fid, scope, now_us), ts=now_us))
            else:
                out.append(_Val(2))
        else:
            out.append(_Val(3))
    return out


def nvmlDeviceGetNvLinkState(h: _H, link: int) -> int:
    if not _NVLINK:
        raise NVMLError_NotSupported("nvlink")
    if link >= _LINKS:
        raise NVMLError_InvalidArgument("link")
    return 1


def nvmlDeviceGetNvLinkVersion(h: _H, link: int) -> int:
    return 6  # NVML_NVLINK_VERSION_4_0, what both H200s reported


def nvmlDeviceGetNvLinkRemotePciInfo(h: _H, link: int) -> _Obj:
    if _SWITCH:
        return _Obj(busId="FFFFFFFF:FF:FF.0")
    return _Obj(busId="00000000:%02X:00.0" % (0x1B + (1 - h.i)))


def nvmlDeviceGetNvLinkRemoteDeviceType(h: _H, link: int) -> int:
    if os.environ.get("FAKE_NVML_NO_REMOTE_TYPE") == "1":
        raise NVMLError_FunctionNotFound("nvmlDeviceGetNvLinkRemoteDeviceType")
    return 2 if _SWITCH else 0  # NVML_NVLINK_DEVICE_TYPE_SWITCH / _GPU


def nvmlDeviceGetTopologyCommonAncestor(a: _H, b: _H) -> int:
    if a.i == b.i:
        raise NVMLError_NotSupported("self")
    return 40


def nvmlDeviceGetP2PStatus(a: _H, b: _H, idx: object) -> int:
    if not isinstance(idx, int):
        raise TypeError("ctypes.ArgumentError: argument 3: wrong type")  # the tuple bug
    if a.i == b.i:
        return 5
    if _NVLINK and idx in (2, 3):  # NVLink and atomics: OK over NVLink
        return 0
    return 0 if idx in (0, 1, 4) else 5


def nvmlEventSetCreate() -> _Obj:
    return _Obj()


def nvmlDeviceRegisterEvents(h: _H, kinds: int, es: _Obj) -> None:
    pass


def nvmlEventSetWait_v2(es: _Obj, timeout_ms: int) -> _Obj:
    time.sleep(timeout_ms / 1000.0)
    raise NVMLError_Timeout("Timeout")
