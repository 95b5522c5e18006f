"""The judge of a live run of memoryd's OpenClaw plugin (issue 21): pure, no Node.

``tests/live/plugin_live.py`` records what the real OpenClaw did with the plugin; the live
run and the default suite's replay (``tests/plugin/test_plugin_record.py``) both ask
:func:`problems` whether that record shows everything the issue asks for.
"""

from __future__ import annotations

from typing import Any

HOT_MARK = "ZEBRA-42"  # in hot/zebra.md: fresh, injected in every new session
STALE_MARK = "HERON-7"  # in hot/heron.md: 4 h old, moved to warm/ by /refresh's organize
TEA = "The user prefers green tea and short answers."  # MEMORY.md's text: never repeated
ARCHIVED = "memory/gamma.md"  # archived before the recall; "kayak" is only in it
READ_NOTE = "memory/2026-11-01.md"  # archived, then read by its path (issue 28)
READ_MARK = "OSPREY-3"  # in READ_NOTE: the read's answer holds it when the note came back first
SEARCH_NOTE = "memory/otter-survey.md"  # archived, then searched for by its words (issue 28)
SEARCH_MARK = "OTTER-5"  # in SEARCH_NOTE: that search's answer holds it when the hook restored it
RIVALS = tuple(f"memory/walk-{i}.md" for i in range(4))  # archived; each says "lantern"
COPY_NOTE = "memory/heron-count.md"  # archived, then read where the archive is indexed
COPY_MARK = "EGRET-4"  # in COPY_NOTE: the read of its archived copy returns it
LEADER = "memory/quokka-bay.md"  # archived; "lantern" and "quokka": the recall's clear winner
LEADER_MARK = "QUOKKA-9"
TRIGGERS = ("did we discuss X before", "what was the conclusion on Y")  # seed 004's recall signals
STANDING_MAX = 200  # characters the plugin may add to every request with Tool Search on


class Problems(list[str]):
    """What a record misses, one line each: ``need(ok, what)`` keeps ``what`` when ``ok``
    is false."""

    def need(self, ok: Any, what: str) -> None:
        if not ok:
            self.append(what)


def p95(values: list[int]) -> int | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]


def problems(rec: dict[str, Any], issue35: bool = True, issue29: bool = True) -> list[str]:
    """Every way a record falls short of the live check (empty: it passes). Pure.

    ``issue35`` False judges a record made before issue 35 (the recall tool then offered by
    name, no cost measured): the committed record, until it is recorded again. Likewise
    ``issue29`` False, a record made before the /refresh reply was put into the new
    session's chat and before ``status`` told which gateway loaded the plugin."""
    out = Problems()
    need = out.need

    need(rec.get("install", {}).get("exit") == 0, "memoryd plugin install failed")
    entry = rec.get("entry") or {}
    need(entry.get("enabled") is True, "plugin not enabled in openclaw.json")
    need(
        (entry.get("hooks") or {}).get("allowConversationAccess") is True,
        "allowConversationAccess not set",
    )
    first = rec.get("first_turn") or []
    need(first, "no request on the first turn")
    if first:
        user = first[0]["last_user"]
        need(HOT_MARK in user, "the first request lacks the hot note")
        need(STALE_MARK in user, "the first request lacks the second hot note")
        need("hot/tea.md" not in user, "a note already in MEMORY.md was injected again")
        if not issue35:
            need("memoryd_recall" in first[0]["tools"], "memoryd_recall not offered to the model")
        # Issue 35: deferred under Tool Search, one directory line with the seed's triggers
        line = rec.get("directory_line") or ""
        need(
            not issue35 or "memoryd_recall" not in first[0]["tools"],
            "memoryd_recall offered by name (its schema)",
        )
        if issue35:
            need(line.startswith("- memoryd_recall (memoryd): "), "memoryd_recall not listed")
            for trigger in TRIGGERS:
                need(trigger in line, f"the directory line lacks {trigger!r}: {line!r}")
    need(rec.get("second_turn"), "no request on the second turn")
    for r in rec.get("second_turn") or []:
        need(not r["body_has_hot_mark"], "the second turn's request holds the hot notes again")
    need(rec.get("archived_before_recall"), "the note was not archived before the recall")
    results = [t for r in rec.get("recall_turn") or [] for t in r["tool_results"]]
    need(
        any("restored" in t and "kayak" in t for t in results),
        "the recall tool's result does not say the archived note was restored",
    )
    need(rec.get("back_after_recall"), "the recalled note is not back in the workspace")
    if issue35:
        out.extend(_issue35_problems(rec))
    recall_hits = [h for h in rec.get("hits") or [] if h["kind"] == "recall"]
    need(len(recall_hits) == 1, f"the recall counted {len(recall_hits)} times by the tool, not 1")
    need(
        len(rec.get("hits") or []) == 1,
        f"the recalled note has {len(rec.get('hits') or [])} hits in all, not exactly 1",
    )
    status = rec.get("status_reply") or ""
    need(
        "hot notes:" in status
        and "promotion candidates pending:" in status
        and "archive:" in status,
        "/memoryd's reply lacks a fact",
    )
    sj = rec.get("status_json") or {}
    need(
        all(k in sj for k in ("tiers", "promotion", "archive", "jobs")),
        "status --json lacks the plugin's facts",
    )
    ref = rec.get("refresh") or {}
    need(
        ref.get("reset_marked") and ref.get("messages_after", 99) < ref.get("messages_before", 0),
        "/refresh did not reset the session",
    )
    reply = ref.get("reply") or ""
    need(
        "moved:" in reply
        and "heron.md" in reply
        and "nominated" in reply
        and "session: reset" in reply,
        f"/refresh's reply lacks a fact: {reply!r}",
    )
    if issue29:
        in_chat = ref.get("reply_in_history") or ""
        need(
            "moved:" in in_chat and "heron.md" in in_chat and "session: reset" in in_chat,
            f"/refresh's reply is not in chat.history after the reset: {in_chat!r}",
        )
        seen = (sj.get("plugin") or {}).get("last_seen") or {}
        need(
            seen.get("gateway_running") and seen.get("command"),
            f"status does not say a running gateway loaded the plugin: {seen!r}",
        )
    need(
        ref.get("heron_in_warm") and not ref.get("heron_in_hot"),
        "/refresh's organize did not move the stale hot note to warm/",
    )
    after = rec.get("turn_after_refresh") or []
    need(
        after and HOT_MARK in after[0]["last_user"],
        "the first turn after /refresh lacks the hot notes",
    )
    need(
        after and STALE_MARK not in after[0]["last_user"],
        "the note moved to warm/ was injected after /refresh",
    )
    need(
        after and after[0].get("user_messages") == 1,
        "the turn after /refresh still carries the earlier conversation",
    )
    broken = rec.get("broken") or {}
    need(broken.get("status") == "ok", "a turn failed with memoryd's config broken")
    need(
        all(not r["body_has_hot_mark"] for r in broken.get("requests") or []),
        "notes injected with memoryd's config broken",
    )
    failures = [ln for ln in broken.get("log") or [] if "no hot notes injected" in ln]
    need(len(failures) == 1, f"{len(failures)} log lines for the broken config, not 1")
    if "read_turn" in rec:  # issue 28 (records made before it have none of these)
        out.extend(issue28_problems(rec))
    if "venv" in rec:  # issue 29 (records made before it have none)
        out.extend(venv_problems(rec["venv"]))
    un = rec.get("uninstall") or {}
    need(un.get("exit") == 0, "memoryd plugin uninstall failed")
    need(un.get("same_bytes"), "openclaw.json differs from before the install")
    return out


