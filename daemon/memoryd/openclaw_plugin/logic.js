// memoryd's OpenClaw plugin: the parts that need no OpenClaw (run, parse, format).
//
// Everything here is plain Node (no npm packages), so a test can import it without a
// gateway. The plugin talks to memoryd only through its command line with --json, always
// asynchronously: a missing, broken or slow memoryd costs a turn nothing but one log line.

import { spawn } from "node:child_process";
import { access, constants, stat } from "node:fs/promises";

export const PLUGIN_ID = "memoryd";
export const TOOL_NAME = "memoryd_recall";
export const DEFAULT_INJECT_TIMEOUT_MS = 700;
export const DEFAULT_COMMAND_TIMEOUT_MS = 60000;
// How long a promotion's sub-session may take before memoryd records nothing (yet).
export const DEFAULT_PROMOTE_TIMEOUT_MS = 180000;
// How memoryd_recall is offered (memoryd's `plugin.recall_tool`, written by plugin install).
export const RECALL_MODES = ["deferred", "direct", "off"];
const MAX_OUTPUT_BYTES = 8 * 1024 * 1024;
const MAX_NOTE_CHARS = 8000; // of one recalled note handed to the model
// Who runs memoryd: this gateway process and the folder the plugin was loaded from, which
// memoryd notes for `memoryd status` ("loaded in gateway pid …, last call …").
const CALLER = JSON.stringify({
  pid: process.pid,
  folder: decodeURIComponent(new URL(".", import.meta.url).pathname).replace(/\/$/, ""),
});

/** The plugin's settings from `plugins.entries.memoryd.config`, defaults filled in. */
export function settingsOf(pluginConfig) {
  const c = pluginConfig && typeof pluginConfig === "object" ? pluginConfig : {};
  const int = (v, d) => (Number.isInteger(v) && v > 0 ? v : d);
  return {
    command: typeof c.command === "string" && c.command.trim() ? c.command.trim() : "memoryd",
    config: typeof c.config === "string" && c.config.trim() ? c.config.trim() : null,
    inject: c.inject !== false,
    injectTimeoutMs: int(c.injectTimeoutMs, DEFAULT_INJECT_TIMEOUT_MS),
    commandTimeoutMs: int(c.commandTimeoutMs, DEFAULT_COMMAND_TIMEOUT_MS),
    recall: RECALL_MODES.includes(c.recall) ? c.recall : "deferred",
    promoteTimeoutMs: int(c.promoteTimeoutMs, DEFAULT_PROMOTE_TIMEOUT_MS),
  };
}

/** The argv for one memoryd command: the config first, as memoryd's parser wants it. */
export function argvFor(settings, args) {
  return settings.config ? ["--config", settings.config, ...args] : [...args];
}

/**
 * Run memoryd with `args` (which include --json) and parse its one JSON document.
 *
 * Resolves, never rejects: `{ ok: true, doc, ms }` or `{ ok: false, error, ms }`. The child
 * is killed at `timeoutMs`; its output is bounded.
 */
export function runMemoryd(settings, args, timeoutMs) {
  const started = Date.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = (result) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ ...result, ms: Date.now() - started });
    };
    let child;
    try {
      child = spawn(settings.command, argvFor(settings, args), {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, MEMORYD_PLUGIN_CALLER: CALLER },
        windowsHide: true,
      });
    } catch (err) {
      resolve({ ok: false, error: `cannot run ${settings.command}: ${err.message}`, ms: 0 });
      return;
    }
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      finish({ ok: false, error: `memoryd took longer than ${timeoutMs} ms (stopped)` });
    }, timeoutMs);
    const out = [];
    const err = [];
    let size = 0;
    child.stdout.on("data", (b) => {
      size += b.length;
      if (size <= MAX_OUTPUT_BYTES) out.push(b);
    });
    child.stderr.on("data", (b) => {
      if (err.length < 64) err.push(b);
    });
    child.on("error", (e) => finish({ ok: false, error: `cannot run ${settings.command}: ${e.message}` }));
    child.on("close", (code, signal) => {
      const stderr = Buffer.concat(err).toString("utf8").trim();
      if (code !== 0 && code !== 1) {
        const why = stderr.split("\n").filter(Boolean).pop() || `exit ${code ?? signal}`;
        finish({ ok: false, error: `memoryd ${args[0]} failed: ${why}` });
        return;
      }
      try {
        finish({ ok: true, doc: JSON.parse(Buffer.concat(out).toString("utf8")), exitCode: code });
      } catch {
        const why = stderr.split("\n").filter(Boolean).pop() || "no JSON on stdout";
        finish({ ok: false, error: `memoryd ${args[0]} failed: ${why}` });
      }
    });
  });
}

/**
 * Why memoryd cannot run, said with the fix (null when its program is there). A stat, no
 * process: checked once at gateway start (issue 29), never in register(). A bare name is
 * looked up on PATH when run, and not judged here.
 */
