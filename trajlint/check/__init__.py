"""The check stage: rules read a row (and, later, its build) and report findings."""
