"""Command groups of the memoryd CLI; each module registers its own sub-commands."""
