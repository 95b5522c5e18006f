"""Configuration: one validated TOML schema, plus OpenClaw discovery.

Re-exports what the rest of memoryd uses from :mod:`.schema` (the typed tree of tables),
:mod:`.validation` (reading and checking a file), :mod:`.openclaw` (OpenClaw's own discovery
rules), :mod:`.paths` (the folders on this machine) and :mod:`.errors`.
"""

from .errors import ConfigError, OpenClawJsonError
from .openclaw import (
    Agent,
    active_memory_transcript_dir,
    agent_entry,
    default_agent_id,
    discover_state_dir,
    expand_home,
    normalize_agent_id,
    read_openclaw_json,
    resolve_workspace,
)
from .paths import Paths, resolve_paths
from .schema import (
    EXPIRE_POLICIES,
    Config,
    ExpireConfig,
    NotifyConfig,
    OpenClawConfig,
    PromoteConfig,
    ScheduleConfig,
    ScoreConfig,
    TelegramConfig,
    TiersConfig,
    is_table,
    runs_left_out,
)
from .validation import (
    archive_dir_problem,
    config_path_from,
    job_schedules,
    load_config,
    parse_config,
    schedule_timezone,
)

__all__ = [
    "EXPIRE_POLICIES",
    "Agent",
    "Config",
    "ConfigError",
    "ExpireConfig",
    "NotifyConfig",
    "OpenClawConfig",
    "OpenClawJsonError",
    "Paths",
    "PromoteConfig",
    "ScheduleConfig",
    "ScoreConfig",
    "TelegramConfig",
    "TiersConfig",
    "active_memory_transcript_dir",
    "agent_entry",
    "archive_dir_problem",
    "config_path_from",
    "default_agent_id",
    "discover_state_dir",
    "expand_home",
    "is_table",
    "job_schedules",
    "load_config",
    "normalize_agent_id",
    "parse_config",
    "read_openclaw_json",
    "resolve_paths",
    "resolve_workspace",
    "runs_left_out",
    "schedule_timezone",
]
