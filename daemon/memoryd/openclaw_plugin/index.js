// memoryd inside OpenClaw (issue 21; seed 004's session plugin).
//
// - before_prompt_build: on a session's first turn, the hot/ notes of memoryd's tier store
//   (`memoryd inject --session --json`) go before the user's first message, once.
// - /refresh: organize → promote → (with promote.auto) the candidates filed by a sub-session
//   of the user's agent → session reset; /memoryd: a short status; /memoryd promote: the
//   candidates filed by a sub-session, by hand.
// - memoryd_recall: the seed's layered recall (hot → warm → gist → forgotten → archive).
// - before_tool_call (memory_get): a path memoryd archived comes back before the read.
// - before_tool_call (memory_search): an archived note the query names comes back, and is
//   that search's answer (search_hook.js).
//
// register() only registers: it runs several times (twice in a gateway, again in every CLI
// process that loads plugins), so it starts nothing, spawns nothing and opens nothing.
// The recall tool records its hits itself (memoryd recall); memoryd's transcript scanner
// counts only memory_search / memory_get, so a recall is counted exactly once.

import {
  PLUGIN_ID,
  TOOL_NAME,
  agentOf,
  lastAssistantText,
  promotionLines,
  injectionText,
  isFirstTurn,
  missingMemoryd,
  queryProblem,
  recallText,
  refreshReply,
  runMemoryd,
  settingsOf,
  statusReply,
  stillValid,
  withDeadline,
  wordsOf,
} from "./logic.js";
import { registerReadHook } from "./read_hook.js";
import { registerSearchHook } from "./search_hook.js";

// What every request pays for the tool (issue 35): under Tool Search (OpenClaw's default) one
// directory line, `- memoryd_recall (memoryd): <description>` (OpenClaw cuts a description
// past 180 characters, or 64 when its directory is tight: the seed's triggers come first);
// with Tool Search off, this schema whole. How the layers work and "tell the user" are in the
// tool's answer, paid only when it is called.
const RECALL_PARAMETERS = {
  type: "object",
  properties: { query: { type: "string", description: "2-5 key words" } },
  required: ["query"],
};

const RECALL_DESCRIPTION =
  'Recall past notes: "did we discuss X before?", "what was the conclusion on Y?", anything ' +
  "not in this chat. Searches memoryd's tiers, then its archive (restores).";

function log(api, level, message) {
  const logger = api.logger;
  const fn = logger && typeof logger[level] === "function" ? logger[level] : null;
  if (fn) fn.call(logger, `memoryd: ${message}`);
}

/**
 * Ask the gateway to reset the session the command came from, without waiting on it: the
 * reset waits for the session's work, and this command is that work. Once the reset is done,
 * `replyFor(line)` (the command's reply, with the line this returns) is put into the new
 * session's chat (`chat.inject`: an assistant note, no agent run): the reply the command
 * returns lands in the old session, which the reset takes out of `chat.history` ~150 ms later
 * (issue 29). Resolves to a line for the reply; never rejects.
 */
async function requestReset(api, ctx, replyFor) {
  if (!ctx.sessionKey) return "session: not reset (this command did not come from a session)";
  const params = { key: ctx.sessionKey, reason: "reset" };
  let gateway;
  try {
    const sdk = await import("openclaw/plugin-sdk/gateway-runtime");
    gateway = (method, p) => sdk.callGatewayFromCli(method, { json: true, timeout: "30000" }, p);
  } catch {
    gateway = null;
  }
  if (!gateway) return "session: not reset (no gateway client available; send /reset)";
  const line = "session: reset — the next message starts a new session with the hot notes";
  // Started now, finished after this reply: the next message starts a fresh session, whose
  // first turn gets the hot notes again.
  setTimeout(() => {
    Promise.resolve()
      .then(() => gateway("sessions.reset", params))
      .then(
        () => {
          log(api, "info", `session ${ctx.sessionKey} reset after /refresh`);
          const message = { sessionKey: ctx.sessionKey, message: replyFor(line), label: "memoryd /refresh" };
          return gateway("chat.inject", message).then(
            () => log(api, "info", "the /refresh reply is in the new session's chat"),
            (err) => log(api, "warn", `the /refresh reply did not reach the new session: ${err?.message || err}`),
          );
        },
        (err) => log(api, "warn", `session reset after /refresh failed: ${err?.message || err}`),
      );
  }, 0);
  return line;
}