def venv_problems(venv: dict[str, Any]) -> list[str]:
    """Issue 29's venv phase: the plugin outlives the venv memoryd was installed in."""
    out = Problems()
    need = out.need

    need(venv.get("install_exit") == 0, "plugin install from the venv failed")
    need(str(venv.get("command") or "").endswith("/venv/bin/memoryd"),
         f"the plugin does not run the venv's memoryd: {venv.get('command')}")
    need(not venv.get("gone_trouble"),
         f"with the venv deleted the gateway reported load trouble: {venv.get('gone_trouble')}")
    warnings = venv.get("gone_warnings") or []
    need(len(warnings) == 1, f"{len(warnings)} warnings with the venv deleted, not 1")
    need(all("memoryd plugin install" in w for w in warnings),
         "the warning does not say to run `memoryd plugin install`")
    need("memoryd plugin install" in str(venv.get("gone_reply")),
         f"/memoryd with the venv deleted does not say what to do: {venv.get('gone_reply')}")
    need(venv.get("reinstall_exit") == 0, "plugin install from the venv made again failed")
    need(not venv.get("again_trouble"),
         f"the gateway after the venv was made again: {venv.get('again_trouble')}")
    need(venv.get("again_hot_notes"), "no hot notes in a new session after the venv was made again")
    return out


