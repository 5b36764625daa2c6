"""The engines Plateau knows, by the name a profile gives (`engine = "…"`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from console.engines.base import ServerEngine
from console.engines.openai import OPENAI
from console.engines.sglang import SGLANG
from console.engines.transformers_serve import TRANSFORMERS_SERVE

if TYPE_CHECKING:
    from console.config_models import ServerProfile


ENGINES: dict[str, ServerEngine] = {e.name: e for e in (SGLANG, OPENAI, TRANSFORMERS_SERVE)}


def engine_named(name: str | None) -> ServerEngine:
    """The engine called `name` (None or "": SGLang, Plateau's first)."""
    if not name:
        return SGLANG
    try:
        return ENGINES[name]
    except KeyError:
        known = ", ".join(sorted(ENGINES))
        raise ValueError(f"unknown server engine {name!r} (known: {known})") from None


def engine_of_profile(profile: ServerProfile | None) -> ServerEngine:
    return engine_named(profile.engine if profile is not None else None)
