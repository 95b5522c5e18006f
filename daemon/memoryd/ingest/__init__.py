"""Transcript ingestion: sources, the checkpointed tailer, the line parser, the scanner."""
