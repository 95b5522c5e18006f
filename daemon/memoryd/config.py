"""Configuration: one validated TOML schema, plus OpenClaw discovery.

The schema is a tree of named tuples, one per TOML table (immutable, and cheap to
define: a one-shot command's start-up pays for every class). Validation walks
their fields, so adding a key means adding one typed field with a default and a
description below it (``python -m memoryd.config_reference`` writes
config/memoryd.toml and docs/configuration.md's table from them): unknown keys
and wrong types are rejected with a message that names the key (exit code 2 at
the command layer), never silently ignored. Every command loads a config through
:func:`load_config`, and schedules and the zone are checked by the functions that
read them (:func:`job_schedules`, :func:`schedule_timezone`, over the rules of
:mod:`memoryd.timerules`), so a file is accepted or refused alike everywhere.

Discovery follows OpenClaw's own rules (state dir, agents, workspaces) so that
memoryd with no configuration at all watches what OpenClaw writes.

(No ``from __future__ import annotations`` here: ``NamedTuple`` turns every string
annotation into a ``ForwardRef``, compiling it, and the schema's hundred fields are a
read command's start-up; evaluated annotations cost nothing.)
"""

import functools
import math
import os
import posixpath
import re
import typing
from datetime import tzinfo
from pathlib import Path
from typing import Any, NamedTuple

from . import timerules


class ConfigError(Exception):
    """A configuration problem a person must fix; the message names the key or file."""


