// Restore before a read (issue 28): a memory_get of a path memoryd archived, with nothing at
// that path now, gets the note back *before* OpenClaw reads it, so that very call returns
// the text.
//
// OpenClaw's before_tool_call fails closed (a handler that throws or passes its timeout
// blocks the tool call), so this handler never throws, never blocks and never rewrites the
// call: it answers within its own deadline (`readTimeoutMs`, well under a second), and a
// missing, broken or slow memoryd only costs one log line while the read goes on as if
// memoryd were absent. The path is the model's: memoryd treats it as data (`memoryd on-read`
// only compares it with its journal). A memoryd still running at the deadline is left to
// finish (up to `commandTimeoutMs`): its move is journaled either way.

import { runMemoryd, withDeadline } from "./logic.js";

export const READ_TOOL = "memory_get";
export const DEFAULT_READ_TIMEOUT_MS = 800;
// OpenClaw's own budget for the handler: above ours, so our deadline always decides.
const HOST_MARGIN_MS = 4000;

/** The path a memory_get call asks for, or null (another tool, no path, not a string). */
export function readPathOf(event) {
  if (!event || event.toolName !== READ_TOOL) return null;
  const path = event.params?.path;
  return typeof path === "string" && path.trim() && path.length <= 4096 ? path : null;
}

/** The hook's deadline from the plugin's config (`readTimeoutMs`), default filled in. */
export function readTimeoutOf(pluginConfig) {
  const v = pluginConfig && typeof pluginConfig === "object" ? pluginConfig.readTimeoutMs : undefined;
  return Number.isInteger(v) && v >= 50 && v <= 5000 ? v : DEFAULT_READ_TIMEOUT_MS;
}

/**
 * The before_tool_call handler: resolves to undefined (no decision) whatever happens.
 * `log(level, message)` writes one plugin log line.
 */
export function beforeReadHandler(settings, timeoutMs, log) {
  return async (event, ctx) => {
    try {
      const path = readPathOf(event);
      if (path === null) return undefined;
      const args = ["on-read", "--json"];
      if (typeof ctx?.agentId === "string" && ctx.agentId) args.push(`--agent=${ctx.agentId}`);
      args.push("--", path);
      const started = Date.now();
      const res = await withDeadline(runMemoryd(settings, args, settings.commandTimeoutMs), timeoutMs);
      const ms = Date.now() - started;
      if (!res.ok) {
        log("warn", `read of ${path}: no restore before it (${res.error})`);
      } else if (res.doc?.outcome === "restored") {
        log("info", `restored on demand: read ${res.doc.path} from ${res.doc.archived} (${ms} ms)`);
      } else if (res.doc?.outcome === "failed" || res.doc?.outcome === "changed") {
        log("warn", `read of ${path}: ${res.doc.outcome} (${res.doc.error || "left in the archive"}; ${ms} ms)`);
      } else {
        log("info", `read of ${path}: ${res.doc?.outcome ?? "no answer"} (${ms} ms)`);
      }
    } catch (err) {
      try {
        log("warn", `read hook failed, the read goes on: ${err?.message || err}`);
      } catch {
        // a logger that throws must not block the read either
      }
    }
    return undefined;
  };
}

/** Register the hook: only memory_get calls, OpenClaw's budget above ours. */
export function registerReadHook(api, settings, log) {
  const timeoutMs = readTimeoutOf(api.pluginConfig);
  api.on("before_tool_call", beforeReadHandler(settings, timeoutMs, log), {
    matcher: [READ_TOOL],
    timeoutMs: timeoutMs + HOST_MARGIN_MS,
  });
}
