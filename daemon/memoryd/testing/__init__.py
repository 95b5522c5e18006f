"""Test-data generators shared by tests and benchmarks (never used by the daemon itself)."""