/**
 * Hand memoryd's promotion candidates to a sub-session of the user's own agent
 * (`api.runtime.subagent.run`: the gateway's `agent` method, in a session of its own), wait
 * for it, then have memoryd check and record what landed (`promote --settle`). `auto`: asked
 * by /refresh, which hands over only with memoryd's `promote.auto`. memoryd writes no entry;
 * the sub-session does. Resolves to the reply's lines; never rejects.
 */
async function promoteViaSubagent(api, settings, ctx, auto) {
  const agent = agentOf(ctx);
  const timeoutS = Math.max(1, Math.ceil(settings.promoteTimeoutMs / 1000));
  const args = [
    "promote", "--handoff", "--json", "--timeout", String(timeoutS),
    ...(auto ? ["--auto"] : []), ...(agent ? ["--agent", agent] : []),
  ];
  const handed = await runMemoryd(settings, args, settings.commandTimeoutMs);
  if (!handed.ok) return [`promotion: memoryd promote failed: ${handed.error}`];
  const plan = handed.doc;
  // (/refresh with promote.auto off: memoryd answered before any work; nothing to say)
  if (!plan?.handed && auto && plan?.why?.startsWith("promote.auto is off")) return [];
  if (!plan?.handed) return promotionLines(plan, null, "");
  let status = "error";
  let said = "";
  const sub = api.runtime?.subagent;
  try {
    if (!sub || typeof sub.run !== "function") throw new Error("this OpenClaw offers plugins no subagent runtime");
    const started = await sub.run({
      sessionKey: plan.session_key,
      message: plan.task,
      deliver: false,
      idempotencyKey: `memoryd-promote-${plan.run}`,
    });
    log(api, "info", `promotion run ${plan.run} handed to sub-session ${started.sessionKey} (run ${started.runId})`);
    // A wait that fails on its way (OpenClaw's retryableTransportError: the run itself may
    // still be going) is waited again until the run's time is up; then it is "unknown", which
    // memoryd settles with what landed. A "timeout" records nothing: the run stays handed over
    // and the next handoff or `restore --last` settles it once its time is up.
    const deadline = Date.now() + settings.promoteTimeoutMs;
    let waited;
    for (;;) {
      const left = Math.max(0, deadline - Date.now());
      waited = await sub.waitForRun({ runId: started.runId, timeoutMs: left });
      if (!waited?.retryableTransportError) break;
      if (Date.now() >= deadline) { waited = { ...waited, status: "unknown" }; break; }
      await new Promise((r) => setTimeout(r, Math.min(1000, left)));
    }
    status = waited?.status || "error";
    if (waited?.error) log(api, "warn", `promotion sub-session ended ${status}: ${waited.error}`);
    try {
      const { messages } = await sub.getSessionMessages({ sessionKey: started.sessionKey, limit: 20 });
      said = lastAssistantText(messages);
    } catch (err) {
      log(api, "warn", `promotion sub-session's reply not read: ${err?.message || err}`);
    }
  } catch (err) {
    log(api, "warn", `promotion sub-session failed: ${err?.message || err}`);
    status = "error";
  }
  const settled = await runMemoryd(
    settings, ["promote", "--settle", plan.run, "--status", status, "--json"], settings.commandTimeoutMs,
  );
  if (!settled.ok) return [`promotion: memoryd could not check run ${plan.run}: ${settled.error}`];
  const lines = promotionLines(plan, settled.doc, said);
  log(api, "info", `promotion run ${plan.run}: ${lines.join(" | ")}`);
  return lines;
}