class OpenClawJsonError(ConfigError):
    """OpenClaw's own ``openclaw.json`` is there but does not parse (a truncated JSON5 file, a
    half-written edit). Never read as empty: an empty config sends discovery to
    ``~/.openclaw/workspace``, and ``expire --force`` would act on a folder the user never
    configured. Every command stops on it (exit 2); the daemon keeps the view it last
    resolved and says so in ``status``."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"{path}: cannot be read as JSON5 ({reason}); fix the file, memoryd "
            "does not guess where the workspace is without it"
        )
        self.path = path
        self.reason = reason


# --------------------------------------------------------------------------- schema
# Each key is one typed field with its default, and its description right below it (an
# attribute docstring: free at run time, read by ``memoryd.config_reference``, which
# generates config/memoryd.toml and the key table of docs/configuration.md from it).
# Descriptions are Markdown; a sentence they end with is printed as it stands.


class OpenClawConfig(NamedTuple):
    state_dir: str = ""
    """OpenClaw's state directory. `""` = found as OpenClaw finds it: `$OPENCLAW_STATE_DIR`,
    then `~/.openclaw`, then the legacy `~/.clawdbot`, `~/.moldbot`, `~/.moltbot`
    (`$OPENCLAW_HOME` replaces `$HOME`)."""
    agents: tuple[str, ...] = ("*",)
    """Agent ids to follow under `<state_dir>/agents/` (as OpenClaw files them: `"Work"` is
    `agents/work/`). `"*"` = every agent found there."""
    workspace: str = ""
    """The workspace holding `MEMORY.md` and `memory/`. `""` = as OpenClaw resolves it from
    `openclaw.json`: the agent's own `agents.entries.<id>.workspace` (`agents.list[].workspace`
    only when there is no `agents.entries`; an id's first entry decides); for the default agent
    `agents.defaults.workspace`, else `~/.openclaw/workspace` (`workspace-<profile>` under a
    profile); for another agent `<agents.defaults.workspace>/<id>`, else
    `<state_dir>/workspace-<id>` (where builds differ, the candidate holding notes wins: see
    docs/ingest.md)."""
    include_active_memory: bool = False
    """Also count the Active Memory helper's recall runs: its kept transcripts
    (`sessions/active-memory/*.jsonl`, or in newer builds
    `<state_dir>/plugins/active-memory/transcripts/agents/<id>/active-memory/*.jsonl`, or the
    folder the plugin's `transcriptDir` names under `…/agents/<id>/`) and, on a SQLite store
    install, its sessions in the store (keys `…:active-memory:…`)."""
    count_synthetic: bool = False
    """Count every kind of synthetic traffic: what `count_heartbeat`, `count_cron` and
    `count_dreaming` name, as if all three were on. Off: each kind as its own key says."""
    count_heartbeat: bool = False
    """Count hits made by OpenClaw's heartbeat runs: turns whose user message is the heartbeat
    poll (`provenance.sourceTool = "heartbeat"`, text `[OpenClaw heartbeat poll]`), in the
    main session where they run by default or any other, and isolated heartbeat sessions
    (keys ending `:heartbeat`). Told by the transcript's markers, never by a word in a
    session's name: a session called `heartbeat-notes` is the user's.
    Off: they are not the user's interest."""
    count_cron: bool = False
    """Count hits made by automation (cron) jobs: isolated runs (keys `agent:<id>:cron:…`) and
    jobs pinned to a named session, whose turns begin `[cron:<jobId> <name>]`.
    Off: they are not the user's interest."""
    count_dreaming: bool = False
    """Count hits made by OpenClaw's dreaming: its recall queries (`__dreaming_…`) and its
    dream-diary runs (keys with a `dreaming-narrative-…` part).
    Off: they are not the user's interest."""
    claude_projects: tuple[str, ...] = ()
    """Claude Code project folders (`~/.claude/projects/<name>`) to read as well, for
    OpenClaw running through Claude Code; their hits count for the first agent."""


def runs_left_out(oc: OpenClawConfig) -> frozenset[str]:
    """The kinds of run whose hits are not counted (``heartbeat``, ``cron``, ``dreaming``):
    each one whose ``count_<kind>`` is off, none with ``count_synthetic``."""
    if oc.count_synthetic:
        return frozenset()
    wanted = {"heartbeat": oc.count_heartbeat, "cron": oc.count_cron, "dreaming": oc.count_dreaming}
    return frozenset(kind for kind, counted in wanted.items() if not counted)


class StateConfig(NamedTuple):
    dir: str = ""
    """memoryd's own state (`state.db`, `reports/`, `graveyard/`, the lock).
    `""` = `<state_dir>/memoryd`. Never inside a workspace's `memory/` folder (refused)."""


class IngestConfig(NamedTuple):
    chunk_bytes: int = 1 << 20
    """Bytes read from a transcript at a time (at least 4096, at most 64 MiB: each read
    holds that much memory, twice while a line spans two reads)."""
    max_line_bytes: int = 64 << 20
    """A single line longer than this is skipped (and counted as oversized). An event of
    OpenClaw's SQLite store longer than this, plain or compressed, is skipped too (counted as a
    malformed row, its reason logged)."""
    vanished_grace_days: int = 7
    """A transcript that disappeared keeps its checkpoint this long (it may come back
    renamed)."""
    parallel_min_bytes: int = 24 << 20
    """A backlog of at least this many unread bytes (24 MiB; a first scan, a scan after
    downtime) is read by two processes: a forked helper finds and parses the lines of the
    last transcripts while memoryd reads and commits the first ones. The counts are the
    same either way. `0` keeps every scan in one process."""
    helper: str = "auto"
    """When that helper runs: `"auto"` only when another core is idle (at least two usable
    cores, and neither the 1-minute load average nor the tasks runnable right now, besides the
    scan, leave less than one core free; otherwise the helper would only take turns with the
    scan on one core); `"always"` whenever the backlog is large enough; `"never"`. The counts
    are the same either way."""


class ArchiveConfig(NamedTuple):
    dir: str = "memory-archive/{month}"
    """Where expire moves files, relative to the workspace; `{month}` is the YYYY-MM of the
    run and the file keeps its path below it (`memory-archive/2026-11/memory/2026-09-01.md`).
    Outside `memory/` by default, because OpenClaw indexes `memory/` recursively. A folder
    inside `memory/` works too, such as `"memory/archive-{month}"` (OpenClaw then indexes the
    archive too). Refused values: see `docs/configuration.md`."""


# The expire policies a user picks, by name (memoryd.policy.candidates.named_policies; kept
# here as names so reading the config imports no policy code). "likely" was chosen by replay.
EXPIRE_POLICIES = ("likely", "seed", "none")
# Names the setting took before the research candidates left it: each config naming one is
# refused with what to write instead (`memoryd simulate --policy` still replays the first two).
RETIRED_POLICIES = {
    "likely-generic": "is no longer a setting: use 'likely' (it starts from the same chance)",
    "cut30": "is no longer a setting: use 'seed' (min_age_days = 30, a large max_hits)",
    **dict.fromkeys(
        ("rhythm", "rhythm-strong", "actr", "kind", "renewal"),
        "was a research policy and is no longer a setting: use 'likely' (the default)",
    ),
}


class ExpireConfig(NamedTuple):
    policy: str = "likely"
    """The rule expire uses (`memoryd simulate` replays them all on your own history):
    `likely` (chosen by replay, see [decisions.md](decisions.md): archive when the file's
    chance of being needed in the next 60 days, from its own hits and their strength, is
    low; once your history holds 200 past verdicts over 3 runs, that chance is
    recalibrated on them and the cut chosen by `later_needed_target` and `archive_floor`;
    before, the generic chance and a 10 % cut), `seed` (the `min_age_days` /
    `window_days` / `max_hits` rule below, exactly), or `none` (archive nothing)."""
    later_needed_target: float = 0.05
    """Under `policy = "likely"`, calibrated: the cut is the largest whose archives, over
    your own past verdicts, were followed by a strong hit (read, or retrieved first)
    within 60 days at most this share of the time (0–1)..."""
    archive_floor: float = 0.5
    """...unless that cut archives less than this share (0–1) of the past verdicts not
    followed by a strong hit: then the smallest cut that archives this share, never above
    50 % (the target cannot be met at a useful coverage; `memoryd status` and `simulate`
    show the rates)."""
    min_age_days: int = 30
    """Under `policy = "seed"`: a file older than `min_age_days` (date in its name, else
    mtime) with at most `max_hits` hits in the last `window_days` is archived."""
    window_days: int = 30
    """The window in which hits are counted for that rule."""
    max_hits: int = 2
    """At most this many hits in the window and an old file is archived."""
    protect: tuple[str, ...] = ("MEMORY.md", "memory.md")
    """Never archived (workspace-relative globs)."""
    pinned: tuple[str, ...] = ()
    """Pinned files are never archived either (globs; `memoryd pin GLOB` adds more)."""
    auto: bool = False
    """`true` lets the daemon's scheduled expire archive without a `memoryd expire --schedule`
    first; until one of the two (the yes is remembered in the state database), a scheduled
    run only reports what it would archive. `expire --force` applies one plan, no more."""
    max_fraction_per_run: float = 0.25
    """One scheduled run moves at most this share (0–1) of the files taking part (rounded
    down; a second run of the same month counts what the first moved); the rest of its plan
    is reported, not moved. `expire --force` by hand is not capped."""
    restore_on_demand: bool = True
    """The daemon brings an archived file back when a new `memory_search` asks for it (its
    words match the archived text), if the archived copy is as memoryd archived it; a
    scheduled expire keeps such a file for 60 days. Searches made while this is `false`
    never restore anything later."""


class ScoreConfig(NamedTuple):
    keyword_weight: float = 0.4
    """The relevance score = keyword 0.4 + time decay 0.2 + access frequency 0.2
    + tag match 0.2 (divided by the sum of the weights): weight of keyword match. The four
    weights must not all be zero."""
    time_weight: float = 0.2
    """Weight of time decay."""
    access_weight: float = 0.2
    """Weight of access frequency."""
    tag_weight: float = 0.2
    """Weight of tag match."""
    no_decay_days: int = 7
    """Time decay: none for `no_decay_days`, then minus `decay_per_day` a day, never below
    `decay_floor`."""
    decay_per_day: float = 0.02
    """Time score lost per day after `no_decay_days`."""
    decay_floor: float = 0.1
    """The time score never goes below this."""
    recent_access_days: int = 7
    """Access frequency gets `recent_access_bonus` for a hit in the last
    `recent_access_days`."""
    recent_access_bonus: float = 0.5
    """Access frequency × (1 + this) when the last hit is recent."""
    access_saturation: int = 20
    """Access frequency = ln(1 + hits) / ln(1 + `access_saturation`), times (1 + bonus) when
    recent, at most 1.0: a file hit this many times scores full marks."""
    query_window_days: int = 30
    """Without a query, keyword and tag match use the agent's own queries of this many
    days."""
    prune_enabled: bool = False
    """Prune files scoring below `prune_threshold` (off by default: report only)."""
    prune_threshold: float = 0.6
    """The prune threshold."""
    capacity_enabled: bool = False
    """Keep at most `capacity` files (off by default: report only)."""
    capacity: int = 200
    """The most files kept when capacity control is on."""
    max_prune_fraction: float = 0.2
    """Pruning and capacity never archive more than this share (0–1) of the files in one
    run."""


class PromoteConfig(NamedTuple):
    hits_7d: int = 3
    """Hits in 7 days that make a promotion candidate (or `hits_14d` in 14 days, or
    `hits_total` in all, or a user mark; a file once promoted never again)."""
    hits_14d: int = 5
    """Hits in 14 days that make a candidate."""
    hits_total: int = 8
    """Hits in total that make a candidate."""


class TiersConfig(NamedTuple):
    root: str = ""
    """The tier store ([tier-store.md](tier-store.md)). `""` = `<state_dir>/memory_fs`,
    with `hot/` `warm/` `gist/` `forgotten/`."""
    hot_hours: float = 3.0
    """A note older than this (mtime) leaves `hot/` for `warm/`."""
    warm_days: float = 7.0
    """A `warm/` note older than this gets a summary copy in `gist/`."""
    gist_days: float = 30.0
    """End of the gist window for notes never retrieved."""
    forget_after_days: float = 14.0
    """`warm/` and `gist/` files without a retrieval for this long go to `forgotten/`."""
    delete_after_days: float = 30.0
    """`forgotten/` files older than this there are deleted (a compressed copy kept in
    `graveyard/`)."""
    delete_enabled: bool = True
    """Physical deletion of old `forgotten/` notes (never a user-marked one)."""
    graveyard_days: int = 90
    """How long graveyard copies are kept."""
    summarizer_command: str = ""
    """A command that reads a note on stdin and writes its gist on stdout (`""` =
    extractive gists)."""
    summarizer_timeout: float = 30.0
    """Seconds before the summarizer command is given up (extractive gist instead)."""
    recall_max_files: int = 3
    """`memoryd recall` shows at most this many files and asks to narrow the words beyond
    it."""
    inject_max_chars: int = 8000
    """`memoryd inject` prints at most this many characters of `hot/` notes."""
    session_inject_max_chars: int = 4000
    """The OpenClaw plugin puts at most this many characters of `hot/` notes into a new
    session (`memoryd inject --session`), and never more than the bootstrap files leave of
    OpenClaw's `bootstrapTotalMaxChars`."""


class PluginConfig(NamedTuple):
    recall_tool: str = "deferred"
    """How memoryd's OpenClaw plugin offers the agent `memoryd_recall`: `deferred` (under
    OpenClaw's Tool Search one line of its tool directory, 190 characters a request, reached
    through `tool_call`; with Tool Search off its schema and a prompt line, 378), `direct`
    (offered by name in every request even under Tool Search, 378 characters) or `off` (no
    recall tool, nothing a request). `memoryd plugin install` writes it into OpenClaw's
    config: run it again after a change."""


class ScheduleConfig(NamedTuple):
    timezone: str = ""
    """Time zone of the cron expressions and job periods (an IANA name such as
    `Europe/Berlin`; `""` = the local zone, followed by a running daemon when the system's
    zone changes); the day and month periods are labels in this zone, so a DST change never
    makes two periods of one (organize's hourly period is the UTC hour)."""
    organize: str = "5 * * * *"
    """When organize runs: a cron expression (minute hour day month weekday; weekday 0 or
    7 = Sunday, as in crontab; day and weekday must both match, as APScheduler reads them),
    or `"off"`."""
    reflect: str = "30 3 * * *"
    """When reflect runs (cron, or `"off"`)."""
    expire: str = "0 4 1 * *"
    """When expire runs (cron, or `"off"`)."""


class DaemonConfig(NamedTuple):
    rescan_seconds: float = 60.0
    """A stat-only rescan of every transcript this often (catches lost file events)."""
    polling: bool = False
    """Use a polling observer instead of inotify / FSEvents (network file systems)."""
    polling_interval: float = 2.0
    """Seconds between polls of the polling observer."""
    clock_jump_seconds: float = 120.0
    """A gap in the daemon's time longer than this (the machine slept, the process was
    stopped, the wall clock was set; found by comparing the wall, monotonic and boot clocks)
    is logged once (`daemon.gap`) and triggers a rescan and job catch-up. At least 2 (the
    main loop looks every second)."""
    stall_seconds: float = 300.0
    """The ingest worker busy with one scan this long while transcripts wait is stalled (a
    read that does not return): logged once (`ingest.worker_stalled`), shown by `status`
    (exit code 1), and the systemd watchdog is no longer fed, so systemd restarts the
    daemon. A scan of a large backlog reads on; its batches are its progress."""


class TelegramConfig(NamedTuple):
    enabled: bool = False
    """Post job summaries to a Telegram chat; a failing notification never fails a job."""
    token: str = ""
    """Bot token (`""` = `openclaw.json`'s Telegram channel `botToken` / `tokenFile`)."""
    chat_id: str = ""
    """Chat (`""` = the first of `openclaw.json`'s `channels.telegram.allowFrom`)."""
    base_url: str = "https://api.telegram.org"
    """Bot API base URL."""
    timeout: float = 10.0
    """Seconds before a notification is given up."""


class NotifyConfig(NamedTuple):
    telegram: TelegramConfig = TelegramConfig()


class LogConfig(NamedTuple):
    level: str = "info"
    """`debug`, `info`, `warning` or `error` (`debug` also shows every ingest batch, and
    APScheduler's and watchdog's lines below warning)."""
    format: str = "auto"
    """`auto` (console on a terminal, JSON lines otherwise), `json` or `console`."""


class Config(NamedTuple):
    openclaw: OpenClawConfig = OpenClawConfig()
    state: StateConfig = StateConfig()
    ingest: IngestConfig = IngestConfig()
    archive: ArchiveConfig = ArchiveConfig()
    expire: ExpireConfig = ExpireConfig()
    score: ScoreConfig = ScoreConfig()
    promote: PromoteConfig = PromoteConfig()
    tiers: TiersConfig = TiersConfig()
    plugin: PluginConfig = PluginConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    daemon: DaemonConfig = DaemonConfig()
    notify: NotifyConfig = NotifyConfig()
    log: LogConfig = LogConfig()
    source: str = ""  # the file it came from, "" for defaults (not a TOML key)


_CHOICES: dict[str, tuple[str, ...]] = {
    "log.level": ("debug", "info", "warning", "error"),
    "log.format": ("auto", "json", "console"),
    "expire.policy": EXPIRE_POLICIES,
    "plugin.recall_tool": ("deferred", "direct", "off"),
}


def _resolve_hint(annotation: Any) -> Any:
    """A field's type from its annotation: str, int, float, bool, ``tuple`` (for
    ``tuple[str, ...]``) or a nested table's class (annotations here are evaluated: see the
    module's docstring)."""
    return tuple if typing.get_origin(annotation) is tuple else annotation


def _check_value(name: str, hint: Any, value: Any) -> Any:
    if hint is tuple:
        if not isinstance(value, list):
            raise ConfigError(f"{name}: expected a list of strings, got {type(value).__name__}")
        for item in value:
            if not isinstance(item, str):
                raise ConfigError(f"{name}: every item must be a string, got {item!r}")
        return tuple(value)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{name}: expected true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name}: expected an integer, got {value!r}")
        if value < 0:
            raise ConfigError(f"{name}: must not be negative, got {value}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{name}: expected a number, got {value!r}")
        if not math.isfinite(value):  # TOML allows nan and inf; no setting means either
            raise ConfigError(f"{name}: expected a finite number, got {value!r}")
        if value < 0:
            raise ConfigError(f"{name}: must not be negative, got {value}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name}: expected a string, got {value!r}")
        choices = _CHOICES.get(name)
        if choices and value not in choices:
            if name == "expire.policy" and value in RETIRED_POLICIES:
                raise ConfigError(f"{name}: {value!r} {RETIRED_POLICIES[value]}")
            raise ConfigError(f"{name}: must be one of {', '.join(choices)}, got {value!r}")
        return value
    raise ConfigError(f"{name}: unsupported type")  # pragma: no cover - schema bug


