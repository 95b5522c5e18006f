"""The configuration resolved on this machine: OpenClaw's state dir, memoryd's own, the
followed agents with their workspaces, the tier store; folders that would fold into one
another are refused.

(No ``from __future__ import annotations``: ``NamedTuple`` would compile every string
annotation into a ``ForwardRef`` at each command's start-up.)
"""

import os
import typing
from pathlib import Path
from typing import Any, NamedTuple

from .errors import ConfigError
from .openclaw import (
    Agent,
    _workspace_of,
    active_memory_transcript_dir,
    default_agent_id,
    discover_state_dir,
    expand_home,
    extra_memory_paths,
    last_good_openclaw_json,
    normalize_agent_id,
    openclaw_json_path,
    read_openclaw_json,
    with_env_refs,
)
from .schema import Config


class Paths(NamedTuple):
    """Everything concrete that the configuration resolves to on this machine."""

    state_dir: Path  # OpenClaw's
    memoryd_dir: Path  # memoryd's own state
    db: Path
    agents: tuple[Agent, ...]
    workspace: Path  # the primary workspace (the first agent's, or the override)
    tiers_root: Path
    openclaw_file: Path | None = None  # OpenClaw's own config, read when first needed

    @property
    def openclaw(self) -> dict[str, Any]:
        """OpenClaw's own config (openclaw.json), {} when missing; the last good reading
        when it no longer parses (these paths were resolved from it: see
        :func:`last_good_openclaw_json`)."""
        return with_env_refs(last_good_openclaw_json(self.openclaw_file), os.environ)

    @property
    def reports_dir(self) -> Path:
        return self.memoryd_dir / "reports"

    def owner_of(self, path: str) -> tuple[str, str] | None:
        """(agent, path relative to its workspace) of an absolute path in an agent's workspace,
        the first agent's whose workspace holds it; None outside every workspace."""
        from ..workspace import relative_to_workspace

        for a in self.agents:
            rel = relative_to_workspace(a.workspace, path)
            if rel is not None:
                return a.id, rel
        return None

    def agent_of(self, workspace: Path) -> str:
        """The agent whose OpenClaw settings (bootstrap limits, contextInjection) apply to
        ``workspace``'s bootstrap files: the first whose workspace it is, else the first
        agent, else ``main``."""
        for a in self.agents:
            if a.workspace == workspace:
                return a.id
        return self.agents[0].id if self.agents else "main"

    def agents_counted(self, workspace: Path) -> list[str] | None:
        """The agents whose hits count on ``workspace``'s files: None (all of them) while they
        share one workspace, else those whose workspace it is (another workspace's agent has
        notes of its own under the same names)."""
        if len({a.workspace for a in self.agents}) <= 1:
            return None
        return [a.id for a in self.agents if a.workspace == workspace]


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or below it, by name and by where symlinks lead."""
    for a, b in ((path, folder), (Path(os.path.realpath(path)), Path(os.path.realpath(folder)))):
        a, b = Path(os.path.abspath(a)), Path(os.path.abspath(b))
        if a == b or b in a.parents:
            return True
    return False


def _check_places(
    cfg: Config, memoryd_dir: Path, tiers_root: Path, agents: typing.Iterable[Agent]
) -> None:
    """Refuse folders that would fold into one another (exit 2, the key named).

    memoryd's state inside ``memory/`` would be indexed by OpenClaw and could be
    archived; an archive inside the tier store would be organised (and deleted)
    as forgotten notes.
    """
    for agent in agents:
        memory = agent.workspace / "memory"
        if _inside(memoryd_dir, memory):
            raise ConfigError(
                f"state.dir: {memoryd_dir} is inside {memory}: memoryd's state must not be in "
                "the memory folder OpenClaw indexes (choose a folder outside it)"
            )
        static = cfg.archive.dir.split("{month}", 1)[0].rstrip("/\\")
        archive = agent.workspace / static if static else agent.workspace
        # (A workspace kept inside the tier root is odd but harmless: organize reads only
        # the four tier folders, so only those are off limits then.)
        store_parts = (
            [tiers_root / tier for tier in ("hot", "warm", "gist", "forgotten")]
            if _inside(agent.workspace, tiers_root)
            else [tiers_root]
        )
        if any(_inside(archive, part) for part in store_parts):
            raise ConfigError(
                f"archive.dir: {cfg.archive.dir!r} lies inside the tier store {tiers_root} "
                "(organize would treat archived notes as its own and delete them)"
            )


def _folder_name(name: str) -> bool:
    """Whether ``name`` is one folder's name (no separator, not ``.`` or ``..``)."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\")


