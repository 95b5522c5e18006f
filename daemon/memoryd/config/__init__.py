"""Configuration: one validated TOML schema, plus OpenClaw discovery.

Four modules, one job each, and this package's names are theirs (so ``from memoryd.config
import Config, resolve_paths`` works):

- :mod:`.schema`: the tree of named tuples, one per TOML table, each key a typed field with
  its default and its description;
- :mod:`.validation`: a TOML file read and checked against the schema, the schedules' and
  the zone's checks (:func:`job_schedules`, :func:`schedule_timezone`);
- :mod:`.openclaw`: OpenClaw's state dir, ``openclaw.json``, agents and workspaces, found by
  OpenClaw's own rules;
- :mod:`.paths`: the configuration resolved to this machine's folders (:func:`resolve_paths`);

and :mod:`.errors`, the two refusals.
"""

from .errors import (
    ConfigError,
    OpenClawJsonError,
)
from .openclaw import (
    ACTIVE_MEMORY_TRANSCRIPT_DIR,
    Agent,
    active_memory_transcript_dir,
    agent_entry,
    default_agent_id,
    default_workspaces,
    discover_state_dir,
    expand_home,
    extra_memory_paths,
    last_good_openclaw_json,
    normalize_agent_id,
    openclaw_home,
    openclaw_json_path,
    read_openclaw_json,
    resolve_workspace,
    workspace_candidates,
)
from .paths import (
    Paths,
    resolve_paths,
)
from .schema import (
    EXPIRE_POLICIES,
    RETIRED_POLICIES,
    ArchiveConfig,
    Config,
    DaemonConfig,
    ExpireConfig,
    IngestConfig,
    LogConfig,
    NotifyConfig,
    OpenClawConfig,
    PluginConfig,
    PromoteConfig,
    RetireConfig,
    ScheduleConfig,
    ScoreConfig,
    StateConfig,
    TelegramConfig,
    TiersConfig,
    is_table,
    runs_left_out,
)
from .validation import (
    MAX_CHUNK_BYTES,
    MIN_CHUNK_BYTES,
    MIN_CLOCK_JUMP_SECONDS,
    archive_dir_problem,
    config_path_from,
    job_schedules,
    load_config,
    parse_config,
    schedule_timezone,
)

__all__ = [
    "ACTIVE_MEMORY_TRANSCRIPT_DIR",
    "EXPIRE_POLICIES",
    "MAX_CHUNK_BYTES",
    "MIN_CHUNK_BYTES",
    "MIN_CLOCK_JUMP_SECONDS",
    "RETIRED_POLICIES",
    "Agent",
    "ArchiveConfig",
    "Config",
    "ConfigError",
    "DaemonConfig",
    "ExpireConfig",
    "IngestConfig",
    "LogConfig",
    "NotifyConfig",
    "OpenClawConfig",
    "OpenClawJsonError",
    "Paths",
    "PluginConfig",
    "PromoteConfig",
    "RetireConfig",
    "ScheduleConfig",
    "ScoreConfig",
    "StateConfig",
    "TelegramConfig",
    "TiersConfig",
    "active_memory_transcript_dir",
    "agent_entry",
    "archive_dir_problem",
    "config_path_from",
    "default_agent_id",
    "default_workspaces",
    "discover_state_dir",
    "expand_home",
    "extra_memory_paths",
    "is_table",
    "job_schedules",
    "last_good_openclaw_json",
    "load_config",
    "normalize_agent_id",
    "openclaw_home",
    "openclaw_json_path",
    "parse_config",
    "read_openclaw_json",
    "resolve_paths",
    "resolve_workspace",
    "runs_left_out",
    "schedule_timezone",
    "workspace_candidates",
]
