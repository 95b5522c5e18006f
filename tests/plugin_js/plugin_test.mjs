// The plugin's JavaScript without OpenClaw: run by tests/plugin/test_plugin_js.py with any Node >= 18
// (`node --test tests/plugin_js/plugin_test.mjs PLUGIN_DIR`). A fake `api` records what
// register() registers; "memoryd" is a small shell script that answers as memoryd would.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, existsSync, chmodSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

const pluginDir = process.env.MEMORYD_PLUGIN_DIR;
const logic = await import(pathToFileURL(join(pluginDir, "logic.js")).href);
const plugin = (await import(pathToFileURL(join(pluginDir, "index.js")).href)).default;
const readHook = await import(pathToFileURL(join(pluginDir, "read_hook.js")).href);
const searchHook = await import(pathToFileURL(join(pluginDir, "search_hook.js")).href);

function fakeMemoryd(dir, body) {
  const path = join(dir, `memoryd-${Math.random().toString(36).slice(2)}`);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

function answering(dir, doc, before = "") {
  const file = join(dir, `reply-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(doc));
  return fakeMemoryd(dir, `${before}\ncat ${file}`);
}

function fakeApi(pluginConfig) {
  const api = { pluginConfig, hooks: {}, hookOptions: {}, tools: [], commands: [], logs: [] };
  // a hook limited to some tools is kept by its matcher too ("before_tool_call:memory_get")
  api.on = (name, handler, options) => {
    const key = options?.matcher ? `${name}:${options.matcher.join(",")}` : name;
    api.hooks[key] = handler;
    api.hookOptions[key] = options;
  };
  api.registerTool = (tool) => api.tools.push(tool);
  api.registerCommand = (cmd) => api.commands.push(cmd);
  api.logger = {
    info: (m) => api.logs.push(["info", m]),
    warn: (m) => api.logs.push(["warn", m]),
    error: (m) => api.logs.push(["error", m]),
  };
  return api;
}

const dir = mkdtempSync(join(tmpdir(), "memoryd-plugin-js-"));
const hot = join(dir, "hot.md");
writeFileSync(hot, "# Deploy\n\nThursday.\n");
const injectDoc = () => ({
  chars: 40, included: ["deploy.md"], text: "## hot/deploy.md\n# Deploy\n\nThursday.\n",
  session: { agent: "main", watch: [{ path: hot, stamp: "" }] },
});

test("register() only registers: nothing runs", async () => {
  const marker = join(dir, "ran");
  const api = fakeApi({ command: fakeMemoryd(dir, `touch ${marker}`) });
  plugin.register(api);
  plugin.register(api); // it runs several times in a gateway
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(existsSync(marker), false);
  assert.deepEqual(api.tools.map((t) => t.name), ["memoryd_recall", "memoryd_recall"]);
  assert.equal(api.tools[0].catalogMode, undefined); // deferred under Tool Search (issue 35)
  assert.deepEqual(api.commands.map((c) => c.name).sort(), ["memoryd", "memoryd", "refresh", "refresh"]);
  assert.ok(api.hooks.before_prompt_build && api.hooks.agent_end && api.hooks.gateway_start);
});

test("a first turn gets the hot notes; a later turn nothing", async () => {
  const doc = injectDoc();
  doc.session.watch[0].stamp = await logic.stampOf(hot);
  const api = fakeApi({ command: answering(dir, doc) });
  plugin.register(api);
  const first = await api.hooks.before_prompt_build({ messages: [] }, { agentId: "main" });
  assert.match(first.prependContext, /Thursday/);
  assert.match(first.prependContext, /memoryd_recall/);
  const later = await api.hooks.before_prompt_build({ messages: [{ role: "user" }] }, { agentId: "main" });
  assert.equal(later, undefined);
  // a second new session reuses the answer while its stamps hold
  const again = await api.hooks.before_prompt_build({ messages: [] }, { agentId: "main" });
  assert.match(again.prependContext, /Thursday/);
  assert.match(api.logs.at(-1)[1], /unchanged since the last run/);
});

test("a broken, missing or slow memoryd: no injection, one log line, no delay", async () => {
  const cases = [
    fakeMemoryd(dir, "echo 'memoryd: config file x: invalid TOML' >&2; exit 2"),
    join(dir, "no-such-memoryd"),
    fakeMemoryd(dir, "sleep 5; echo '{}'"),
    fakeMemoryd(dir, "echo 'not json'"),
  ];
  for (const command of cases) {
    const api = fakeApi({ command, injectTimeoutMs: 300 });
    plugin.register(api);
    const t0 = Date.now();
    const out = await api.hooks.before_prompt_build({ messages: [] }, { agentId: "main" });
    const ms = Date.now() - t0;
    assert.equal(out, undefined, command);
    assert.ok(ms < 1500, `${command}: ${ms} ms`);
    const warns = api.logs.filter(([level]) => level === "warn");
    assert.equal(warns.length, 1, JSON.stringify(api.logs));
    assert.match(warns[0][1], /no hot notes injected/);
  }
});

test("a changed hot note makes memoryd run again", async () => {
  const doc = injectDoc();
  doc.session.watch[0].stamp = await logic.stampOf(hot);
  assert.equal(await logic.stillValid(doc), true);
  const later = new Date(Date.now() + 10_000);
  utimesSync(hot, later, later);
  assert.equal(await logic.stillValid(doc), false);
  assert.equal(await logic.stillValid({}), false);
});

test("the recall tool passes the words and shows what memoryd found", async () => {
  const reply = {
    tier: "archive", rotations: [{ from: "memory-archive/2026-12/memory/kayak.md", to: "memory/kayak.md", status: "done" }],
    message: "1 note found in memoryd's archive (expired, not in the tier store); restored to the workspace: memory/kayak.md.",
    shown: [{ path: "memory-archive/2026-12/memory/kayak.md", now: "memory/kayak.md", words: ["kayak"], text: "# Kayak\n\nJune." }],
  };
  const args = join(dir, "args");
  const api = fakeApi({ command: answering(dir, reply, `echo "$@" > ${args}`) });
  plugin.register(api);
  const res = await api.tools[0].execute("c1", { query: "kayak  june" });
  assert.match(res.content[0].text, /restored to the workspace/);
  assert.match(res.content[0].text, /Tell the user/); // said in the answer, not in every request
  assert.match(res.content[0].text, /== memory\/kayak.md \(was memory-archive/);
  assert.equal(res.details.shown[0].now, "memory/kayak.md");
  const { readFileSync } = await import("node:fs");
  assert.equal(readFileSync(args, "utf8").trim(), "recall --json -- kayak june");
});

test("a recall that could not move a note says why; a NUL in the query gets words, not a crash", async () => {
  const reply = {
    message: "1 note found in memoryd's archive, not brought back: a file is already at memory/boat.md",
    shown: [{ path: "memory-archive/2026-12/memory/boat.md", now: null, words: ["albatross"], text: "# Boat" }],
    rotations: [{ src: "memory-archive/2026-12/memory/boat.md", dst: "memory/boat.md", status: "failed",
      error: "memory/boat.md: already exists; memoryd never overwrites a file" }],
  };
  const api = fakeApi({ command: answering(dir, reply) });
  plugin.register(api);
  const res = await api.tools[0].execute("c1", { query: "albatross" });
  assert.match(res.content[0].text, /could not move memory-archive\/2026-12\/memory\/boat.md → memory\/boat.md: memory\/boat.md: already exists/);
  const ran = join(dir, "ran-nul");
  const api2 = fakeApi({ command: fakeMemoryd(dir, `touch ${ran}; echo '{}'`) });
  plugin.register(api2);
  const nul = await api2.tools[0].execute("c2", { query: "caf\u0000e" });
  assert.match(nul.content[0].text, /NUL character/);
  assert.doesNotMatch(nul.content[0].text, /null bytes/);
  assert.equal(existsSync(ran), false);
});

test("/memoryd says the status facts; /refresh what moved and what is nominated", async () => {
  const status = {
    daemon: { running: false }, jobs: { organize: { last_period: "2026-12-01T10", last_status: "ok", last_finished: "2026-12-01T10:05:00Z" } },
    tiers: { present: true, hot: ["deploy.md"], notes: { hot: 1, warm: 2, gist: 0, forgotten: 0 } },
    promotion: { pending: 2, generated: "2026-12-01T10:05:00Z" }, archive: { files: 3, bytes: 4096 },
  };
  const text = logic.statusReply(status);
  for (const want of ["hot notes: deploy.md", "organize ok", "pending: 2", "archive: 3 files, 4 KB"]) {
    assert.ok(text.includes(want), `${want} in ${text}`);
  }
  const refresh = {
    organize: { summary: "organize: 2 notes; 1 moved", actions: [{ op: "move", src: "hot/heron.md", dst: "warm/heron.md" }] },
    promote: { data: { candidates: [{ path: "tiers/kayak.md" }], report: "/r/promote_report.md" } },
  };
  const lines = logic.refreshReply(refresh, "session: reset").split("\n");
  assert.deepEqual(lines.slice(1), [
    "moved: hot/heron.md → warm/heron.md",
    "nominated for MEMORY.md: tiers/kayak.md (report: /r/promote_report.md)",
    "session: reset",
  ]);
});

test("settings fall back to safe defaults", () => {
  const s = logic.settingsOf({ injectTimeoutMs: -1, command: " " });
  assert.equal(s.command, "memoryd");
  assert.equal(s.injectTimeoutMs, logic.DEFAULT_INJECT_TIMEOUT_MS);
  assert.deepEqual(logic.argvFor({ config: "/c.toml" }, ["status", "--json"]), ["--config", "/c.toml", "status", "--json"]);
  assert.deepEqual(logic.wordsOf({ query: " a  b ", words: ["c d"] }), ["a", "b", "c", "d"]);
  assert.equal(logic.isFirstTurn({ messages: [] }), true);
  assert.equal(logic.isFirstTurn({}), false);
  // a session opened by the /refresh reply (an assistant note) is still at its first turn
  const note = { role: "assistant", content: [{ type: "text", text: "memoryd refresh: ..." }] };
  assert.equal(logic.isFirstTurn({ messages: [note] }), true);
  assert.equal(logic.isFirstTurn({ messages: [note, { role: "user", content: "hi" }] }), false);
});

test("a memory_get asks memoryd on-read first; other tools and calls without a path do not", async () => {
  const args = join(dir, "read-args");
  const reply = { outcome: "restored", trigger: "read", path: "memory/kayak.md", archived: "memory-archive/2026-12/memory/kayak.md" };
  const api = fakeApi({ command: answering(dir, reply, `echo "$@" >> ${args}`) });
  plugin.register(api);
  const opts = api.hookOptions["before_tool_call:memory_get"];
  assert.deepEqual(opts.matcher, ["memory_get"]);
  assert.ok(opts.timeoutMs > readHook.DEFAULT_READ_TIMEOUT_MS, "OpenClaw's budget is above ours");
  const hook = api.hooks["before_tool_call:memory_get"];
  assert.equal(await hook({ toolName: "memory_get", params: { path: "memory/kayak.md" } }, { agentId: "work" }), undefined);
  const { readFileSync } = await import("node:fs");
  assert.equal(readFileSync(args, "utf8").trim(), "on-read --json --agent=work -- memory/kayak.md");
  assert.match(api.logs.at(-1)[1], /restored on demand: read memory\/kayak.md from memory-archive/);
  // the outer Tool Search wrapper, a search, no path, a path that is no string: nothing runs
  for (const event of [
    { toolName: "tool_call", params: { id: "memory_get", args: { path: "memory/kayak.md" } } },
    { toolName: "memory_search", params: { query: "kayak" } },
    { toolName: "memory_get", params: {} },
    { toolName: "memory_get", params: { path: ["memory/kayak.md"] } },
    undefined,
  ]) {
    assert.equal(await hook(event, {}), undefined);
  }
  assert.equal(readFileSync(args, "utf8").trim().split("\n").length, 1);
  // a hostile path is passed after `--`, as data
  await hook({ toolName: "memory_get", params: { path: "--config=/etc/x" } }, {});
  assert.equal(readFileSync(args, "utf8").trim().split("\n")[1], "on-read --json -- --config=/etc/x");
});

test("a missing, broken, slow or throwing memoryd: the read goes on, one log line, in time", async () => {
  const cases = [
    fakeMemoryd(dir, "echo 'memoryd: config file x: invalid TOML' >&2; exit 2"),
    join(dir, "no-such-memoryd"),
    fakeMemoryd(dir, "sleep 5; echo '{}'"),
    fakeMemoryd(dir, "echo 'not json'"),
  ];
  for (const command of cases) {
    const api = fakeApi({ command, readTimeoutMs: 300 });
    plugin.register(api);
    const t0 = Date.now();
    const out = await api.hooks["before_tool_call:memory_get"]({ toolName: "memory_get", params: { path: "memory/a.md" } }, {});
    const ms = Date.now() - t0;
    assert.equal(out, undefined, command);
    assert.ok(ms < 1000, `${command}: ${ms} ms`);
    const warns = api.logs.filter(([level]) => level === "warn");
    assert.equal(warns.length, 1, JSON.stringify(api.logs));
    assert.match(warns[0][1], /read of memory\/a.md: no restore before it/);
  }
  // a logger that throws, and a settings object that makes spawn throw: still no decision
  const handler = readHook.beforeReadHandler({ command: 42, commandTimeoutMs: 1000 }, 300, () => { throw new Error("x"); });
  assert.equal(await handler({ toolName: "memory_get", params: { path: "memory/a.md" } }, null), undefined);
  assert.equal(readHook.readTimeoutOf({ readTimeoutMs: 10 }), readHook.DEFAULT_READ_TIMEOUT_MS);
  assert.equal(readHook.readTimeoutOf({ readTimeoutMs: 250 }), 250);
});

test("a memory_search asks memoryd on-search first; a restore is that search's answer", async () => {
  const args = join(dir, "search-args");
  const reply = {
    outcome: "restored", trigger: "search", path: "memory/kayak.md",
    archived: "memory-archive/2026-12/memory/kayak.md", opening: "# Kayak\n\nThe red kayak is at the pier.",
  };
  const api = fakeApi({ command: answering(dir, reply, `echo "$@" >> ${args}`) });
  plugin.register(api);
  const opts = api.hookOptions["before_tool_call:memory_search"];
  assert.deepEqual(opts.matcher, ["memory_search"]);
  assert.ok(opts.timeoutMs > searchHook.DEFAULT_SEARCH_TIMEOUT_MS, "OpenClaw's budget is above ours");
  const hook = api.hooks["before_tool_call:memory_search"];
  const event = { toolName: "memory_search", params: { query: " red kayak " }, toolCallId: "tool_search_code:call1:memory_search:1" };
  const out = await hook(event, { agentId: "work" });
  assert.equal(out.block, true);
  for (const want of ["memory/kayak.md back from its archive", "The red kayak is at the pier.", "memory_get memory/kayak.md"]) {
    assert.ok(out.blockReason.includes(want), `${want} in ${out.blockReason}`);
  }
  // memoryd's scanner must find no "path" key in it: on-search counted the hit already
  assert.doesNotMatch(out.blockReason, /"path"\s*:/);
  const { readFileSync } = await import("node:fs");
  // the deadline is passed on (a note restored after it is no hit of this search); ids as
  // --opt=value (one starting with "-" stays the option's value)
  assert.match(
    readFileSync(args, "utf8").trim(),
    /^on-search --json --answer-by=\d{13} --agent=work --call-id=tool_search_code:call1:memory_search:1 -- red kayak$/,
  );
  assert.match(api.logs.at(-1)[1], /restored on demand: search "red kayak" → memory\/kayak.md/);
  // the outer Tool Search wrapper, a read, no query, a query that is no string or holds a
  // NUL, an overlong one: nothing runs
  for (const e of [
    { toolName: "tool_call", params: { id: "memory_search", args: { query: "kayak" } } },
    { toolName: "memory_get", params: { path: "memory/kayak.md" } },
    { toolName: "memory_search", params: {} },
    { toolName: "memory_search", params: { query: ["kayak"] } },
    { toolName: "memory_search", params: { query: "kay\0ak" } },
    { toolName: "memory_search", params: { query: "k".repeat(5000) } },
    undefined,
  ]) {
    assert.equal(await hook(e, {}), undefined);
  }
  assert.equal(readFileSync(args, "utf8").trim().split("\n").length, 1);
  // a hostile query goes after `--`, as data
  await hook({ toolName: "memory_search", params: { query: "--config=/etc/x" } }, {});
  assert.match(readFileSync(args, "utf8").trim().split("\n")[1], /^on-search --json --answer-by=\d+ -- --config=\/etc\/x$/);
});

test("a search memoryd does not restore for runs untouched", async () => {
  const tied = { outcome: "tied", query: "kayak", paths: ["memory/a.md", "memory/b.md"] };
  for (const reply of [{ outcome: "none", query: "kayak" }, { outcome: "changed", path: "memory/kayak.md" }, { outcome: "restored" }, tied]) {
    const api = fakeApi({ command: answering(dir, reply) });
    plugin.register(api);
    const hook = api.hooks["before_tool_call:memory_search"];
    assert.equal(await hook({ toolName: "memory_search", params: { query: "kayak" } }, {}), undefined, JSON.stringify(reply));
    if (reply === tied) {
      // archived notes that match as well as each other: none restored, the search runs, said once
      assert.match(api.logs.at(-1)[1], /search "kayak": 2 archived notes match as well, none restored/);
    }
  }
});

test("a missing, broken, slow or throwing memoryd: the search goes on, one log line, in time", async () => {
  const cases = [
    fakeMemoryd(dir, "echo 'memoryd: config file x: invalid TOML' >&2; exit 2"),
    join(dir, "no-such-memoryd"),
    fakeMemoryd(dir, "sleep 5; echo '{}'"),
    fakeMemoryd(dir, "echo 'not json'"),
  ];
  for (const command of cases) {
    const api = fakeApi({ command, searchTimeoutMs: 300 });
    plugin.register(api);
    const t0 = Date.now();
    const out = await api.hooks["before_tool_call:memory_search"]({ toolName: "memory_search", params: { query: "kayak" } }, {});
    const ms = Date.now() - t0;
    assert.equal(out, undefined, command);
    assert.ok(ms < 1000, `${command}: ${ms} ms`);
    const warns = api.logs.filter(([level]) => level === "warn");
    assert.equal(warns.length, 1, JSON.stringify(api.logs));
    assert.match(warns[0][1], /search "kayak": no restore before it/);
  }
  const handler = searchHook.beforeSearchHandler({ command: 42, commandTimeoutMs: 1000 }, 300, () => { throw new Error("x"); });
  assert.equal(await handler({ toolName: "memory_search", params: { query: "kayak" } }, null), undefined);
  assert.equal(searchHook.searchTimeoutOf({ searchTimeoutMs: 10 }), searchHook.DEFAULT_SEARCH_TIMEOUT_MS);
  assert.equal(searchHook.searchTimeoutOf({ searchTimeoutMs: 250 }), 250);
  assert.equal(searchHook.restoredAnswer({ outcome: "restored", path: "" }), null);
});

// Issue 35: what every request pays for the tool. Under Tool Search OpenClaw lists a deferred
// tool as `- <name> (<plugin>): <description>` (cut past 180 characters, or 64 when the
// directory is tight); with Tool Search off it sends the schema whole.
test("the recall tool costs a request at most 200 characters under Tool Search", () => {
  const api = fakeApi({});
  plugin.register(api);
  const tool = api.tools[0];
  const line = `- ${tool.name} (memoryd): ${tool.description}\n`;
  assert.ok(line.length <= 200, `${line.length}: ${line}`);
  assert.ok(tool.description.length <= 180, "cut by OpenClaw's directory");
  for (const trigger of ["did we discuss X before", "what was the conclusion on Y"]) {
    assert.ok(tool.description.includes(trigger), trigger);
  }
  assert.match(tool.description.slice(0, 64), /did we discuss/); // a tight directory keeps it
  const schema = JSON.stringify({ type: "function", function: { name: tool.name, description: tool.description, parameters: tool.parameters } });
  assert.ok(schema.length <= 400, `Tool Search off: ${schema.length}`);
});

test("plugin.recall_tool: deferred by default, direct-only, or not registered", async () => {
  const modes = { undefined: undefined, deferred: undefined, direct: "direct-only", bogus: undefined };
  for (const [recall, catalogMode] of Object.entries(modes)) {
    const api = fakeApi(recall === "undefined" ? {} : { recall });
    plugin.register(api);
    assert.deepEqual(api.tools.map((t) => [t.name, t.catalogMode]), [["memoryd_recall", catalogMode]], recall);
  }
  const doc = injectDoc();
  doc.session.watch[0].stamp = await logic.stampOf(hot);
  const api = fakeApi({ recall: "off", command: answering(dir, doc) });
  plugin.register(api);
  assert.deepEqual(api.tools, []);
  const first = await api.hooks.before_prompt_build({ messages: [] }, { agentId: "main" });
  assert.match(first.prependContext, /Thursday/);
  assert.doesNotMatch(first.prependContext, /memoryd_recall/); // no tool to point at
});

test("/refresh says a gist is a summary copied, not a move (issue 29)", () => {
  const refresh = {
    organize: { summary: "organize: 2 notes", actions: [
      { op: "move", src: "hot/heron.md", dst: "warm/heron.md" },
      { op: "gist", src: "warm/gym-plan.md", dst: "gist/gym-plan.md" },
    ] },
    promote: { data: { candidates: [] } },
  };
  const text = logic.refreshReply(refresh, "session: reset");
  assert.match(text, /^moved: hot\/heron.md → warm\/heron.md$/m);
  assert.match(text, /^summary copied: warm\/gym-plan.md → gist\/gym-plan.md \(the note stays\)$/m);
  assert.doesNotMatch(text, /moved:.*gym-plan/);
});

test("a missing memoryd: one warning at gateway start saying how to fix it, /memoryd says so (issue 29)", async () => {
  const gone = join(dir, "gone-venv", "bin", "memoryd");
  const api = fakeApi({ command: gone });
  plugin.register(api);
  assert.deepEqual(api.logs, []); // register() checks nothing
  await api.hooks.gateway_start({}, {});
  await new Promise((r) => setTimeout(r, 200));
  const warned = api.logs.filter(([level]) => level === "warn");
  assert.equal(warned.length, 1, JSON.stringify(api.logs));
  assert.match(warned[0][1], /memoryd plugin install/);
  assert.ok(warned[0][1].includes(gone));
  // new sessions: no notes, and no second warning
  for (let i = 0; i < 3; i++) {
    assert.equal(await api.hooks.before_prompt_build({ messages: [] }, { agentId: "main" }), undefined);
  }
  assert.equal(api.logs.filter(([level]) => level === "warn").length, 1, JSON.stringify(api.logs));
  const status = await api.commands.find((c) => c.name === "memoryd").handler({});
  assert.match(status.text, /memoryd plugin install/);
});

test("a recall that could not bring the note back does not tell the agent it is back", () => {
  const failed = {
    tier: "archive",
    message: "1 note found in memoryd's archive, not brought back: a file is already at memory/boat.md",
    rotations: [{ src: "memory-archive/2026-12/memory/boat.md", dst: "memory/boat.md", status: "failed", error: "exists" }],
    shown: [],
  };
  assert.doesNotMatch(logic.recallText(failed), /Tell the user the note is back/);
  const done = { ...failed, message: "restored", rotations: [{ ...failed.rotations[0], status: "done" }] };
  assert.match(logic.recallText(done), /Tell the user the note is back/);
});

test("memoryd is run with the gateway's pid and the plugin's folder, for `memoryd status`", async () => {
  const cmd = fakeMemoryd(dir, 'printf "%s" "$MEMORYD_PLUGIN_CALLER" > "$0.caller"; echo "{}"');
  const res = await logic.runMemoryd(logic.settingsOf({ command: cmd }), ["status", "--json"], 5000);
  assert.equal(res.ok, true);
  const { readFileSync, realpathSync } = await import("node:fs");
  const caller = JSON.parse(readFileSync(`${cmd}.caller`, "utf-8"));
  assert.equal(caller.pid, process.pid);
  assert.equal(realpathSync(caller.folder), realpathSync(pluginDir));
});

test("an answer with a capped watch list (thousands of hot notes) holds for its valid_seconds only", async () => {
  const doc = injectDoc();
  doc.session.watch[0].stamp = await logic.stampOf(hot);
  doc.session.watch_partial = { notes: 5000, stamped: 200, valid_seconds: 60 };
  const fetched = Date.now();
  assert.equal(await logic.stillValid({ ...doc, fetchedAtMs: fetched }, fetched + 59_000), true);
  assert.equal(await logic.stillValid({ ...doc, fetchedAtMs: fetched }, fetched + 61_000), false);
  assert.equal(await logic.stillValid(doc, fetched), false); // when it was fetched is not known
});

test("/memoryd promote hands memoryd's task to a sub-session, then memoryd settles it", async () => {
  const handoff = { handed: true, run: "R1", agent: "main", task: "memoryd promotion run R1 ...",
    session_key: "agent:main:subagent:memoryd-promote-R1", items: [] };
  const settle = { settled: true, status: "ok", promoted: [{ source: "memory/coffee.md", dest: "MEMORY.md" }],
    declined: [], not_landed: ["memory/deploy.md"], left_for_user: [] };
  const argsLog = join(dir, "promote-args.txt");
  const h = join(dir, "handoff.json");
  const s = join(dir, "settle.json");
  writeFileSync(h, JSON.stringify(handoff));
  writeFileSync(s, JSON.stringify(settle));
  const command = fakeMemoryd(dir, `echo "$@" >> ${argsLog}\ncase "$*" in *--handoff*) cat ${h};; *) cat ${s};; esac`);
  const api = fakeApi({ command });
  const runs = [];
  api.runtime = { subagent: {
    run: async (p) => { runs.push(p); return { runId: "run-1", sessionKey: p.sessionKey }; },
    waitForRun: async () => ({ status: "ok" }),
    getSessionMessages: async () => ({ messages: [{ role: "assistant", content: [{ type: "text", text: "Filed coffee." }] }] }),
  } };
  plugin.register(api);
  const cmd = api.commands.find((c) => c.name === "memoryd");
  const reply = await cmd.handler({ args: "promote", sessionKey: "agent:main:s1" });
  assert.equal(runs.length, 1);
  assert.equal(runs[0].message, handoff.task);
  assert.equal(runs[0].sessionKey, handoff.session_key);
  assert.equal(runs[0].deliver, false);
  const lines = reply.text.split("\n");
  assert.equal(lines[1], "promoted (checked by memoryd): memory/coffee.md → MEMORY.md");
  assert.ok(reply.text.includes("not filed, still nominated: memory/deploy.md"), reply.text);
  assert.ok(reply.text.includes("sub-session said: Filed coffee."), reply.text);
  const { readFileSync } = await import("node:fs");
  const calls = readFileSync(argsLog, "utf8").trim().split("\n");
  assert.deepEqual(calls, ["promote --handoff --json --timeout 180 --agent main",
    "promote --settle R1 --status ok --json"]);
  // a run that throws is settled as failed: memoryd, not the plugin, says what landed
  api.runtime.subagent.run = async () => { throw new Error("no gateway"); };
  await cmd.handler({ args: "promote", sessionKey: "agent:main:s1" });
  assert.ok(readFileSync(argsLog, "utf8").trim().endsWith("promote --settle R1 --status error --json"));
  // a wait that fails on its way is waited again: the run settles as it ended
  let waits = 0;
  api.runtime.subagent.run = async (p) => ({ runId: "run-2", sessionKey: p.sessionKey });
  api.runtime.subagent.waitForRun = async () => (++waits === 1
    ? { status: "error", retryableTransportError: true } : { status: "ok" });
  await cmd.handler({ args: "promote", sessionKey: "agent:main:s1" });
  assert.equal(waits, 2);
  assert.ok(readFileSync(argsLog, "utf8").trim().endsWith("promote --settle R1 --status ok --json"));
  // and once the run's time is up with the wait still failing: "unknown" (memoryd settles
  // what landed), never "error" early
  const quick = fakeApi({ command, promoteTimeoutMs: 1 });
  quick.runtime = { subagent: { ...api.runtime.subagent,
    waitForRun: async () => { await new Promise((r) => setTimeout(r, 5));
      return { status: "error", retryableTransportError: true }; } } };
  plugin.register(quick);
  await quick.commands.find((c) => c.name === "memoryd").handler({ args: "promote", sessionKey: "agent:main:s1" });
  assert.ok(readFileSync(argsLog, "utf8").trim().endsWith("promote --settle R1 --status unknown --json"));
  assert.equal(logic.agentOf({ sessionKey: "agent:ops:x" }), "ops");
  const status = logic.statusReply({ promotion: { pending: 1, generated: "g",
    last_run: { promoted: 2, settled: "2026-12-02T16:23:28Z", state: "settled" } } });
  assert.ok(status.includes("last filed by a sub-session: 2 promoted (2026-12-02T16:23:28Z)"), status);
});
