"""How long ``memoryd simulate`` takes on a year of history (350 files, ~5,000 hits).

    .venv/bin/python bench/bench_simulate.py [--seed N] [--repeat K]

Writes a generated history (``support.histories``) into a throw-away
workspace and state database, then times the pure replay (five policies, with
restore matching) and the whole command (``python -m memoryd simulate --json
--no-scan``, a fresh process: start-up, reading, replay and printing). The
target is under 2 s for the command.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "daemon"))
# tests/: its support/ and live/ packages are test-only code, not in the wheel
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from memoryd.policy import candidates as pc
from memoryd.policy import replay as rp
from support.histories import GenParams, generate, replay_inputs, write_history


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    # a year, about 350 files and 5,000 hits
    h = generate(args.seed, GenParams(days=365, one_offs=100, results=(1, 5)))
    print(f"history: {len(h.files)} files, {len(h.hits)} hits, {len(h.calls)} searches, 365 days")
    inp = replay_inputs(h)
    policies = [pc.policy_named(n) for n in ("seed", "cut30", "none", pc.DEFAULT_POLICY)]
    core = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        rp.replay(inp["files"], inp["hits"], inp["runs"], policies, needs=inp["needs"])
        core.append(time.perf_counter() - t0)
    print(
        f"pure replay, 4 policies, {len(inp['runs'])} runs: median {statistics.median(core):.3f} s"
    )
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "oc"
        ws = state / "workspace"
        (state / "agents" / "main" / "sessions").mkdir(parents=True)
        write_history(h, ws, state / "memoryd" / "state.db")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
        env.update(HOME=tmp, OPENCLAW_STATE_DIR=str(state), MEMORYD_NOW=str(h.end))
        cmd = [sys.executable, "-m", "memoryd", "simulate", "--json", "--no-scan"]
        whole = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            whole.append(time.perf_counter() - t0)
        print(
            f"memoryd simulate --json (fresh process): median {statistics.median(whole):.3f} s, "
            f"min {min(whole):.3f} s"
        )


if __name__ == "__main__":
    main()
