"""Work that holds a host, one implementation for the CLI commands and the console's session.

- `target`: where to work: `--demo` (the simulated host, started through the lifecycle),
  a configured HOST (its profile's port through a port forward) or `--url`.
- `sweep`: a concurrency sweep against a target (lease, engine, API key, run store).
- `server`: start / stop / restart / status of a host's server.
- `ab`: A/B between two launch profiles (restart into A, sweep, restart into B, sweep, compare).

Jobs take the host-wide lease (console.server.lease); the front ends only choose what to run
and render the typed progress the jobs report.
"""
