// A search reaches the archive in the same call (issue 28): a memory_search whose query
// names a note memoryd archived, better than any note in the workspace, gets that note back
// *before* OpenClaw searches, and the search's answer is the note (its path and opening
// lines), so that very call reaches it.
//
// Why the call is answered here, not by OpenClaw: measured in the real OpenClaw 2026.9.6, a
// note put back during before_tool_call is not in OpenClaw's index yet (its sync runs in the
// background, after the search), so the search would not find it; a tool_result_persist
// rewrite only reaches the transcript (the model sees it from the next turn on), an
// after_tool_call cannot change the result, and memory_search has no parameter that reaches
// a file outside its index. A block with a reason is the one answer the model gets in that
// call: OpenClaw hands the reason to the model as the tool's result. It is used only when
// memoryd restored a note: any other search runs untouched. The reason names the note's
// path without a JSON "path" key, so memoryd's scanner counts no hit for it; `memoryd
// on-search` counts the one hit itself, under this call's id.
//
// OpenClaw's before_tool_call fails closed (a handler that throws or passes its timeout
// blocks the tool call), so this handler never throws and answers within its own deadline
// (`searchTimeoutMs`, well under a second): a missing, broken or slow memoryd costs one log
// line and the search runs as if memoryd were absent. A memoryd still running at the
// deadline is left to finish (up to `commandTimeoutMs`): its restore is journaled, and the
// next search finds the note. The query is the model's: memoryd only scores it.

import { runMemoryd, withDeadline } from "./logic.js";

export const SEARCH_TOOL = "memory_search";
export const DEFAULT_SEARCH_TIMEOUT_MS = 800;
const MAX_QUERY_CHARS = 2000;
// OpenClaw's own budget for the handler: above ours, so our deadline always decides.
const HOST_MARGIN_MS = 4000;

/** The query a memory_search call asks, or null (another tool, no query, not a string, a
 * NUL that no command line can carry, too long to be a search). */
export function searchQueryOf(event) {
  if (!event || event.toolName !== SEARCH_TOOL) return null;
  const query = event.params?.query;
  if (typeof query !== "string" || !query.trim() || query.includes("\0")) return null;
  return query.length <= MAX_QUERY_CHARS ? query.trim() : null;
}

/** The hook's deadline from the plugin's config (`searchTimeoutMs`), default filled in. */
export function searchTimeoutOf(pluginConfig) {
  const v = pluginConfig && typeof pluginConfig === "object" ? pluginConfig.searchTimeoutMs : undefined;
  return Number.isInteger(v) && v >= 50 && v <= 5000 ? v : DEFAULT_SEARCH_TIMEOUT_MS;
}

/** What the agent gets as the search's answer when memoryd brought a note back (null: the
 * answer is not a restore, the search runs as usual). */
export function restoredAnswer(doc) {
  if (!doc || doc.outcome !== "restored" || typeof doc.path !== "string" || !doc.path) return null;
  const opening = typeof doc.opening === "string" ? doc.opening.trim() : "";
  return [
    `memoryd brought ${doc.path} back from its archive for this search: it answers the query ` +
      "better than the other notes (OpenClaw's index has not seen it yet, so this answer is memoryd's).",
    "",
    `${doc.path} begins:`,
    opening || "(empty)",
    "",
    `Read it whole with memory_get ${doc.path}; search again for the other notes.`,
  ].join("\n");
}

/**
 * The before_tool_call handler: `{ block, blockReason }` (the restored note as the search's
 * answer) or undefined (no decision) whatever else happens. `log(level, message)` writes
 * one plugin log line.
 */
export function beforeSearchHandler(settings, timeoutMs, log) {
  return async (event, ctx) => {
    try {
      const query = searchQueryOf(event);
      if (query === null) return undefined;
      const started = Date.now();
      // (`--opt=value`: an id that starts with "-" is still the option's value)
      const args = ["on-search", "--json", `--answer-by=${started + timeoutMs}`];
      if (typeof ctx?.agentId === "string" && ctx.agentId) args.push(`--agent=${ctx.agentId}`);
      const callId = event.toolCallId || ctx?.toolCallId;
      if (typeof callId === "string" && callId && !callId.includes("\0")) args.push(`--call-id=${callId}`);
      args.push("--", query);
      // The model's words go into the log quoted and cut short: no forged log lines.
      const said = JSON.stringify(query.slice(0, 120));
      const res = await withDeadline(runMemoryd(settings, args, settings.commandTimeoutMs), timeoutMs);
      const ms = Date.now() - started;
      if (!res.ok) {
        log("warn", `search ${said}: no restore before it (${res.error})`);
        return undefined;
      }
      const answer = restoredAnswer(res.doc);
      if (answer !== null) {
        log("info", `restored on demand: search ${said} → ${res.doc.path} from ${res.doc.archived} (${ms} ms)`);
        return { block: true, blockReason: answer };
      }
      if (res.doc?.outcome === "failed" || res.doc?.outcome === "changed") {
        log("warn", `search ${said}: ${res.doc.outcome} (${res.doc.error || "left in the archive"}; ${ms} ms)`);
      } else if (res.doc?.outcome === "tied" && Array.isArray(res.doc.paths)) {
        // No one note leads: none comes back by itself, and the search runs (a block would
        // hide the workspace's results, and a search asked again would be blocked again);
        // memoryd_recall with these words brings back up to three of them.
        log("info", `search ${said}: ${res.doc.paths.length} archived notes match as well, none restored (${ms} ms)`);
      } else {
        log("info", `search ${said}: ${res.doc?.outcome ?? "no answer"} (${ms} ms)`);
      }
    } catch (err) {
      try {
        log("warn", `search hook failed, the search goes on: ${err?.message || err}`);
      } catch {
        // a logger that throws must not block the search either
      }
    }
    return undefined;
  };
}

/** Register the hook: only memory_search calls (under Tool Search, the inner call, not the
 * outer tool_call), OpenClaw's budget above ours. */
export function registerSearchHook(api, settings, log) {
  const timeoutMs = searchTimeoutOf(api.pluginConfig);
  api.on("before_tool_call", beforeSearchHandler(settings, timeoutMs, log), {
    matcher: [SEARCH_TOOL],
    timeoutMs: timeoutMs + HOST_MARGIN_MS,
  });
}
