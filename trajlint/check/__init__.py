"""The check stage: rules read a row and its build, and report findings."""
