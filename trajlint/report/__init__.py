"""The report stage: findings and run statistics in the formats users and CI systems read.

Formatters see only findings and the summary; they never know which rule produced what.
"""
