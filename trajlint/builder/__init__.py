"""The build stage: derive each rollout's canonical trajectory from the evidence in its row."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trajlint.builder.steps import Build, build

__all__ = ["Build", "build"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so that reading a row's identity does not load the whole builder.
    if name in __all__:
        from trajlint.builder import steps

        return getattr(steps, name)
    raise AttributeError(name)
