"""The A/B dialog (`a`), and a diagnosis suggestion as profile B of an A/B (the Why view's
keys): the picker's estimate becomes the plan the header counts steps and time left against,
and the choice goes to the host's session as an `ABRequested` intent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import on

from console.app.availability import Availability
from console.app.messages import ABRequested, SuggestionABRequested
from console.app.progress import ABPlan
from console.session.protocol import Session
from console.session.state import current_profile

if TYPE_CHECKING:
    from console.app.suggest_ab import CauseAB
    from console.diagnose.models import Cause
    from console.jobs.ab_models import ABRequest


class ABFlow(Availability):
    def action_ab(self) -> None:
        if self._refuse("ab"):
            return
        session = self.active_session
        names = list(self.config.profiles)
        current = current_profile(session.state, session.host)
        a = current if current in names else names[0]
        b = next(n for n in names if n != a)
        self._open_ab_picker(session, a, b)

    def _open_ab_picker(
        self, session: Session, a: str | None, b: str | None, plan: CauseAB | None = None
    ) -> None:
        """The A/B dialog (profiles, preset, concurrencies, repeats, interleave, estimate);
        with a cause's `plan`, its levels and the diagnosed run's workload, and why."""
        names_of_presets = list(self.config.sweeps) or ["default"]
        if "quick" in names_of_presets:  # the demo's fast preset first
            names_of_presets.insert(0, names_of_presets.pop(names_of_presets.index("quick")))
        from console.app import views_data
        from console.app.screens.modals import ABPicker
        from console.bench.abplan import (  # imports the engines
            model_steps,
            restart_guess,
            step_durations,
        )

        presets = {name: self.config.sweep(name) for name in names_of_presets}
        stored = views_data.step_times(self.store_path, session.host.name)

        def picked(choice: ABRequest | None) -> None:
            if choice is not None and not self._refuse("ab"):
                guess = picker.last_estimate
                if guess is not None:  # the header counts steps and time left against it
                    self.ab_plans[session.host.name] = ABPlan(
                        guess.seconds, guess.steps, session.state.clock())
                self.post_message(ABRequested(session.host.name, choice))

        picker = ABPicker(
                list(self.config.profiles), presets, a, b,
                restart_s=lambda name: restart_guess(self.config.profiles.get(name)),
                measured=lambda spec: step_durations(spec, stored),
                modelled=lambda spec, a_name, b_name: model_steps(
                    spec, self.config.profiles.get(a_name), self.config.profiles.get(b_name)),
                **_cause_ab_args(plan),
        )
        self.push_screen(picker, picked)

    # -- Why: a diagnosis suggestion as profile B of an A/B ------------------------------------

    @on(SuggestionABRequested)
    def _suggestion_ab_requested(self, message: SuggestionABRequested) -> None:
        self.open_suggestion_ab(message.cause, message.run_profile, message.plan)

    def open_suggestion_ab(
        self, cause: Cause, run_profile: str | None, plan: CauseAB | None = None
    ) -> None:
        """B = the run's profile (else the host's) with the cause's suggested flags/env,
        validated as the flags editor validates, then the A/B picker with A and B chosen."""
        from widgets.why_view import can_ab

        if not can_ab(cause):
            from console.diagnose.diagnose import suggestion_text

            self.app_note("why", f"{cause.id}: {suggestion_text(cause)} (a sweep or host "
                          "setting, not a profile change: no A/B)", "warning")
            return
        if self._refuse("ab"):
            return
        session = self.active_session
        current = current_profile(session.state, session.host)
        base = run_profile if run_profile in self.config.profiles else current
        if base is None or base not in self.config.profiles:
            self.app_note("why", f"no known profile to change on {session.host.name}", "warning")
            return
        self.run_worker(self._suggestion_ab(session, base, cause, plan), group="flags",
                        exclusive=True, exit_on_error=False,
                        description=f"A/B of {cause.id} on {session.host.name}")

    async def _suggestion_ab(
        self, session: Session, base: str, cause: Cause, plan: CauseAB | None
    ) -> None:
        from console.server.profile_edit import apply_changes

        try:
            schema = await session.flag_schema(base)
        except Exception as exc:
            self.app_note("why", f"cannot read the flags of {base} on {session.host.name}: "
                          f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                          "error")
            return
        try:
            profile, report = apply_changes(self.config.profiles[base], cause.suggest.flags,
                                            cause.suggest.env, schema)
        except ValueError as exc:
            self.app_note("why", f"{cause.id}: {str(exc).splitlines()[0]}", "error")
            return
        if not report.ok:
            self.app_note("why", f"{cause.id}: the suggested profile does not validate: "
                          + "; ".join(str(i) for i in report.errors), "error")
            return
        name = f"{base}+{cause.id}"
        if not self.add_profile(name, profile, persist=False):
            return
        self._open_ab_picker(session, base, name, plan)


def _cause_ab_args(plan: CauseAB | None) -> dict[str, Any]:
    """The A/B dialog's arguments for a cause's A/B: the run's workload at the cause's levels
    (else the preset's levels at the cause's levels), and the sentence that says so."""
    if plan is None:
        return {}
    if plan.workload is not None:
        workload = plan.workload.model_copy(update={"concurrency": list(plan.levels)})
        return {"run_workload": (plan.preset_name, workload), "note": plan.note}
    return {"levels": plan.levels, "note": plan.note}