export async function missingMemoryd(settings) {
  if (!settings.command.includes("/")) return null;
  try {
    await access(settings.command, constants.X_OK);
    return null;
  } catch {
    return (
      `${settings.command} is missing or not executable (memoryd's virtualenv removed or ` +
      "moved?): install memoryd again, then run `memoryd plugin install`"
    );
  }
}

/** `promise`'s result, or `{ ok: false, error }` once `ms` have passed (the timer cleared). */
export function withDeadline(promise, ms) {
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, error: `memoryd took longer than ${ms} ms` }), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Whether this prompt build is a session's first turn (no earlier user message in it). */
export function isFirstTurn(event) {
  // No user message yet: a session may open on an assistant note (the /refresh reply put
  // into the new session by chat.inject), which is no turn of the user's.
  return Array.isArray(event?.messages) && !event.messages.some((m) => m?.role === "user");
}

/** The context put before a session's first message: the hot notes, said as what they are. */
export function injectionText(doc, recall = true) {
  const text = typeof doc?.text === "string" ? doc.text.trim() : "";
  if (!text) return "";
  const older = recall ? "; use the memoryd_recall tool for older ones" : "";
  return `Recent notes from memoryd's tier store (hot/, the last few hours${older}):\n\n${text}`;
}

/** Why a query cannot go to memoryd as it is, in words for the agent (null: it can). A NUL
 * character cannot be passed on a command line (Node refuses the whole call). */
export function queryProblem(words) {
  if (words.some((w) => w.includes("\0"))) {
    return "The query contains a NUL character (\\0), which memoryd cannot search for: give the key words as plain text.";
  }
  return null;
}

/** Search words from the tool's parameters: `query` split on spaces, or `words`. */
export function wordsOf(params) {
  const words = [];
  if (typeof params?.query === "string") words.push(...params.query.split(/\s+/));
  if (Array.isArray(params?.words)) {
    for (const w of params.words) if (typeof w === "string") words.push(...w.split(/\s+/));
  }
  return words.map((w) => w.trim()).filter(Boolean).slice(0, 12);
}

function cut(text, max) {
  return text.length > max ? `${text.slice(0, max)}\n[… cut at ${max} characters]` : text;
}

/** The recall tool's answer to the model: memoryd's message, then each note found. */
export function recallText(doc) {
  const said = String(doc?.message || "Nothing found.");
  // The description no longer says it (issue 35: it is in every request); the answer does.
  const restored = ["forgotten", "archive"].includes(doc?.tier) &&
    (doc?.rotations || []).some((r) => r?.status === "done");
  const lines = [restored ? `${said} Tell the user the note is back.` : said];
  for (const m of doc?.shown || []) {
    const where = m.now && m.now !== m.path ? `${m.now} (was ${m.path})` : m.path;
    lines.push("", `== ${where}  [${(m.words || []).join(", ")}]`);
    if (m.original) lines.push(`original: ${m.original}`);
    lines.push(typeof m.text === "string" ? cut(m.text.trim(), MAX_NOTE_CHARS) : `  ${m.snippet || ""}`);
  }
  // A move that failed says why (a file of the user's at that path, ...), as the CLI does.
  for (const r of doc?.rotations || []) {
    if (r?.status === "failed") lines.push("", `(could not move ${r.src} → ${r.dst}: ${r.error || "unknown"})`);
  }
  return lines.join("\n");
}

function list(names, max = 5) {
  if (!names.length) return "none";
  const shown = names.slice(0, max).join(", ");
  return names.length > max ? `${shown}, … (${names.length} in all)` : shown;
}

/** The agent a command came from: its own id, else the one its session key names. */
export function agentOf(ctx) {
  if (typeof ctx?.agentId === "string" && ctx.agentId) return ctx.agentId;
  const m = /^agent:([^:]+):/.exec(ctx?.sessionKey || "");
  return m ? m[1] : "";
}

/** The text of the last assistant message of a session's messages ("" when none). */
export function lastAssistantText(messages) {
  for (const m of [...(messages || [])].reverse()) {
    if (m?.role !== "assistant") continue;
    const c = m.content;
    const text = typeof c === "string" ? c
      : Array.isArray(c) ? c.filter((p) => p?.type === "text").map((p) => p.text || "").join("") : "";
    if (text.trim()) return text.trim();
  }
  return "";
}

/**
 * What a promotion run did, in lines for the chat: memoryd's record (`promote --settle
 * --json`), never the sub-session's word alone; its reply follows, as it said it.
 */
