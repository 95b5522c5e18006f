"""Attacks from outside, run by hand against a real demo install (``python -m tests.attack.X``).

Not part of the suite: they take minutes, run real daemons and commands in loops, and report
a table of what each case does now instead of asserting (``docs/attack.md``).
"""
