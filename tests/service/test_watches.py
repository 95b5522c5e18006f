"""What the daemon's main loop asks of the file system each tick to keep its watches right."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.service.watches import wanted_folders

pytestmark = pytest.mark.unit


def test_the_folders_wanted_each_tick_cost_a_look_at_the_agents_root_not_one_per_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The main loop works out the wanted folders every tick (1 s) to see whether a watched
    one went away and came back (e72530a). Each followed sessions folder under the agents
    root asked again whether the root is a folder: 500 agents, 500 stat calls a second for
    one answer. The root is looked at once; only followed folders outside it are each."""
    agents = tmp_path / "state" / "agents"
    followed = [agents / f"a{i}" / "sessions" for i in range(500)]
    for d in followed:
        d.mkdir(parents=True)
    outside = tmp_path / "claude" / "projects"
    outside.mkdir(parents=True)
    looked: list[Path] = []
    real_is_dir = Path.is_dir

    def is_dir(self: Path) -> bool:
        looked.append(self)
        return real_is_dir(self)

    monkeypatch.setattr(Path, "is_dir", is_dir)
    wanted = wanted_folders(agents, tmp_path / "state", [*followed, outside])
    assert wanted == {(str(agents), True): agents, (str(outside), True): outside}
    assert sorted(map(str, looked)) == sorted({str(agents), str(outside)})
