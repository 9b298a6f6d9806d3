"""The build stage: derive each rollout's canonical trajectory from the evidence in its row."""
