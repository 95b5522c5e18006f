"""The real OpenClaw in memoryd's development loop (issue 20).

``python -m tests.live --help`` (from the repository root): install pinned Node and OpenClaw
from the npm registry into a cache folder, drive the real program with a scripted model on
127.0.0.1, record fixtures (``tests/fixtures/openclaw/<version>/<phase>/``) whose ground truth
comes from the tool results OpenClaw sent back to the model, and check memoryd against them.
See docs/openclaw-versions.md.
"""
