"""Why a run plateaued: evidence collected per sweep step, stored with the run, and pure rules
that rank causes (console/diagnose/rules.py lists the cause ids)."""