def _did_you_mean(key: str, known: set[str], prefix: str) -> str:
    """`` (did you mean 'expire.policy'?)`` for the known key closest to a typo, else ``""``."""
    import difflib

    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    if not close:
        return ""
    return f" (did you mean {(f'{prefix}.' if prefix else '') + close[0]!r}?)"


def _build(cls: type, data: Any, prefix: str) -> Any:
    where = prefix or "the top level"
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a table, got {type(data).__name__}")
    hints = {
        name: _resolve_hint(hint) for name, hint in cls.__annotations__.items() if name != "source"
    }
    known = set(hints)
    for key in data:
        if key not in known:
            name = f"{prefix}.{key}" if prefix else key
            raise ConfigError(f"unknown key {name!r}{_did_you_mean(str(key), known, prefix)}")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else key
        hint = hints[key]
        if is_table(hint):
            kwargs[key] = _build(hint, value, name)
        else:
            kwargs[key] = _check_value(name, hint, value)
    return cls(**kwargs)


def parse_config(data: dict[str, Any], source: str = "") -> Config:
    """Validate a TOML document (already parsed) into a Config."""
    cfg = _build(Config, data, "")
    _check_semantics(cfg)
    return cfg._replace(source=source)


def is_table(hint: Any) -> bool:
    """Whether a schema field is a nested table (a section class) rather than a value."""
    return isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields")


