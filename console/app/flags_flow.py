"""The flags editor (`f`): read the host's `--help` schema and the running server's flags, edit
the profile, then save it as a profile (asking before replacing one) or restart with it after
one confirmation that shows what will run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from console.app.availability import Availability
from console.app.messages import RestartRequested
from console.engines import engine_of_profile
from console.session import adapters
from console.session.protocol import Session
from console.session.state import current_profile

if TYPE_CHECKING:
    from console.config_models import ServerProfile
    from widgets.flags_editor import FlagsEditorResult


class FlagsFlow(Availability):
    def action_flags(self) -> None:
        if self._refuse("flags"):
            return
        session = self.active_session
        name = current_profile(session.state, session.host)
        if name is None or name not in self.config.profiles:
            self.app_note("flags", f"no known profile to edit on {session.host.name} "
                          f"(running: {name or 'none'})", "warning")
            return
        self.notify(f"reading {name}'s flags from {session.host.name}'s --help…",
                    markup=False, timeout=3)
        self.run_worker(
            self._edit_flags(session, name), group="flags", exclusive=True,
            exit_on_error=False, description=f"flags editor on {session.host.name}",
        )

    async def _edit_flags(self, session: Session, name: str) -> None:
        from console.app.screens.modals import ConfirmScreen
        from widgets.flags_editor import FlagsEditor

        try:
            schema = await session.flag_schema(name)
            record = await session.server_record()
        except Exception as exc:
            self.app_note("flags", f"cannot read the flags of {name} on {session.host.name}: "
                          f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                          "error")
            return
        from console.session.profiles import name_problem, name_stem

        profile, chosen, note = self.config.profiles[name], None, ""
        while True:
            editor = FlagsEditor(
                name, profile, schema,
                running_flags=adapters.running_flags(record, schema),
                existing_names=frozenset(self.config.profiles),
                existing=dict(self.config.profiles),
                restart_blocked=self.unavailable_reason("restart"),
                name_problem=name_problem, name_stem=name_stem(name), name=chosen, note=note,
            )
            result = await self.push_screen_wait(editor)
            if result is None:
                return
            if result.action != "save":
                break
            failed = await self._save_edited(result)
            if failed is None:
                return
            # Not saved (an unwritable profiles.d, an existing profile kept): the edit comes
            # back with the reason.
            profile, chosen, note = result.profile, result.name, f"not saved: {failed}"
        # Restart with these flags: one confirmation that shows what will run.
        if self._refuse("restart"):
            return
        command = display_command(result.profile)
        validated = f"validated against {session.host.name}'s --help" + (
            f" ({engine_of_profile(result.profile).title} {schema.version})"
            if schema.version else "")
        lines = [f"Restart the server on {session.host.name} with these flags?", "", command,
                 "", *(change_lines(result) or ["no flag changes against the running server"]),
                 *result.warnings, validated]
        if not await self.push_screen_wait(ConfirmScreen("\n".join(lines))):
            self.app_note("flags", f"edited flags of {name} discarded")
            return
        if self.add_profile(result.name, result.profile, persist=False):
            self.post_message(RestartRequested(session.host.name, result.name))

    async def _save_edited(self, result: FlagsEditorResult) -> str | None:
        """Save as profile; replacing an existing one asks first. Returns why the edit was
        not saved (the save failed, or the operator kept the old profile: the edit comes
        back to be named otherwise), else None."""
        from console.app.screens.modals import ConfirmScreen

        if result.name in self.config.profiles:
            where = ("saved in profiles.d" if (self.profiles_dir / f"{result.name}.toml").exists()
                     else "from the config file, whose copy wins at the next start")
            question = f"A profile called {result.name} exists ({where}). Replace it?"
            if not await self.push_screen_wait(ConfirmScreen(question)):
                self.app_note("flags", f"profile {result.name} kept as it was")
                return f"{result.name} exists and was kept; choose another name"
        return self.save_profile(result.name, result.profile)


def display_command(profile: ServerProfile) -> str:
    """The effective command line as it will run (env first, secrets redacted)."""
    return adapters.display_command(profile)


def change_lines(result: FlagsEditorResult) -> list[str]:
    out = []
    for change in result.changes:
        if change.kind == "added":
            out.append(f"+ --{change.flag} {change.after}")
        elif change.kind == "removed":
            out.append(f"- --{change.flag} {change.before}")
        else:
            out.append(f"~ --{change.flag} {change.before} -> {change.after}")
    return out
