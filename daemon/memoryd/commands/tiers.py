"""Commands of this group (being built)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add this group's commands to the ``memoryd`` parser."""
