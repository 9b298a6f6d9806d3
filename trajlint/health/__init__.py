"""NeMo Gym's rollout health, on trajlint's build of each row.

`view` sees one row the way NeMo Gym's health checks do; `checks` is the one registry of NeMo
Gym's checks (id, the rules that cover it, the evidence it reads, how it finds); `tasks` keeps
each task's repeats compactly; `verdicts` judges each row and reduces the run to NeMo Gym's
health summary. Nothing here imports the check stage: it hands health a row (a subject) and the
rules' outcome, and takes back verdicts and the task checks' flags.
"""