# The smallest ``daemon.clock_jump_seconds``: twice the daemon's one-second tick.
MIN_CLOCK_JUMP_SECONDS = 2.0
# The bounds of ingest.chunk_bytes: a read buffer (1 TiB passed once, and every read then
# failed with an empty MemoryError).
MIN_CHUNK_BYTES = 4096
MAX_CHUNK_BYTES = 64 << 20


def _check_semantics(cfg: Config) -> None:
    weights = (
        cfg.score.keyword_weight
        + cfg.score.time_weight
        + cfg.score.access_weight
        + cfg.score.tag_weight
    )
    if weights <= 0:
        raise ConfigError("score: the four weights must not all be zero")
    if cfg.score.max_prune_fraction > 1:
        raise ConfigError("score.max_prune_fraction: must be between 0 and 1")
    if not MIN_CHUNK_BYTES <= cfg.ingest.chunk_bytes <= MAX_CHUNK_BYTES:
        raise ConfigError(
            f"ingest.chunk_bytes: must be between {MIN_CHUNK_BYTES} and {MAX_CHUNK_BYTES} "
            f"(64 MiB), not {cfg.ingest.chunk_bytes}"
        )
    if cfg.ingest.parallel_min_bytes < 0:
        raise ConfigError("ingest.parallel_min_bytes: must be 0 (never) or more")
    if cfg.ingest.helper not in ("auto", "always", "never"):
        raise ConfigError('ingest.helper: must be "auto", "always" or "never"')
    if cfg.ingest.max_line_bytes < cfg.ingest.chunk_bytes:
        raise ConfigError("ingest.max_line_bytes: must be at least ingest.chunk_bytes")
    problem = archive_dir_problem(cfg.archive.dir)
    if problem:
        raise ConfigError(f"archive.dir: {cfg.archive.dir!r} {problem}")
    if cfg.schedule != ScheduleConfig():  # (the defaults are valid: a test reads them)
        if cfg.schedule.timezone:  # ("" is the local zone, always there: not resolved here)
            schedule_timezone(cfg)
        job_schedules(cfg)
    for key in ("later_needed_target", "archive_floor"):
        value = getattr(cfg.expire, key)
        if not 0 <= value <= 1:
            raise ConfigError(f"expire.{key}: must be between 0 and 1 (a share), got {value}")
    if not 0 <= cfg.expire.max_fraction_per_run <= 1:
        raise ConfigError(
            "expire.max_fraction_per_run: must be between 0 and 1 (a share of the files, "
            f"0.25 = a quarter), got {cfg.expire.max_fraction_per_run}"
        )
    if cfg.daemon.clock_jump_seconds < MIN_CLOCK_JUMP_SECONDS:
        raise ConfigError(
            f"daemon.clock_jump_seconds: must be at least {MIN_CLOCK_JUMP_SECONDS:g} (the "
            "daemon's main loop looks every second: a smaller gap would be found at every "
            f"look, each a full rescan), got {cfg.daemon.clock_jump_seconds:g}"
        )
    if not cfg.openclaw.agents:
        raise ConfigError('openclaw.agents: list at least one agent id (or "*")')


