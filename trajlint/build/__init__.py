"""The build stage: derive each rollout's canonical trajectory from the evidence in its row."""

from trajlint.build.builder import Build, build

__all__ = ["Build", "build"]
