"""The configuration schema: a tree of named tuples, one per TOML table, each key one typed
field with its default and its description right below it.

Immutable, and cheap to define: a one-shot command's start-up pays for every class. Adding a
key means adding one field here; :mod:`memoryd.config.validation` walks them. (No ``from
__future__ import annotations``: ``NamedTuple`` would compile each string annotation.)
"""

import typing
from typing import Any, NamedTuple

# --------------------------------------------------------------------------- schema
# A description is an attribute docstring (free at run time) in Markdown, from which
# ``tests/support/config_reference.py`` writes config/memoryd.toml and docs/configuration.md.


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
    `openclaw.json`: the agent's own `workspace`; for the default agent
    `agents.defaults.workspace`, else `~/.openclaw/workspace`; for another agent
    `<agents.defaults.workspace>/<id>`, else `<state_dir>/workspace-<id>` (every rule, and
    where builds differ: [ingest.md](ingest.md))."""
    include_active_memory: bool = False
    """Also count the Active Memory helper's recall runs: its kept transcripts and, on a
    SQLite store install, its sessions in the store (where each build keeps them:
    [ingest.md](ingest.md))."""
    count_synthetic: bool = False
    """Count every kind of synthetic traffic: what `count_heartbeat`, `count_cron` and
    `count_dreaming` name, as if all three were on. Off: each kind as its own key says."""
    count_heartbeat: bool = False
    """Count hits made by OpenClaw's heartbeat runs, in the main session or their own, told
    by the transcript's markers ([ingest.md](ingest.md)), never by a word in a session's
    name: a session called `heartbeat-notes` is the user's.
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
    `""` = `<state_dir>/memoryd`. Never inside a workspace's `memory/` folder (refused).
    A folder memoryd makes here is private (0700): the store holds the agent's queries."""


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


class RetireConfig(NamedTuple):
    auto: bool = False
    """`true` lets the daemon's daily reflect job retire stale sections too (as `memoryd
    retire --force` does); `false` (the default): no scheduled job ever retires, only
    `memoryd retire --force` by hand. See [sections.md](sections.md)."""
    note_max_chars: int = 40000
    """Memory files other than `MEMORY.md` longer than this (characters) are planned down to
    it too; `0`: only `MEMORY.md` (whose budget is OpenClaw's `bootstrapMaxChars`)."""
    min_idle_days: int = 30
    """A section looked up in the last this many days is never retired, whatever the budget."""


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
    auto: bool = False
    """`/refresh` in chat hands the candidates to a sub-session of your agent, which files
    them into `MEMORY.md` or a skill's `docs/retrospect.md` (off by default: `/memoryd
    promote` does it by hand). memoryd checks what landed and marks it promoted;
    `restore --last` takes the entries out again."""


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
    extractive gists). Split into words as a shell would, but run without one: for a pipe
    or `$VAR`, write `sh -c '…'`."""
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
    """A stat-only rescan of every transcript this often (catches lost file events). At
    least 1."""
    polling: bool = False
    """Use a polling observer instead of inotify / FSEvents (network file systems)."""
    polling_interval: float = 2.0
    """Seconds between polls of the polling observer. At least 0.1."""
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
    retire: RetireConfig = RetireConfig()
    score: ScoreConfig = ScoreConfig()
    promote: PromoteConfig = PromoteConfig()
    tiers: TiersConfig = TiersConfig()
    plugin: PluginConfig = PluginConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    daemon: DaemonConfig = DaemonConfig()
    notify: NotifyConfig = NotifyConfig()
    log: LogConfig = LogConfig()
    source: str = ""  # the file it came from, "" for defaults (not a TOML key)


def _resolve_hint(annotation: Any) -> Any:
    """A field's type from its annotation: str, int, float, bool, ``tuple`` (for
    ``tuple[str, ...]``) or a nested table's class (annotations here are evaluated: see the
    module's docstring)."""
    return tuple if typing.get_origin(annotation) is tuple else annotation


def is_table(hint: Any) -> bool:
    """Whether a schema field is a nested table (a section class) rather than a value."""
    return isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields")