// memoryd's last answers and the runs under way, shared by every registration of this module
// (a gateway registers the plugin twice, and the instance that sees gateway_start need not
// be the one that builds the prompt). Keyed by program, config and agent. Filled only by hook
// handlers: loading the module or registering starts nothing.
const answers = new Map();
const running = new Map();
// memoryd's program checked at this gateway's start (issue 29): command → why it cannot run.
const checked = new Set();
const missing = new Map();

export default {
  id: PLUGIN_ID,
  name: "memoryd",
  description:
    "Hot notes at session start, /refresh and /memoryd in chat, and the memoryd_recall tool.",
  register(api) {
    const settings = settingsOf(api.pluginConfig);
    const slot = (agent) => `${settings.command}\u0000${settings.config ?? ""}\u0000${agent}`;
    const lastInjection = {
      get: (agent) => answers.get(slot(agent)),
      set: (agent, doc) => answers.set(slot(agent), doc),
      delete: (agent) => answers.delete(slot(agent)),
    };

    const pending = {
      get: (agent) => running.get(slot(agent)),
      has: (agent) => running.has(slot(agent)),
      set: (agent, run) => running.set(slot(agent), run),
      delete: (agent) => running.delete(slot(agent)),
    };

    // memoryd's answer for `agent` ("" = OpenClaw's default agent), kept for later sessions
    // while its stamps hold. One run at a time per agent; resolves to { ok, doc | error }.
    const runInject = (agent, timeoutMs, why = "") => {
      const running = pending.get(agent);
      if (running) return running;
      const args = ["inject", "--session", "--json"];
      if (agent) args.push("--agent", agent);
      const run = runMemoryd(settings, args, timeoutMs).then((res) => {
        pending.delete(agent);
        if (res.ok && why) log(api, "info", `hot notes prepared ${why} (${res.ms} ms)`);
        if (res.ok) {
          const doc = { ...res.doc, fetchedAtMs: Date.now() }; // (for a capped watch list)
          lastInjection.set(agent, doc);
          if (doc.session?.agent) lastInjection.set(doc.session.agent, doc);
        } else {
          lastInjection.delete(agent);
        }
        return res;
      });
      pending.set(agent, run);
      return run;
    };

    // Warm the answer before anyone waits for it: at gateway start, and after each turn
    // (a turn may have written a note into hot/). Neither hook waits for memoryd.
    api.on("gateway_start", async () => {
      if (!checked.has(settings.command)) {
        checked.add(settings.command);
        const why = await missingMemoryd(settings);
        if (why) {
          missing.set(settings.command, why);
          log(api, "warn", why); // once: the hooks below stay quiet about it
          return;
        }
      }
      if (settings.inject) void runInject("", settings.commandTimeoutMs, "at gateway start");
    });
    api.on("agent_end", async (_event, ctx) => {
      const agent = ctx?.agentId || "";
      if (!settings.inject || pending.has(agent)) return;
      const doc = lastInjection.get(agent);
      if (!doc || !(await stillValid(doc))) {
        void runInject(agent, settings.commandTimeoutMs, "after a turn");
      }
    });

    api.on("before_prompt_build", async (event, ctx) => {
      if (!settings.inject || !isFirstTurn(event)) return undefined;
      if (ctx?.trigger === "heartbeat" || ctx?.trigger === "cron") return undefined;
      // No memory of sessions here: a reset in place keeps the session id, a gateway restart
      // forgets everything, and a first turn whose prompt is built again needs the notes
      // again (prependContext is not saved in the transcript). The empty history is the rule.
      const started = Date.now();
      const agent = ctx?.agentId || "";
      let doc = lastInjection.get(agent);
      let how = "unchanged since the last run";
      if (!doc || !(await stillValid(doc))) {
        // A run already under way (a prefetch) is awaited within the same budget.
        const res = await withDeadline(runInject(agent, settings.injectTimeoutMs), settings.injectTimeoutMs);
        if (!res.ok) {
          if (!missing.has(settings.command)) log(api, "warn", `no hot notes injected: ${res.error}`);
          return undefined;
        }
        doc = res.doc;
        how = "memoryd inject";
      }
      const text = injectionText(doc, settings.recall !== "off");
      const ms = Date.now() - started;
      if (!text) {
        log(api, "info", `no hot notes to inject (${how}, ${ms} ms)`);
        return undefined;
      }
      log(api, "info", `injected ${doc.included?.length ?? 0} hot note(s), ${doc.chars} chars (${how}, ${ms} ms)`);
      return { prependContext: text };
    });

    // A memory_get of a path memoryd archived: the note comes back before the read (read_hook.js).
    registerReadHook(api, settings, (level, message) => log(api, level, message));
    // A memory_search naming an archived note: it comes back, as that search's answer.
    registerSearchHook(api, settings, (level, message) => log(api, level, message));

    // settings.recall: "deferred" (Tool Search lists it in one line, reached by tool_call),
    // "direct" (offered by name in every request), "off" (not registered).
    if (settings.recall !== "off") api.registerTool({
      name: TOOL_NAME,
      label: "memoryd recall",
      description: RECALL_DESCRIPTION,
      parameters: RECALL_PARAMETERS,
      ...(settings.recall === "direct" ? { catalogMode: "direct-only" } : {}),
      async execute(_toolCallId, params, signal) {
        const words = wordsOf(params);
        if (!words.length) {
          return { content: [{ type: "text", text: "Give 2-5 key words in `query`." }], details: { error: "no words" } };
        }
        const problem = queryProblem(words);
        if (problem) return { content: [{ type: "text", text: problem }], details: { error: "bad query" } };
        const res = await runMemoryd(settings, ["recall", "--json", "--", ...words], settings.commandTimeoutMs);
        if (!res.ok) {
          log(api, "warn", `recall failed: ${res.error}`);
          return {
            content: [{ type: "text", text: `memoryd recall is not available: ${res.error}` }],
            details: { error: res.error },
          };
        }
        return { content: [{ type: "text", text: recallText(res.doc) }], details: res.doc };
      },
    });

    api.registerCommand({
      name: "refresh",
      description: "memoryd: organize the tier store, nominate for MEMORY.md, reset the session",
      acceptsArgs: false,
      requireAuth: true,
      async handler(ctx) {
        const res = await runMemoryd(settings, ["refresh", "--json"], settings.commandTimeoutMs);
        if (!res.ok) {
          log(api, "warn", `/refresh failed: ${res.error}`);
          return { text: `memoryd refresh failed: ${res.error}\nsession: not reset` };
        }
        // Before the reset: the sub-session is a session of its own, and the reset waits for
        // this command only (what it says goes into the new session's chat).
        const promoted = await promoteViaSubagent(api, settings, ctx, true);
        const resetLine = await requestReset(api, ctx, (line) => refreshReply(res.doc, line, promoted));
        const text = refreshReply(res.doc, resetLine, promoted);
        log(api, "info", `/refresh: ${text.replace(/\n/g, " | ")}`);
        return { text };
      },
    });

    api.registerCommand({
      name: "memoryd",
      description: "memoryd: hot notes, last job runs, promotion candidates, archive size; " +
        "`/memoryd promote`: file the candidates into MEMORY.md and the skills' retrospects",
      acceptsArgs: true,
      requireAuth: true,
      async handler(ctx) {
        const words = String(ctx?.args || "").trim().split(/\s+/).filter(Boolean);
        if (words[0] === "promote") {
          const lines = await promoteViaSubagent(api, settings, ctx, false);
          return { text: ["memoryd promote:", ...lines].join("\n") };
        }
        if (words.length) return { text: "usage: /memoryd (status) or /memoryd promote" };
        const res = await runMemoryd(settings, ["status", "--json"], settings.commandTimeoutMs);
        if (!res.ok) {
          log(api, "warn", `/memoryd failed: ${res.error}`);
          const why = missing.get(settings.command) || (await missingMemoryd(settings));
          return { text: `memoryd status failed: ${res.error}${why ? `\n${why}` : ""}` };
        }
        return { text: statusReply(res.doc) };
      },
    });
  },
};
