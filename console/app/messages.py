"""Messages to the app: from the session pumps (`HostChanged`, coalesced: a run of queued ones
for the same host and aspects collapses to the newest, since the renderer reads the state
anyway), and the operator's intents from the keys, dialogs and screens."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from console.app.suggest_ab import CauseAB
    from console.diagnose.models import Cause
    from console.gpu.processes import GpuProcessRow
    from console.jobs.ab_models import ABRequest
    from console.jobs.tune_models import TuneRequest


class HostChanged(Message):
    """Host `host`'s state changed in `aspects`; the state already holds the new data."""

    def __init__(self, host: str, aspects: tuple[str, ...]) -> None:
        super().__init__()
        self.host = host
        self.aspects = aspects

    def can_replace(self, message: Message) -> bool:
        return (
            isinstance(message, HostChanged)
            and message.host == self.host
            and message.aspects == self.aspects
        )


# -- intents: what the operator asked for, going up to the app, which hands each to the host's
# session (one handler each). Posted once the keys' refusal and any confirmation have passed.


class HostIntent(Message):
    """Something asked of host `host`'s session."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host


class RestartRequested(HostIntent):
    """Restart the server with `profile` (None: the session's own choice)."""

    def __init__(self, host: str, profile: str | None) -> None:
        super().__init__(host)
        self.profile = profile


class SweepRequested(HostIntent):
    def __init__(self, host: str, preset: str = "default") -> None:
        super().__init__(host)
        self.preset = preset


class ABRequested(HostIntent):
    """An A/B as the dialog chose it (`request`: a console.jobs.ab_models.ABRequest)."""

    def __init__(self, host: str, request: ABRequest) -> None:
        super().__init__(host)
        self.request = request


class CancelRequested(HostIntent):
    """Cancel the host's running sweep or A/B."""


class TuneRequested(HostIntent):
    """The Tune view's Enter: tune as `request` (a console.jobs.tune_models.TuneRequest) says."""

    def __init__(self, host: str, request: TuneRequest) -> None:
        super().__init__(host)
        self.request = request


class TuneStopRequested(HostIntent):
    """The Tune view's `x`: stop the host's tune at its next safe point."""


class GpuSignalRequested(HostIntent):
    """`K`, confirmed: send SIGTERM to the operator's own GPU process `row` on the host."""

    def __init__(self, host: str, row: GpuProcessRow) -> None:
        super().__init__(host)
        self.row = row


class HostKeyDecided(HostIntent):
    """The operator accepted (`accept`) or refused the unknown key `fingerprint`."""

    def __init__(self, host: str, fingerprint: str, accept: bool) -> None:
        super().__init__(host)
        self.fingerprint = fingerprint
        self.accept = accept


# -- a screen's intents about app state (attributes down, messages up) -----------------------


class RunMarkToggled(Message):
    """History's `m`: mark run `run_id` for compare (two at most), or unmark it."""

    def __init__(self, run_id: int) -> None:
        super().__init__()
        self.run_id = run_id


class SuggestionABRequested(Message):
    """The Why view's keys: an A/B with a diagnosis cause's suggestion as profile B, based on
    `run_profile` (the diagnosed run's), at the levels and workload of `plan`."""

    def __init__(self, cause: Cause, run_profile: str | None, plan: CauseAB) -> None:
        super().__init__()
        self.cause = cause
        self.run_profile = run_profile
        self.plan = plan