def issue28_problems(rec: dict[str, Any]) -> list[str]:
    """Issue 28's live facts: the read in the same call, the clear winner, memoryd missing."""
    out = Problems()
    need = out.need

    need(rec.get("archived_before_read"), "the read note was not archived before the read")
    read_results = [t for r in rec.get("read_turn") or [] for t in r["tool_results"]]
    need(
        any(READ_MARK in t for t in read_results),
        "the memory_get of an archived path did not return its text in that same call",
    )
    need(rec.get("back_after_read"), "the read note is not back in the workspace")
    restored = [ln for ln in rec.get("plugin_log") or [] if "restored on demand: read" in ln]
    need(len(restored) == 1, f"{len(restored)} 'restored on demand: read' log lines, not 1")
    read_hits = rec.get("read_hits") or []
    need(len(read_hits) == 1, f"the read note has {len(read_hits)} hits, not exactly 1")
    if "search_turn" in rec:  # (records made before the search hook have none of these)
        out.extend(_search_problems(rec))
    if "copy_read_turn" in rec:  # (nor of the archive in OpenClaw's index)
        out.extend(_copy_read_problems(rec))
    leader = [t for r in rec.get("leader_turn") or [] for t in r["tool_results"]]
    need(
        any("restored" in t and LEADER_MARK in t and "clearly leads" in t for t in leader),
        "the recall with a clear winner among more than 3 did not restore it",
    )
    need(rec.get("leader_back"), "the recall's clear winner is not back in the workspace")
    need(not rec.get("rivals_back"), f"notes behind the winner came back: {rec.get('rivals_back')}")
    # (the hook's time is measured and recorded, not judged: docs/benchmarks.md)
    need((rec.get("read_latency") or {}).get("hook_ms"), "no read hook time was logged")
    miss = rec.get("missing") or {}
    need(miss.get("status") == "ok", "a turn failed with memoryd missing")
    results = [t for r in miss.get("requests") or [] for t in r["tool_results"]]
    need(len(results) >= 3, f"{len(results)} tool results with memoryd missing, not 3")
    need(
        not any("blocked" in t.lower() for t in results),
        "a memory tool call was blocked with memoryd missing",
    )
    need(
        any("not available" in t for t in results),
        "the recall did not say memoryd is not available",
    )
    lines = [ln for ln in miss.get("log") or [] if "no restore before it" in ln]
    want = 2 if "search_turn" in rec else 1  # the read's line, and the search's
    need(len(lines) == want, f"{len(lines)} log lines with memoryd missing, not {want}")
    return out


def _search_problems(rec: dict[str, Any]) -> list[str]:
    """The search hook's live facts: a search naming an archived note gets it in that very
    call (its answer holds the note's text), the note is back, counted once, logged once."""
    out = Problems()
    need = out.need

    need(rec.get("archived_before_search"), "the searched note was not archived before")
    answers = [r["tool_results"][-1] for r in rec.get("search_turn") or [] if r["tool_results"]]
    need(
        any(SEARCH_MARK in t for t in answers),
        "the memory_search naming an archived note did not return it in that same call",
    )
    need(rec.get("back_after_search"), "the searched note is not back in the workspace")
    restored = [ln for ln in rec.get("plugin_log") or [] if "restored on demand: search" in ln]
    need(len(restored) == 1, f"{len(restored)} 'restored on demand: search' log lines, not 1")
    hits = rec.get("search_hits") or []
    need(len(hits) == 1, f"the searched note has {len(hits)} hits after its search, not 1")
    need((rec.get("search_latency") or {}).get("hook_ms"), "no search hook time was logged")
    return out


def _copy_read_problems(rec: dict[str, Any]) -> list[str]:
    """The archive in OpenClaw's index: a read of an archived copy returns its text, its one
    hit is the note's (none under the archive path), and the daemon's check brings it home."""
    out = Problems()
    need = out.need

    need(rec.get("extra_paths") == ["memory-archive"], f"extraPaths: {rec.get('extra_paths')}")
    results = [t for r in rec.get("copy_read_turn") or [] for t in r["tool_results"]]
    need(any(COPY_MARK in t for t in results), "the read of an archived copy returned no text")
    hits = rec.get("copy_hits") or []
    need(
        [h["path"] for h in hits] == [COPY_NOTE],
        f"the read of the archived copy counted as {[h['path'] for h in hits]}, not once as "
        f"{COPY_NOTE}",
    )
    events = rec.get("copy_restores") or []
    need(
        [(e.get("outcome"), e.get("trigger"), e.get("path")) for e in events]
        == [("restored", "read", COPY_NOTE)],
        f"the daemon's check after the read of a copy: {events}",
    )
    need(rec.get("copy_back") and not rec.get("copy_left"), "the copy's note is not back home")
    return out


def _issue35_problems(rec: dict[str, Any]) -> list[str]:
    """The recall tool deferred and still reached; what the plugin adds to a request."""
    out = Problems()
    need = out.need

    turn = rec.get("recall_turn") or []
    via = [r["reply"] for r in turn if isinstance(r["reply"], dict)]
    searches = {v["id"] for v in via if v.get("tool") == "tool_search"}
    found = [
        t
        for r in turn
        for i, t in zip(r.get("tool_result_ids") or [], r["tool_results"], strict=False)
        if i in searches and "memoryd_recall" in t
    ]
    need(found, "tool_search on the seed's words did not find memoryd_recall")
    need(
        any(
            v.get("tool") == "tool_call" and v["arguments"].get("id") == "memoryd_recall"
            for v in via
        ),
        "memoryd_recall was not reached through tool_call",
    )
    on = (rec.get("cost") or {}).get("on") or {}
    off = (rec.get("cost") or {}).get("off") or {}
    need(on.get("requests"), "no request measured with Tool Search on")
    need(
        on.get("requests") and on.get("standing_max", 10**9) <= STANDING_MAX,
        f"the plugin adds {on.get('standing_max')} characters a request with Tool Search on, "
        f"more than {STANDING_MAX}",
    )
    need(on.get("notes_per_session_max", 0) > 0, "no hot notes measured")
    need(off.get("schema_max", 0) > 0, "Tool Search off: memoryd_recall's schema not offered")
    return out
