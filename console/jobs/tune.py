"""`plateau tune`: an explained, closed-loop flag search (issue 28), one job for the CLI and
the console.

    state = new_state(request, start_profile)
    state, tune_id = await run_tune(bench, state, store=store)

The loop: sweep the starting profile; diagnose it (console.diagnose); take the top actionable
cause's suggestion (console.jobs.tune_plan: the implied value, then a larger one, then the
pair with an interacting cause); validate it as the flags editor does; A/B it against the
last good profile, interleaved A B A B with restarts, at the levels where the cause acts and
with the run's workload (the pass loop is `plateau ab`'s, console.jobs.ab_passes; after a kept
step the A side is that step's B side, already measured on two launches of the profile now
good, so only B's launches are new: 2 restarts instead of 3); keep it only when the verdict
(console.bench.verdict, Bonferroni over the levels) says "better" at the knee with an
interval that excludes zero and no level worse, else record why and restart the last good
profile; re-sweep and re-diagnose the kept profile; repeat until no actionable cause is left,
the objective is met, or the budget is spent.

Safety: a candidate that does not start, crashes or yields non-finite throughput is recorded
as failed and the last good profile restarted; the host's lease is held throughout; `stop`
(Ctrl-C in the CLI) ends at the next safe point (between sweeps) with the last good profile
running. The state is written to the run store after the baseline and after every finished
A/B, so a tuner killed with SIGKILL loses at most the A/B in flight: `resume` goes on from
the stored state (the A/B in flight is run again, from its first pass).
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Callable, Sequence

from console.bench.abplan import Pass, plan_passes
from console.bench.models import StepResult
from console.bench.slo import slo_knee, slo_text
from console.bench.verdict import Verdict, judge
from console.config_models import ServerProfile
from console.diagnose.models import Diagnosis
from console.errors import PlateauError
from console.jobs.ab_passes import Collected, PassResult, SidePass, run_passes
from console.jobs.tune_bench import CandidateFailed, SweepOutcome, TuneBench
from console.jobs.tune_models import (
    Candidate,
    Change,
    Rung,
    TuneProgress,
    TuneRequest,
    TuneState,
    apply,
    state_json,
)
from console.jobs.tune_objective import ObjectiveFn, value_text
from console.jobs.tune_plan import actionable, candidates, not_actionable_note
from console.jobs.tune_stored import load_state
from console.store.db import RunStore

RUN_FLAGS = ("sim-state-file", "sim-seed")  # one demo run's, never saved (console.demo_user)


class TuneError(PlateauError):
    """The tune cannot go on (the last good profile does not start, the host is busy...)."""


class _Stopped(Exception):
    """Asked to stop: unwinds to the loop, which leaves the last good profile running."""


def new_state(request: TuneRequest, start: ServerProfile) -> TuneState:
    return TuneState(request=request, start=start)


def tuned_profile(state: TuneState) -> ServerProfile:
    """What is saved: the starting profile as the user configured it plus the kept changes
    (never a demo run's own state file or seed)."""
    profile = state.good_profile()
    flags = {k: v for k, v in profile.flags.items() if k not in RUN_FLAGS}
    description = (f"{state.request.profile} tuned by plateau tune: "
                   + ("; ".join(r.change for r in state.ladder if r.outcome == "kept")
                      or "no change kept"))
    return profile.model_copy(update={"flags": flags, "description": description})


def tuned_comment(state: TuneState, tune_id: int | None) -> str:
    """The saved tuned profile's first line: where it came from (not the flags editor)."""
    kept = "; ".join(r.change for r in state.ladder if r.outcome == "kept") or "none"
    which = f"tune {tune_id}" if tune_id is not None else "a tune"
    return (f"Saved by plateau tune ({which} of {state.request.profile} on "
            f"{state.request.host}): {state.request.profile} as configured plus the changes "
            f"its A/B verdicts kept: {kept}.")


def values_at(steps: Sequence[StepResult], value: ObjectiveFn) -> dict[int, float]:
    """Mean objective per level over the ok steps that have one (a step without an SLO
    result or power samples has none, and is not read as 0)."""
    out: dict[int, list[float]] = {}
    for s in steps:
        if s.status == "ok" and s.metrics is not None:
            v = value(s)
            if v is not None and math.isfinite(v):
                out.setdefault(s.concurrency, []).append(v)
    return {c: sum(v) / len(v) for c, v in out.items()}


def unmeasurable(state: TuneState) -> str | None:
    """Why the starting sweep cannot guide this objective, or None: no step had a value (no
    power sampled for tok/J), or it is 0 at every level (goodput: the SLO missed everywhere,
    so no change can be judged in %)."""
    goal = state.request.goal
    if not state.start_value:
        why = ("no GPU power was sampled during the sweep" if goal.name == "tok-per-joule"
               else "no step measured it")
        return f"the objective {goal.label} cannot be measured: {why}"
    if not any(v > 0 for v in state.start_value.values()):
        slo = state.request.spec.slo
        said = f" ({slo_text(slo)})" if slo is not None else ""
        return (f"{goal.label} is 0 at every level of the starting sweep: no request met the "
                f"SLO{said}; loosen it or sweep lower levels")
    return None


def ab_levels(cand: Candidate, state: TuneState) -> list[int]:
    """Where the A/B judges the candidate: the cause's levels, and, for an objective that can
    read 0 (goodput), the highest level where the good profile's value is above 0 when it is
    0 at a cause's level (a % change of 0 is none: the verdict leaves such a level out)."""
    goal = state.request.goal
    if not goal.zero_is_value or all(state.value.get(c, 1.0) > 0 for c in cand.levels):
        return cand.levels
    above = [c for c, v in state.value.items() if v > 0]
    return sorted({*cand.levels, max(above)}) if above else cand.levels


def kept_by(verdict: Verdict) -> tuple[bool, str]:
    """Keep only on a real gain: "better" at the knee with the interval above zero, and no
    level "worse"; else the reason in words."""
    delta, half = verdict.knee_delta_pct, verdict.knee_half_width_pct
    worse = [p.concurrency for p in verdict.points if p.word == "worse"]
    # A NaN compares False both ways, so `delta - half <= 0` would let it through as a gain.
    if delta is None or half is None or not math.isfinite(delta) or not math.isfinite(half):
        return False, f"no verdict ({verdict.sentence})"
    if worse:
        return False, f"worse at {','.join(map(str, worse))} ({verdict.sentence})"
    if delta - half <= 0:
        if delta + half < 0:
            return False, f"worse ({verdict.sentence})"
        return False, f"the interval crosses zero ({verdict.sentence})"
    return True, verdict.sentence


class Tuner:
    def __init__(self, bench: TuneBench, state: TuneState, store: RunStore,
                 tune_id: int | None, on_progress: Callable[[TuneProgress], None],
                 stop: asyncio.Event) -> None:
        self.bench = bench
        self.state = state
        self.store = store
        self.tune_id = tune_id
        self.say = on_progress
        self.stop = stop
        self.running: str | None = None  # "good" / "candidate" / None (unknown)
        loop = asyncio.get_running_loop()
        self._t0 = loop.time()
        self._minutes0 = state.minutes

    # -- bookkeeping ---------------------------------------------------------------------

    @property
    def request(self) -> TuneRequest:
        return self.state.request

    def minutes(self) -> float:
        return self._minutes0 + (asyncio.get_running_loop().time() - self._t0) / 60.0

    def persist(self) -> None:
        self.state.minutes = round(self.minutes(), 3)
        self.tune_id = self.store.save_tune(self.tune_id, self.request.host, self.state.status,
                                            state_json(self.state, self.tune_id))

    def _check_stop(self) -> None:
        if self.stop.is_set():
            raise _Stopped

    def good_name(self) -> str:
        kept = sum(1 for r in self.state.ladder if r.outcome == "kept")
        return self.request.profile if not kept else f"{self.request.profile}-tuned{kept}"

    # -- restarts and sweeps -------------------------------------------------------------

    async def restart_good(self, launch: str) -> None:
        self.say(TuneProgress("restart", f"restarting the last good profile {self.good_name()}"))
        self.count_launch()
        try:
            await self.bench.restart(self.good_name(), self.state.good_profile(), launch)
        except CandidateFailed as exc:
            raise TuneError(f"the last good profile {self.good_name()} did not start: "
                            f"{exc}") from None
        self.running = "good"

    def count_launch(self) -> None:
        """One more restart, stored before it begins: a tuner killed during an A/B has
        spent its launches, and the resumed tune's budget counts them."""
        self.state.restarts += 1
        self.persist()

    async def full_sweep(self, label: str) -> SweepOutcome:
        """A sweep of the good profile (running) with the whole workload, for the diagnosis."""
        self.say(TuneProgress("sweep", f"sweeping {self.good_name()} ({label})"))
        try:
            outcome = await self.bench.sweep(self.good_name(), self.state.good_profile(),
                                             self.request.spec, label=f"tune: {label}",
                                             run_id=None, repeat_base=0, finish=True)
        except CandidateFailed as exc:
            raise TuneError(f"the last good profile {self.good_name()} failed: {exc}") from None
        self.state.current_run = outcome.run_id
        self.state.value = values_at(outcome.steps, self.request.goal.value)
        return outcome

    async def baseline(self) -> None:
        self.say(TuneProgress("baseline", f"starting {self.request.profile} and sweeping it"))
        await self.restart_good("baseline")
        await self.full_sweep(f"{self.request.profile} (start)")
        self.state.start_run = self.state.current_run
        self.state.start_value = dict(self.state.value)
        self.persist()

    # -- diagnosis -----------------------------------------------------------------------

    def diagnose(self) -> Diagnosis:
        run_id = self.state.current_run
        steps = self.store.get_run(run_id).steps if run_id is not None else []
        diagnosis = self.bench.diagnose(run_id, steps)
        for cause in diagnosis.causes:
            note = not_actionable_note(cause)
            if not actionable(cause) and note not in self.state.notes:
                self.state.notes.append(note)
        return diagnosis

    def objective_met(self) -> str | None:
        """Why the objective counts as met (`--target` reached at the top level), or None.
        Meeting the SLO at every level does not end a goodput tune: goodput is then the
        request rate, which a kept change can still raise; it is noted once."""
        self._note_slo_met()
        target, value = self.request.target, self.state.value
        if target is None or not value or value[max(value)] < target:
            return None
        goal = self.request.goal
        return (f"objective met: {value_text(value[max(value)], goal)} at {max(value)} "
                f"(target {value_text(target, goal)})")

    def _note_slo_met(self) -> None:
        slo, run_id = self.request.spec.slo, self.state.current_run
        if slo is None or run_id is None or self.request.goal.name != "goodput":
            return
        knee = slo_knee(self.store.get_run(run_id).steps, slo)
        note = ("the SLO is met at every level: goodput now rises only with the request "
                "rate, which the tune goes on raising while a cause is actionable")
        if knee.kind == "meets-all" and note not in self.state.notes:
            self.state.notes.append(note)

    def budget_left(self, cand: Candidate) -> str | None:
        """None, or why the next A/B does not fit the budget."""
        r = self.request
        planned, what = self.planned_restarts(cand)
        if r.budget_restarts is not None and \
                self.state.restarts + planned > r.budget_restarts:
            return (f"budget spent: {self.state.restarts} of {r.budget_restarts} restarts used, "
                    f"the next A/B needs {planned} ({what})")
        if r.budget_minutes is not None and self.minutes() >= r.budget_minutes:
            return f"budget spent: {self.minutes():.1f} of {r.budget_minutes:g} minutes used"
        return None

    def planned_restarts(self, cand: Candidate) -> tuple[int, str]:
        """What the next A/B may cost, in restarts, and in words: its launches, and the
        restart of the last good profile should the candidate not be kept (reserved, so a
        tune never ends past its budget or without the last good profile running)."""
        revert = "1 to restart the last good profile should it not be kept"
        if self.reusable_a(cand) is not None:
            launches = self.request.repeats
            return launches + 1, (f"{launches} launches of the candidate, its A side being "
                                  f"step {len(self.state.ladder)}'s B side, and {revert}")
        switches = 2 * self.request.repeats - (1 if self.running == "good" else 0)
        return switches + 1, f"{switches} launches of the A/B's sides, and {revert}"

    def reusable_a(self, cand: Candidate) -> int | None:
        """The stored run whose repeats can be this A/B's A side, or None. The previous step
        kept its candidate, so its B side measured the good profile, each repeat on a launch
        of its own, at the same levels with the same workload a moment ago: measuring it again
        would only cost restarts (issue 28: within 2 % of a grid's best in a quarter of its
        restarts). Only the previous step's, so the A side is never older than one A/B."""
        if not self.state.ladder:
            return None
        last = self.state.ladder[-1]
        if last.outcome != "kept" or last.run_b is None or last.levels != cand.levels:
            return None
        return last.run_b

    # -- one candidate -------------------------------------------------------------------

    def _rung(self, cand: Candidate, outcome: str, reason: str, **kw: object) -> Rung:
        return Rung.model_validate({
            "step": len(self.state.ladder) + 1, "cause": cand.cause,
            "change": cand.change.text(), "applied": cand.change, "why": cand.why,
            "outcome": outcome,
            "reason": reason, "predicted_pct": cand.gain_pct, "levels": cand.levels,
            "cumulative_pct": round(self.state.gain_pct, 2), "restarts": self.state.restarts,
            "minutes": round(self.minutes(), 2), "interacts": cand.interacts, **kw})

    async def attempt(self, cand: Candidate) -> Rung:
        self.say(TuneProgress("validate", f"{cand.cause}: {cand.change.text()} ({cand.why})"))
        good = self.state.good_profile()
        profile, problems = await self.bench.check(good, cand.change)
        if profile is None:
            return self._rung(cand, "invalid", "does not validate: " + "; ".join(problems))
        if profile == good:
            return self._rung(cand, "skipped", "the profile already has this")
        step = len(self.state.ladder) + 1
        resumed = self.state.in_flight == step  # stored mid-A/B: this A/B runs again
        self.state.in_flight = step
        self.persist()
        try:
            verdict, runs, reused = await self._ab(cand, profile, step)
        except CandidateFailed as exc:
            await self._revert(step)
            return self._rung(cand, "failed", str(exc), resumed=resumed)
        keep, reason = kept_by(verdict)
        common = {"delta_pct": verdict.knee_delta_pct,
                  "half_width_pct": verdict.knee_half_width_pct, "resumed": resumed,
                  "sentence": verdict.sentence, "run_a": runs[0], "run_b": runs[1],
                  "reused_a": reused}
        if not keep:
            await self._revert(step)
            return self._rung(cand, "rejected", reason, **common)
        self.state.kept = self.state.kept.merged(cand.change)
        self.state.gain_pct = ((1 + self.state.gain_pct / 100) *
                               (1 + (verdict.knee_delta_pct or 0.0) / 100) - 1) * 100
        self.running = "good"  # the candidate that runs is now the good profile
        return self._rung(cand, "kept", reason, **common)

    async def _revert(self, step: int) -> None:
        if self.running != "good":
            self.say(TuneProgress("revert", "reverting to the last good profile"))
            await self.restart_good(f"{step}:revert")

    async def _ab(self, cand: Candidate, profile: ServerProfile, step: int
                  ) -> tuple[Verdict, tuple[int | None, int | None], int | None]:
        """Interleaved A B A B at the candidate's levels (console.jobs.ab_passes, as `plateau
        ab`); with the previous kept step's B run as the A side, only B's passes, each on a
        launch of its own. CandidateFailed when B fails."""
        spec = self.request.spec.model_copy(update={"concurrency": cand.levels, "repeats": 1})
        name_b = f"{self.request.profile}+{cand.cause}"
        sides = {"A": (self.good_name(), self.state.good_profile()), "B": (name_b, profile)}
        plan = plan_passes(self.request.repeats, True)
        index = {id(p): i for i, p in enumerate(plan)}  # launches are named by plan position
        reused = self.reusable_a(cand)
        got = Collected()
        if reused is not None:
            got.steps["A"] = [s for s in self.store.get_run(reused).steps if s.status == "ok"]
            got.runs["A"] = reused
            plan_run = [p for p in plan if p.side == "B"]
        else:
            plan_run = plan

        def where(number: int) -> str:
            return f"pass {number}/{len(plan_run)}"

        async def restart(number: int, p: Pass) -> None:
            name, prof = sides[p.side]
            launch = f"{step}:{index[id(p)]}"
            if p.side == "A":
                await self.restart_good(launch)
                return
            self.say(TuneProgress("restart", f"step {step}: restarting into {name} "
                                             f"({where(number)})"))
            self.running = None
            self.count_launch()
            await self.bench.restart(name, prof, launch)
            self.running = "candidate"

        async def sweep(number: int, p: SidePass) -> PassResult:
            name, prof = sides[p.side]
            self.say(TuneProgress("sweep", f"step {step}: {name} at {cand.levels} "
                                           f"({where(number)})"))
            try:
                out = await self.bench.sweep(name, prof, spec, label=f"tune {step} {p.side}: "
                                             f"{name}", run_id=p.run_id,
                                             repeat_base=p.repeat_base, finish=p.last)
            except CandidateFailed:
                self.running = None
                if p.side == "A":
                    raise TuneError(f"the last good profile {name} failed during "
                                    "its A/B pass") from None
                raise
            self._check_finite(p.side, out.steps)
            return PassResult(out.run_id, out.steps)

        got = await run_passes(plan_run, restart=restart, sweep=sweep, interleave=True,
                               running="A" if self.running == "good" else None,
                               collected=got, before_pass=lambda _n, _p: self._check_stop())
        runs = got.runs
        verdict = judge(got.steps["A"], got.steps["B"], label_a=self.good_name(),
                        label_b=name_b, interleaved=True, metric=self.request.metric,
                        value_of=self.request.goal.value)
        if runs["A"] is not None and runs["B"] is not None:
            self.store.save_pair(runs["A"], runs["B"], {
                "verdict": verdict.model_dump(mode="json"), "sentence": verdict.sentence,
                "name_a": self.good_name(), "name_b": name_b, "repeats": self.request.repeats,
                "interleaved": True, "preset": self.request.preset, "tune": self.tune_id,
                "reused_a": reused})
        return verdict, (runs["A"], runs["B"]), reused

    def _check_finite(self, side: str, steps: Sequence[StepResult]) -> None:
        bad = [s for s in steps if s.status == "ok" and s.metrics is not None
               and not math.isfinite(s.metrics.headline_total_tok_s())]
        if bad and side == "B":
            self.running = None
            raise CandidateFailed("produced non-finite throughput")

    # -- the loop ------------------------------------------------------------------------

    async def run(self) -> TuneState:
        state = self.state
        state.status = "running"
        async with self.bench.lease(f"tune {self.request.profile}"):
            try:
                if state.current_run is None:
                    await self.baseline()
                elif state.stale:
                    await self.resweep()
                await self._loop()
            except _Stopped:
                await self._leave_good("stopped at your request (at a safe point)")
            except (PlateauError, OSError) as exc:
                state.status, state.stop_reason = "failed", str(exc).splitlines()[0]
                await self._leave_running()
                self.persist()
                raise
        return state

    async def _leave_running(self) -> None:
        """After a failure, never no server: the last profile that ran through a whole sweep
        is started again where something else (or nothing) runs, and the reason says so."""
        if self.state.current_run is None or self.running == "good":
            return
        try:
            await self.restart_good("recover")
        except (PlateauError, OSError):
            return
        self.state.stop_reason += (f"; {self.good_name()}, the last profile that ran through "
                                   "a whole sweep, runs again")

    async def _leave_good(self, why: str) -> None:
        self.state.status, self.state.stop_reason = "stopped", why
        if self.running != "good":
            await self.restart_good("stop")
        self.persist()

    async def _loop(self) -> None:
        state = self.state
        while True:
            self._check_stop()
            diagnosis = self.diagnose()
            met = self.objective_met()
            if met:
                return self._finish(met)
            if not state.ladder and (why := unmeasurable(state)):
                return self._finish(why)
            todo = candidates(diagnosis, state.good_profile(), self.request.spec.concurrency,
                              state.tried)
            if not todo:
                return self._finish(self._nothing_left(diagnosis))
            kept = False
            for found in todo:
                self._check_stop()
                cand = found.model_copy(update={"levels": ab_levels(found, state)})
                short = self.budget_left(cand)
                if short:
                    if self.running != "good":
                        await self.restart_good("budget")
                    return self._finish(short, status="done")
                rung = await self.attempt(cand)
                state.in_flight = None
                state.ladder.append(rung)
                state.tried.append(found.change.key())
                self.say(TuneProgress("verdict", f"{rung.cause}: {rung.outcome}: "
                                                 f"{rung.reason}", rung))
                self.persist()
                if rung.outcome == "kept":
                    kept = True
                    break
            if kept:
                await self.resweep()

    async def resweep(self) -> None:
        """The kept profile's own full sweep, for the next diagnosis. `stale` is stored first:
        a tuner killed before this sweep was stored does it again when resumed. The sweep
        confirms the keep: a kept profile that does not start again or fails in it (a crash
        later than its A/B passes ran) is undone (`_undo_keep`)."""
        state = self.state
        tried_before = list(state.tried)
        state.tried = []  # a new base: earlier rejections are judged again if suggested
        state.stale = True
        self.persist()
        try:
            if self.running != "good":
                await self.restart_good(f"{len(state.ladder)}:resweep")
            await self.full_sweep(f"{self.good_name()} (after step {len(state.ladder)})")
        except TuneError as exc:
            if not any(r.outcome == "kept" for r in state.ladder):
                raise
            self.running = None
            await self._undo_keep(str(exc), tried_before)
            return
        state.stale = False
        self.persist()

    async def _undo_keep(self, why: str, tried: list[str]) -> None:
        """The newest kept step failed its confirmation: it becomes "failed", the kept
        changes and the gain are those before it, and the profile they make, the last one
        that ran through a whole sweep (its sweep is still `current_run`), runs again."""
        state = self.state
        failed_name = self.good_name()
        index = max(i for i, r in enumerate(state.ladder) if r.outcome == "kept")
        rung = state.ladder[index]
        kept = [r for r in state.ladder[:index] if r.outcome == "kept"]
        state.kept = functools.reduce(lambda so_far, r: so_far.merged(r.applied), kept,
                                      Change())
        state.gain_pct = kept[-1].cumulative_pct if kept else 0.0
        state.ladder[index] = rung.model_copy(update={
            "outcome": "failed", "cumulative_pct": round(state.gain_pct, 2),
            "reason": f"kept ({rung.reason}), then failed its confirmation sweep: {why}"})
        state.tried = [*tried, *([] if rung.applied.key() in tried else [rung.applied.key()])]
        state.stale = False
        note = (f"step {rung.step} ({rung.change}) was kept, then {failed_name} failed its "
                f"confirmation sweep: reverted to {self.good_name()}, the last profile that "
                "ran through a whole sweep")
        state.notes.append(note)
        self.say(TuneProgress("revert", note))
        await self.restart_good(f"{rung.step}:undo")
        self.persist()

    def _nothing_left(self, diagnosis: Diagnosis) -> str:
        if not diagnosis.causes:
            return "no clear cause left (" + diagnosis.verdict + ")"
        if not any(actionable(c) for c in diagnosis.causes):
            return "no actionable cause left: " + "; ".join(
                not_actionable_note(c) for c in diagnosis.causes)
        return ("every suggestion of the remaining causes was judged: "
                + ", ".join(c.id for c in diagnosis.causes if actionable(c)))

    def _finish(self, why: str, status: str = "done") -> None:
        self.state.status = "done" if status == "done" else "stopped"
        self.state.stop_reason = why
        self.say(TuneProgress("done", why))
        self.persist()


async def run_tune(
    bench: TuneBench,
    state: TuneState,
    *,
    store: RunStore,
    tune_id: int | None = None,
    on_progress: Callable[[TuneProgress], None] = lambda _p: None,
    stop: asyncio.Event | None = None,
) -> tuple[TuneState, int | None]:
    """Run (or, with a stored state, resume) a tune; returns the final state and its id."""
    if tune_id is not None:
        state.resumed += 1
    tuner = Tuner(bench, state, store, tune_id, on_progress, stop or asyncio.Event())
    if tune_id is None:
        tuner.persist()  # the tune exists (and can be resumed) from its first moment
    await tuner.run()
    return tuner.state, tuner.tune_id


__all__ = ["Change", "TuneError", "ab_levels", "apply", "kept_by", "load_state", "new_state",
           "run_tune", "tuned_comment", "tuned_profile", "unmeasurable", "values_at"]
