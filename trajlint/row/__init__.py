"""The row as NeMo Gym writes it, below every stage: its section keys, walks over its items with
their JSON pointers, and how its values are compared and grouped."""