def job_schedules(cfg: Config) -> dict[str, timerules.CronSpec]:
    """Each scheduled job's parsed schedule; a bad expression is a ConfigError naming its key.

    The one check of a schedule: configuration validation calls it for every command that
    loads a config (so a file is accepted or refused alike everywhere), ``status`` reads
    next fire times from what it returns, and the daemon fires what it returns (the
    daemon's triggers accept exactly what :func:`memoryd.timerules.parse` accepts: a
    property test checks that). A job switched off (``"off"``) has no entry: nothing
    fires it.
    """
    out: dict[str, timerules.CronSpec] = {}
    for name in timerules.SCHEDULED_JOBS:
        expr = getattr(cfg.schedule, name)
        if timerules.schedule_is_off(expr):
            continue
        if not expr.strip():
            raise ConfigError(
                f'schedule.{name}: "" is not a schedule; write "off" to switch the job off, '
                "or a cron expression (five fields: minute hour day month weekday)"
            )
        try:
            out[name] = timerules.parse(expr)
        except ValueError as exc:
            raise ConfigError(
                f"schedule.{name}: {expr!r} is not a cron expression (minute hour day month "
                f'weekday) or "off": {exc}'
            ) from None
    return out


def schedule_timezone(cfg: Config) -> tzinfo:
    """The zone cron expressions and period keys are read in: ``schedule.timezone``, else
    the local one; a ConfigError when it names no zone."""
    try:
        return timerules.zone_named(cfg.schedule.timezone)
    except ValueError as exc:
        raise ConfigError(f"schedule.timezone: {exc}") from None


def archive_dir_problem(template: str) -> str | None:
    """Why ``archive.dir`` cannot be an archive folder, or None when it can. Pure.

    The archive must be a folder of its own inside the workspace: archiving moves
    notes there and ``hits`` / ``expire`` stop listing what is in it. So it must not
    leave the workspace (``..``, an absolute path), be the workspace or ``memory/``
    itself (notes would be renamed in place, or all of ``memory/`` hidden), or be a
    bare ``{month}`` folder directly under ``memory/`` (``memory/2026-01/`` may be the
    user's own notes). The seed's ``memory/archive-{month}`` is fine.
    """
    if template.count("{") != template.count("{month}") or "}" in template.replace("{month}", ""):
        return "uses an unknown placeholder (only {month} is known)"
    if not template.strip():
        return "is empty: the archive must be a folder inside the workspace"
    if template.startswith(("/", "~", "\\")) or template[1:3] in (":/", ":\\"):
        return (
            "is absolute: the archive must be a folder inside the workspace, written relative "
            "to it (for example 'memory-archive/{month}')"
        )
    parts = [p for p in re.split(r"[/\\]+", template) if p]
    if ".." in parts:
        return "contains '..': the archive must stay inside the workspace"
    norm = posixpath.normpath("/".join(parts))
    if norm in (".", ""):
        return "is the workspace itself: the archive must be a folder of its own"
    if norm == "memory":
        return "is memory/ itself: archived notes would stay where they are, and all of it hidden"
    first = norm.split("/")
    if first[0] == "memory" and len(first) > 1 and first[1].startswith("{month}"):
        return (
            "puts a bare {month} folder directly under memory/, where the user's own "
            "memory/YYYY-MM/ notes may be (use 'memory/archive-{month}' or "
            "'memory-archive/{month}')"
        )
    return None


def config_path_from(explicit: str | None, environ: typing.Mapping[str, str]) -> str | None:
    """Which config file to read: --config, then $MEMORYD_CONFIG, else none (defaults)."""
    return explicit or environ.get("MEMORYD_CONFIG") or None


def load_config(path: str | None) -> Config:
    """Read and validate a TOML file; ``None`` means the defaults."""
    if not path:
        return Config()
    import tomllib  # (only with a file: running on the defaults need not load the TOML reader)

    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file {path}: not found") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path}: is a directory") from None
    except PermissionError:
        raise ConfigError(f"config file {path}: permission denied") from None
    except OSError as exc:
        raise ConfigError(f"config file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
            f"{exc.start}); TOML files are UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: invalid TOML: {exc}") from None
    return parse_config(data, source=str(Path(path).resolve()))


# --------------------------------------------------------------------------- discovery

_LEGACY_DIRS = (".clawdbot", ".moldbot", ".moltbot")


def openclaw_home(environ: typing.Mapping[str, str]) -> Path:
    home = environ.get("OPENCLAW_HOME") or environ.get("HOME") or str(Path.home())
    return Path(home).expanduser()


def expand_home(path: str, environ: typing.Mapping[str, str]) -> Path:
    """``~`` and ``~/x`` against OpenClaw's home ($OPENCLAW_HOME, else $HOME).

    ``~user/x`` is that user's home; a user the system does not know is a
    :class:`ConfigError` (the setting is the person's to fix), not a traceback."""
    if path == "~" or path.startswith("~/"):
        return openclaw_home(environ) / path[2:]
    try:
        return Path(path).expanduser()
    except RuntimeError:  # pathlib's "Could not determine home directory."
        user = path[1:].split("/", 1)[0]
        raise ConfigError(f"{path}: no user {user!r} on this system to expand ~{user}") from None


