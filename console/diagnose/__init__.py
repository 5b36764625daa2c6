"""Why a run plateaued: evidence collected per sweep step, stored with the run, and pure rules
that rank causes (registered with their ids in console/diagnose/registry.py)."""