def resolve_paths(cfg: Config, environ: typing.Mapping[str, str] | None = None) -> Paths:
    """Turn the configuration into concrete paths. Raises ConfigError for missing dirs."""
    env = os.environ if environ is None else environ
    if cfg.openclaw.state_dir:
        state_dir = expand_home(cfg.openclaw.state_dir, env)
        if not state_dir.is_dir():
            raise ConfigError(f"openclaw.state_dir: {state_dir} is not a directory")
    else:
        state_dir = discover_state_dir(env)
    oc_file = openclaw_json_path(state_dir, env)

    agents_root = state_dir / "agents"
    wanted = cfg.openclaw.agents
    if "*" in wanted:
        try:
            ids = sorted(p.name for p in agents_root.iterdir() if p.is_dir())
        except OSError:
            ids = []
    else:  # as OpenClaw files them (``"Work"`` is ``agents/work/``), unless such a folder is
        # there; a path (``../x``, ``a/b``) is never taken as it stands: it names no agent's
        # folder, and would read transcripts outside ``agents/``
        ids = [a if _folder_name(a) and (agents_root / a).is_dir() else normalize_agent_id(a)
               for a in wanted]  # fmt: skip
        ids = list(dict.fromkeys(ids))
    if not ids:
        ids = ["main"]

    override = expand_home(cfg.openclaw.workspace, env) if cfg.openclaw.workspace else None
    if override is not None and not override.is_dir():
        raise ConfigError(f"openclaw.workspace: {override} is not a directory")
    # openclaw.json names the workspaces, the extraPaths OpenClaw searches beside memory/ and
    # Active Memory's transcript folder. With the workspace given, the extraPaths are still
    # read from it, but a file that does not parse only leaves them unknown (unless that
    # helper's transcripts are wanted).
    if override is None or cfg.openclaw.include_active_memory:
        oc = with_env_refs(read_openclaw_json(oc_file), env)
        helper_dir = active_memory_transcript_dir(oc)
    else:
        oc = with_env_refs(last_good_openclaw_json(oc_file), env)
        helper_dir = active_memory_transcript_dir({})
    agents = []
    for agent_id in ids:
        ws = override or _workspace_of(agent_id, oc, state_dir, env, oc_file)
        extra = extra_memory_paths(oc, agent_id, ws)
        agents.append(Agent(agent_id, agents_root / agent_id / "sessions", ws, helper_dir, extra))
    # The primary workspace: main's, else the default agent's, the first of the two that is a
    # folder (main's `<defaults>/main` may not exist while the default agent's holds the
    # notes); the first agent's when neither is followed.
    owner = default_agent_id(oc)
    ranked = [a for wanted in ("main", owner) for a in agents if a.id == wanted] or agents[:1]
    primary = next((a.workspace for a in ranked if a.workspace.is_dir()), ranked[0].workspace)
    if override is None and primary.is_dir():
        # An agent whose own workspace is no folder at all (an install laid out by hand, or by
        # a tool sharing one workspace) looks its notes up in the primary one: its hits are not
        # dropped on a missing folder.
        agents = [a if a.workspace.is_dir() else a._replace(workspace=primary) for a in agents]

    if cfg.state.dir:
        memoryd_dir = expand_home(cfg.state.dir, env)
        if not memoryd_dir.parent.is_dir():
            raise ConfigError(f"state.dir: parent of {memoryd_dir} is not a directory")
    else:
        memoryd_dir = state_dir / "memoryd"
    tiers_root = expand_home(cfg.tiers.root, env) if cfg.tiers.root else state_dir / "memory_fs"
    _check_places(cfg, memoryd_dir, tiers_root, agents)
    return Paths(
        state_dir=state_dir,
        memoryd_dir=memoryd_dir,
        db=memoryd_dir / "state.db",
        agents=tuple(agents),
        workspace=primary,
        tiers_root=tiers_root,
        openclaw_file=oc_file,
    )
