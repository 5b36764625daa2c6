"""One module per `plateau` subcommand; each exposes `register(subparsers)`.

`register` adds its parser and sets `handler=` (a function of the parsed args returning an
exit code, or a coroutine that does). Raise `console.errors.PlateauError` for operator errors.
"""
