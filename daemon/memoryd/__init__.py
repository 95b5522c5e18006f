"""memoryd: measures which memory files an agent uses and keeps its workspace lean."""

__version__ = "0.1.0"
