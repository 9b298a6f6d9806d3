"""Synthetic NeMo Gym rollout rows for benchmarks: realistic shapes, deterministic from a seed.

`plan` decides what each line of a file is (row kind, identity, defect), `rows` builds the row from
an agent `episode` whose model calls are rendered in one of the three `dialects`, `persist` turns a
raw row into the shape NeMo Gym's collector writes, and `defects` breaks a row on purpose.
"""
