"""Launch profiles, flag schemas discovered from the host's own `--help`, and the restart
state machine (validate → stop → verify stopped → launch → startup → ready).

Public API: lifecycle.ServerLifecycle (start/stop/restart/status/adopt/validate/http),
events.* (typed progress), lease.host_lease (the per-host busy lease),
discovery.FlagDiscovery, validate.validate_profile, profile_edit (flags editor logic).
"""
