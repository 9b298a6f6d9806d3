"""trajlint: build, validate and lint NeMo Gym rollout trajectories."""

__version__ = "0.1.0"
