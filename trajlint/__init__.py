"""trajlint: build, validate and lint NeMo Gym rollout trajectories.

The Python API (`trajlint.api`) is re-exported here and imported on first use, so that
`import trajlint` and `trajlint --version` stay fast (nothing, not even `typing`, is imported
here); `__init__.pyi` tells type checkers what the names are.
"""

__version__ = "0.1.0"

__all__ = [
    "BuiltRow",
    "Finding",
    "Location",
    "Report",
    "Rollout",
    "Rule",
    "SettingsError",
    "__version__",
    "build_row",
    "check_paths",
    "check_rows",
    "rules",
]


def __getattr__(name: str) -> object:
    if name in __all__:
        import importlib

        # By name: the API sits above every stage, and the package itself is the kernel.
        return getattr(importlib.import_module("trajlint.api"), name)
    raise AttributeError(f"module 'trajlint' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