def discover_state_dir(environ: typing.Mapping[str, str]) -> Path:
    """OpenClaw's state dir, found the way OpenClaw finds it (first match wins)."""
    explicit = environ.get("OPENCLAW_STATE_DIR") or environ.get("CLAWDBOT_STATE_DIR")
    if explicit:
        return expand_home(explicit, environ)
    home = openclaw_home(environ)
    if (home / ".openclaw").is_dir():
        return home / ".openclaw"
    for legacy in _LEGACY_DIRS:
        if (home / legacy).is_dir():
            return home / legacy
    return home / ".openclaw"


def openclaw_json_path(state_dir: Path, environ: typing.Mapping[str, str]) -> Path:
    """Where OpenClaw's own config is: $OPENCLAW_CONFIG_PATH, else <state>/openclaw.json."""
    explicit = environ.get("OPENCLAW_CONFIG_PATH")
    return expand_home(explicit, environ) if explicit else state_dir / "openclaw.json"


def read_openclaw_json(path: Path | None) -> dict[str, Any]:
    """OpenClaw's own config (JSON5). Missing → {} (discovery falls back to OpenClaw's own
    defaults, as OpenClaw does); there but not parseable → :class:`OpenClawJsonError`.

    Read at most once per version of the file. Plain JSON (what OpenClaw's own
    ``config set`` writes) takes the fast parser; comments and trailing commas
    fall back to the JSON5 one, which is pure Python and far slower.
    """
    if path is None:
        return {}
    try:
        st = os.stat(path)
    except OSError:
        return {}
    data = _parse_openclaw_json(str(path), st.st_mtime_ns, st.st_size)
    if isinstance(data, OpenClawJsonError):
        raise OpenClawJsonError(data.path, data.reason)
    _LAST_GOOD[str(path)] = data
    return data


def last_good_openclaw_json(path: Path | None) -> dict[str, Any]:
    """:func:`read_openclaw_json`, or when the file does not parse now, what it said when it
    last did in this process ({} if never): for readers that already resolved their paths
    from it (the daemon's notifier, a hook's injection) and must not stop on a later bad
    edit."""
    try:
        return read_openclaw_json(path)
    except OpenClawJsonError:
        return _LAST_GOOD.get(str(path), {})


_LAST_GOOD: dict[str, dict[str, Any]] = {}


@functools.lru_cache(maxsize=4)
def _parse_openclaw_json(
    path: str, _mtime_ns: int, _size: int
) -> dict[str, Any] | OpenClawJsonError:
    # The standard library's parser: a few KB parse in microseconds either way, and importing
    # it costs a read command a fraction of what importing orjson does. (A failure is
    # returned, not raised, so that it is cached with the file's version like a success.)
    import json

    try:
        raw = Path(path).read_bytes()
    except OSError:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:  # not JSON (or not UTF-8)
        import json5  # only JSON5 proper needs it

        try:
            data = json5.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            return OpenClawJsonError(path, f"not UTF-8 text at byte {exc.start}")
        except Exception as exc:  # json5 raises ValueError and others on bad input
            reason = _first_line(str(exc)).replace("<string>:", "line ")
            return OpenClawJsonError(path, reason or type(exc).__name__)
    if not isinstance(data, dict):
        return OpenClawJsonError(path, f"the top level is {type(data).__name__}, not an object")
    return data


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else ""


# ASCII letters only, either case: Python's case-insensitive match would also take `ı`, `ſ`
# or `İ` for `i` / `s` (JavaScript's does not), keeping them in the id OpenClaw rewrites.
_AGENT_ID_OK = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$", re.IGNORECASE | re.ASCII)


def normalize_agent_id(value: Any) -> str:
    """An agent id as OpenClaw files it (``agents/<id>/``): lower case, other characters ``-``.

    ``"Work"`` in ``openclaw.json`` is the agent of ``agents/work/``; an empty id is ``main``.
    """
    raw = value.strip() if isinstance(value, str) else ""
    if not raw:
        return "main"
    if _AGENT_ID_OK.match(raw):
        return raw.lower()
    return re.sub(r"[^a-z0-9_-]+", "-", raw.lower()).strip("-")[:64] or "main"


def _roster(oc: dict[str, Any]) -> list[dict[str, Any]]:
    """The agents ``openclaw.json`` configures, in order, each with its normalized ``id``.

    Newer builds key them (``agents.entries.<id>``), older ones list them
    (``agents.list[]``). As OpenClaw's ``readAgentRosterProperty``: a config holding
    ``entries`` is read from it alone, whatever ``list`` says (``list`` only without
    ``entries``: the older builds' only roster).
    """
    agents = oc.get("agents")
    if not isinstance(agents, dict):
        return []
    if "entries" in agents:
        entries = agents["entries"]
        if not isinstance(entries, dict):
            return []  # OpenClaw: an `entries` that is no object (null too) is an empty roster
        return [
            {**entries[key], "id": normalize_agent_id(key)}
            for key in entries
            if isinstance(entries[key], dict)
        ]
    listed = agents.get("list")
    if not isinstance(listed, list):
        return []
    return [
        {**entry, "id": normalize_agent_id(entry.get("id"))}
        for entry in listed
        if isinstance(entry, dict)
    ]


def agent_entry(oc: dict[str, Any], agent_id: str) -> dict[str, Any] | None:
    """The first roster entry of ``agent_id`` in ``openclaw.json`` (as OpenClaw reads it)."""
    wanted = normalize_agent_id(agent_id)
    return next((e for e in _roster(oc) if e["id"] == wanted), None)


def default_agent_id(oc: dict[str, Any]) -> str:
    """The agent that owns OpenClaw's default workspace (``agents.defaults.workspace``).

    OpenClaw's rule: the agent marked ``default: true``; else ``main`` when it is
    configured (or when none is); else the first configured agent (the only one, on
    a single-agent install that renamed it).
    """
    roster = _roster(oc)
    marked = [entry["id"] for entry in roster if entry.get("default") is True]
    if marked:
        return marked[0]
    ids = [entry["id"] for entry in roster]
    return "main" if not ids or "main" in ids else ids[0]


