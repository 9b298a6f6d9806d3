"""The command line: `commands` turns options into calls of the stages; `config` finds and resolves
the configuration; `signals` and `exit` decide how a run ends; `build_job` is `trajlint build`."""

from trajlint.cli.commands import main

__all__ = ["main"]