export function promotionLines(handoff, settled, subReply) {
  if (!handoff?.handed) return [`promotion: not handed over (${handoff?.why || "no candidates"})`];
  if (!settled) return ["promotion: the sub-session's outcome could not be checked"];
  if (settled.settled === false) return [`promotion: ${settled.why}`];
  const out = [];
  const promoted = (settled.promoted || []).map((p) => `${p.source} → ${p.dest}`);
  out.push(`promoted (checked by memoryd): ${promoted.length ? promoted.join("; ") : "none"}`);
  for (const d of settled.declined || []) out.push(`declined: ${d.source}: ${d.why}`);
  const missing = settled.not_landed || [];
  if (missing.length) out.push(`not filed, still nominated: ${list(missing)}`);
  const left = (settled.left_for_user || []).map((d) => d.source);
  if (left.length) out.push(`left for you to decide: ${list(left)}`);
  if (settled.status && settled.status !== "ok") out.push(`(the sub-session ended: ${settled.status})`);
  if (subReply) out.push(`sub-session said: ${cut(subReply, 600)}`);
  return out;
}

/** `/refresh`'s reply: what organize moved, what promote nominated, the reset. */
export function refreshReply(doc, resetLine, promoted = []) {
  const org = doc?.organize || {};
  const actions = (org.actions || []).filter((a) => a.op !== "conflict");
  // A gist is a summary written beside the note, which stays where it was (issue 29).
  const gists = actions.filter((a) => a.op === "gist" && a.dst).map((a) => `${a.src} → ${a.dst}`);
  const moved = actions
    .filter((a) => !(a.op === "gist" && a.dst))
    .map((a) => (a.dst ? `${a.src} → ${a.dst}` : `${a.op} ${a.src}`));
  const cands = (doc?.promote?.data?.candidates || []).map((c) => c.path);
  return [
    `memoryd refresh: ${org.summary || "organize ran"}`,
    `moved: ${list(moved)}`,
    ...(gists.length ? [`summary copied: ${list(gists)} (the note stays)`] : []),
    `nominated for MEMORY.md: ${list(cands)}${doc?.promote?.data?.report ? ` (report: ${doc.promote.data.report})` : ""}`,
    ...promoted,
    resetLine,
  ].join("\n");
}

/** `/memoryd`'s reply: the facts of `memoryd status --json`, in a few lines. */
export function statusReply(doc) {
  const t = doc?.tiers || {};
  const hot = t.present ? `${list(t.hot || [])}` : "no tier store";
  const counts = t.present
    ? Object.entries(t.notes || {}).map(([k, v]) => `${v} ${k}`).join(", ")
    : "";
  const jobs = Object.entries(doc?.jobs || {}).map(([name, j]) =>
    j.last_period ? `${name} ${j.last_status} ${j.last_finished}` : `${name} never`,
  );
  const p = doc?.promotion || {};
  const pending = p.pending == null ? "no promote report yet" : `${p.pending} (as of ${p.generated})`;
  const a = doc?.archive || {};
  const daemon = doc?.daemon?.running ? `running (pid ${doc.daemon.pid})` : "not running";
  return [
    `memoryd: daemon ${daemon}`,
    `hot notes: ${hot}${counts ? `  [${counts}]` : ""}`,
    `last runs: ${jobs.join("; ") || "none"}`,
    `promotion candidates pending: ${pending}`,
    ...(p.last_run ? [`last filed by a sub-session: ${p.last_run.promoted} promoted (${p.last_run.settled}` +
      `${p.last_run.state === "undone" ? ", undone since" : ""}); /memoryd promote files the rest`] : []),
    `archive: ${a.files ?? 0} files, ${Math.round((a.bytes ?? 0) / 1024)} KB`,
  ].join("\n");
}

/** A file's stamp as memoryd writes it (`<mtime_ns>:<size>`, or `missing`). */
export async function stampOf(path) {
  try {
    const st = await stat(path, { bigint: true });
    return `${st.mtimeNs}:${st.size}`;
  } catch {
    return "missing";
  }
}

/**
 * Whether nothing an injection depends on changed since memoryd computed it: every path of
 * its `session.watch` (hot/ and its files, the bootstrap files, the configurations) still
 * has the stamp memoryd saw before reading. A handful of stat calls instead of a process.
 */
export async function stillValid(doc, nowMs = Date.now()) {
  const watch = doc?.session?.watch;
  if (!Array.isArray(watch) || watch.length === 0) return false;
  // Many notes in hot/: memoryd stamped only the newest, so an edit in place of another one
  // shows in no stamp; such an answer holds for `valid_seconds` after it was fetched.
  const partial = doc?.session?.watch_partial;
  if (partial) {
    const age = nowMs - doc.fetchedAtMs;
    if (!Number.isFinite(age) || age < 0 || age > (Number(partial.valid_seconds) || 0) * 1000) return false;
  }
  const now = await Promise.all(watch.map((w) => stampOf(w.path)));
  if (!watch.every((w, i) => w.stamp === now[i])) return false;
  // A file added to hot/ changes the folder's stamp; a file there that memoryd did not list
  // cannot appear without that.
  return true;
}