def _named_workspace(agent_id: str, oc: dict[str, Any]) -> str | None:
    """The agent's own ``workspace`` in ``openclaw.json``: that of the first roster entry
    with its id, as OpenClaw's ``resolveAgentEntry`` (a later entry of the same id, e.g.
    ``"Work"`` after ``"work"``, is never looked at, even when the first names none)."""
    entry = next((e for e in _roster(oc) if e["id"] == agent_id), None)
    return _workspace_setting(entry.get("workspace") if entry is not None else None)


def _defaults_workspace(oc: dict[str, Any]) -> str | None:
    agents = oc.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, dict) else None
    return _workspace_setting(defaults.get("workspace") if isinstance(defaults, dict) else None)


def _workspace_setting(value: Any) -> str | None:
    """A ``workspace`` value of ``openclaw.json``: a path, or None for no setting (any
    other type, a blank string: OpenClaw then falls back as well). A NUL byte, which no
    path can hold, is the user's to fix (ValueError), not a place to guess."""
    if not isinstance(value, str) or not value.strip():
        return None
    if "\0" in value:
        raise ValueError(f"workspace {value!r} holds a NUL byte")
    return value.strip()


def workspace_candidates(
    agent_id: str, oc: dict[str, Any], state_dir: Path, environ: typing.Mapping[str, str]
) -> list[Path]:
    """Where OpenClaw keeps this agent's workspace, most likely first. Pure.

    OpenClaw (``resolveAgentWorkspaceDir``): the agent's own ``workspace``; for the
    default agent ``agents.defaults.workspace``, else ``~/.openclaw/workspace``
    (``workspace-<profile>`` under a profile; ``~`` is ``$OPENCLAW_HOME``, never the
    state folder); for any other agent ``<agents.defaults.workspace>/<id>`` in current
    builds and ``<state>/workspace-<id>`` without that key (and in older builds). Where
    builds differ, the later candidates are the other builds' answers: the caller takes
    the first that holds notes, else the first that exists. They differ on a roster of
    several agents without one ``default: true`` marker: earlier builds made ``main``
    (else the first agent) the default, current ones give it the default workspace no
    more (only a sole agent or the one marked agent inherits it), so it works in
    ``<defaults>/<id>`` like any other.
    """
    agent_id = normalize_agent_id(agent_id)
    named = _named_workspace(agent_id, oc)
    if named:
        return [expand_home(named, environ)]
    defaults = _defaults_workspace(oc)
    own_default = [expand_home(defaults, environ)] if defaults else None
    shared = [expand_home(defaults, environ) / agent_id] if defaults else []
    others = [*shared, state_dir / f"workspace-{agent_id}"]
    if agent_id == default_agent_id(oc):
        inherited = own_default or default_workspaces(state_dir, environ)
        return inherited if _default_is_certain(oc) else [*inherited, *others]
    if agent_id == "main" and all(entry["id"] != "main" for entry in _roster(oc)):
        # ``main`` left out of a roster of other agents: the agent of the install before
        # they were added, whose notes stay in the default workspace (OpenClaw itself then
        # calls another agent the default; the folder that exists decides).
        return [*(own_default or default_workspaces(state_dir, environ)), *others]
    return others


def _default_is_certain(oc: dict[str, Any]) -> bool:
    """Whether every build gives :func:`default_agent_id` the default workspace: a roster of
    at most one agent, or exactly one entry marked ``default: true`` (which current builds
    ignore under ``agents.ownership = "explicit"``)."""
    roster = _roster(oc)
    if len(roster) <= 1:
        return True
    agents = oc.get("agents")
    explicit = isinstance(agents, dict) and agents.get("ownership") == "explicit"
    return not explicit and sum(entry.get("default") is True for entry in roster) == 1


def default_workspaces(state_dir: Path, environ: typing.Mapping[str, str]) -> list[Path]:
    """OpenClaw's default workspace when its config names none, then memoryd's older guess.

    ``<home>/.openclaw/workspace``, or ``workspace-<profile>`` for ``$OPENCLAW_PROFILE`` or a
    profile's state folder ``~/.openclaw-<profile>``; ``<state>/workspace`` (the same folder
    unless ``$OPENCLAW_STATE_DIR`` moved the state) comes second.
    """
    home = openclaw_home(environ)
    profile = (environ.get("OPENCLAW_PROFILE") or "").strip()
    if not profile and state_dir.name.startswith(".openclaw-"):
        profile = state_dir.name.removeprefix(".openclaw-")
    name = f"workspace-{profile}" if profile and profile.lower() != "default" else "workspace"
    first = home / ".openclaw" / name
    return [first] if first == state_dir / "workspace" else [first, state_dir / "workspace"]


def resolve_workspace(
    agent_id: str, oc: dict[str, Any], state_dir: Path, environ: typing.Mapping[str, str]
) -> Path:
    """The agent's workspace: the first of :func:`workspace_candidates` that holds notes
    (``MEMORY.md`` or ``memory/``), else the first that is a folder, else the first (a
    workspace not made yet). Holding notes comes first: ``<defaults>`` exists wherever
    ``<defaults>/main`` does, as its parent."""
    candidates = workspace_candidates(agent_id, oc, state_dir, environ)
    return next(
        (c for c in candidates if _holds_notes(c)),
        next((c for c in candidates if c.is_dir()), candidates[0]),
    )


