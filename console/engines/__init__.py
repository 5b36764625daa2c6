"""The engine seam: what differs between inference engines, one module per engine.

`engine_named("transformers-serve")` returns a `ServerEngine`, a frozen description the rest of
Plateau asks instead of hard-coding one engine's strings: how its launch command takes the
model, how its `--help` reads, which line and HTTP path say it is ready, where its version
comes from, whether it has a cache flush or `/metrics`, and which request-body extensions
(beyond OpenAI's API) it accepts. See docs/architecture.md, "Add an engine".
"""

from console.engines.base import ServerEngine
from console.engines.registry import ENGINES, engine_named, engine_of_profile

__all__ = ["ENGINES", "ServerEngine", "engine_named", "engine_of_profile"]