def _workspace_of(
    agent_id: str,
    oc: dict[str, Any],
    state_dir: Path,
    environ: typing.Mapping[str, str],
    oc_file: Path | None,
) -> Path:
    """:func:`resolve_workspace`, a path no system call takes (a NUL byte, a name longer
    than the file system allows) being a :class:`ConfigError` naming the file to fix."""
    try:
        return resolve_workspace(agent_id, oc, state_dir, environ)
    except (OSError, ValueError, ConfigError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise ConfigError(
            f"{oc_file or 'openclaw.json'}: agent {agent_id}'s workspace is no usable path ({why})"
        ) from exc


def _holds_notes(folder: Path) -> bool:
    return (folder / "MEMORY.md").is_file() or (folder / "memory").is_dir()


ACTIVE_MEMORY_TRANSCRIPT_DIR = "active-memory"  # the plugin's default `transcriptDir`


class Agent(NamedTuple):
    """One followed agent: where its transcripts are and which workspace its memory is in."""

    id: str
    sessions_dir: Path
    workspace: Path
    # The Active Memory plugin's `transcriptDir`, relative to its per-agent folder (read only
    # with `openclaw.include_active_memory`).
    active_memory_dir: str = ACTIVE_MEMORY_TRANSCRIPT_DIR
    # The folders (or files) OpenClaw also searches as memory (`memory.search.extraPaths`),
    # absolute: their notes are counted under the names OpenClaw reports, never moved.
    extra_paths: tuple[Path, ...] = ()


def extra_memory_paths(oc: dict[str, Any], agent_id: str, workspace: Path) -> tuple[Path, ...]:
    """``memorySearch.extraPaths`` as OpenClaw resolves them for one agent. Pure.

    Where builds keep the setting: ``memory.search.extraPaths`` (2026.8 on),
    ``agents.defaults.memorySearch.extraPaths`` (older), and the agent's own roster entry
    (``memorySearch.extraPaths``, ``memory.search.extraPaths``); all of them taken. An entry
    is a path, or ``{path, pattern}`` (the pattern narrows what OpenClaw indexes; every
    Markdown file it returns from the path is counted). A relative path is the workspace's,
    ``~`` the home folder.
    """
    found: list[Any] = []

    def take(node: Any, *keys: str) -> None:
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, list):
            found.extend(node)

    take(oc, "memory", "search", "extraPaths")
    take(oc, "agents", "defaults", "memorySearch", "extraPaths")
    entry = agent_entry(oc, agent_id)
    take(entry, "memorySearch", "extraPaths")
    take(entry, "memory", "search", "extraPaths")
    out: list[Path] = []
    for item in found:
        raw = item.get("path") if isinstance(item, dict) else item
        if not isinstance(raw, str) or not raw.strip() or "\0" in raw:
            continue
        raw = raw.strip()
        if raw == "~" or raw.startswith("~/"):
            path = Path(os.path.expanduser(raw))
        else:
            path = Path(raw) if os.path.isabs(raw) else workspace / raw
        path = Path(os.path.normpath(path))
        if path != Path(os.path.normpath(workspace)) and path not in out:
            out.append(path)
    return tuple(out)


def active_memory_transcript_dir(oc: dict[str, Any]) -> str:
    """The Active Memory plugin's ``transcriptDir`` as it resolves it: a path relative to
    ``<state>/plugins/active-memory/transcripts/agents/<id>/``. Pure.

    As the plugin's normalizeTranscriptDir / resolveSafeTranscriptDir: ``\\`` is ``/``, parts
    are trimmed, empty, ``.`` and ``..`` parts dropped (so it never leaves that folder; a
    leading ``/`` makes no absolute path), and a setting with a ``:`` or nothing left is
    the default ``active-memory`` (as is one holding a NUL, which no folder name can). It is
    the user's setting, read from ``openclaw.json``
    (``plugins.entries.active-memory.config.transcriptDir``), never from a transcript.
    """
    plugins = oc.get("plugins")
    entries = plugins.get("entries") if isinstance(plugins, dict) else None
    entry = entries.get("active-memory") if isinstance(entries, dict) else None
    conf = entry.get("config") if isinstance(entry, dict) else None
    raw = conf.get("transcriptDir") if isinstance(conf, dict) else None
    if not isinstance(raw, str):
        return ACTIVE_MEMORY_TRANSCRIPT_DIR
    parts = [part.strip() for part in raw.strip().replace("\\", "/").split("/")]
    kept = [part for part in parts if part not in ("", ".", "..")]
    if not kept or any(":" in part or "\0" in part for part in kept):
        return ACTIVE_MEMORY_TRANSCRIPT_DIR
    return "/".join(kept)


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
        return last_good_openclaw_json(self.openclaw_file)

    @property
    def reports_dir(self) -> Path:
        return self.memoryd_dir / "reports"


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
    else:  # as OpenClaw files them (``"Work"`` is ``agents/work/``), unless such a folder is there
        ids = [a if (agents_root / a).is_dir() else normalize_agent_id(a) for a in wanted]
        ids = list(dict.fromkeys(ids))
    if not ids:
        ids = ["main"]

    override = expand_home(cfg.openclaw.workspace, env) if cfg.openclaw.workspace else None
    if override is not None and not override.is_dir():
        raise ConfigError(f"openclaw.workspace: {override} is not a directory")
    # openclaw.json names the workspaces and Active Memory's transcript folder: with the
    # workspace given and that helper's runs left out, nothing in it is needed, and a JSON5
    # file would cost the parser's import (≈ 10 ms) at every command.
    wanted_oc = override is None or cfg.openclaw.include_active_memory
    oc = read_openclaw_json(oc_file) if wanted_oc else {}
    helper_dir = active_memory_transcript_dir(oc)
    if override is not None:
        oc = {}  # the workspace is the override, for every agent
    agents = []
    for agent_id in ids:
        ws = (
            override
            if override is not None
            else _workspace_of(agent_id, oc, state_dir, env, oc_file)
        )
        extra = extra_memory_paths(oc, agent_id, ws)
        agents.append(Agent(agent_id, agents_root / agent_id / "sessions", ws, helper_dir, extra))
    # The primary workspace: main's, else the default agent's (OpenClaw's default workspace),
    # the first of the two that is a folder (with another agent marked default, main works in
    # `<defaults>/main`, which may not exist, while the default agent's folder holds the notes:
    # a missing folder would leave every command nothing to manage); the first agent's when
    # neither is followed.
    owner = default_agent_id(oc)
    ranked = [a for wanted in ("main", owner) for a in agents if a.id == wanted] or agents[:1]
    primary = next((a.workspace for a in ranked if a.workspace.is_dir()), ranked[0].workspace)
    if override is None and primary.is_dir():
        # An agent whose own workspace is no folder at all (OpenClaw makes it when the agent
        # first runs, so: an install laid out by hand or by a tool that shares one workspace)
        # looks its notes up in the primary one, as memoryd read every install before it
        # followed OpenClaw's per-agent folders: its hits are not dropped on a missing folder.
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
