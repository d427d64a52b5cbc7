// The pi-ai / pi-agent-core / pi-coding-agent (TypeScript, 1.6.0) side of `cargo xtask bench`.
//
//   node driver.mjs <install-dir> stream <origin> <kind> <size>
//   node driver.mjs <install-dir> agent-loop <turns>
//   node driver.mjs <install-dir> agents <count>
//   node driver.mjs <install-dir> tool <grep|find> <root-dir> <json-args>
//
// <install-dir> is where the xtask ran `npm install` (it holds node_modules/@earendil-works/…;
// `tool` needs @earendil-works/pi-coding-agent there besides pi-ai and pi-agent-core; pi 1.6
// needs Node 22 or newer). `agents` starts <count> agents at once on one faux provider, each
// answering one prompt with a short text, all kept until every one has answered.
// Prints one JSON line shaped like the Rust bench programs' reports: status, wall_ms, cpu_ms
// (process.cpuUsage, user + system, all threads), peak_rss_kib (resourceUsage().maxRSS),
// rss_before_kib, extra. Timing covers the call to stream() (or prompt(), or the tool's
// execute()) until the last event or the result, after the modules are loaded, exactly as on the
// Rust side. `tool` runs pi's grep or find tool once with cwd = <root-dir> and the parsed
// <json-args> (e.g. '{"pattern":"needle","literal":true}'); extra.lines counts the output lines
// before pi's trailing "[...]" notice.

import { accessSync, chmodSync, constants, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const [installDir, command, ...rest] = process.argv.slice(2);

// `load("pi-ai")` is @earendil-works/pi-ai's main entry point; `load("pi-ai", "compat.js")` its
// `compat` entry, which keeps the free `stream()` that dispatches on model.api.
function load(name, file = "index.js") {
  const entry = join(installDir, "node_modules", "@earendil-works", name, "dist", file);
  return import(pathToFileURL(entry).href);
}

// A faux provider on its own Models registry (pi 1.6's way) with 4-token (16-character) deltas,
// as oxpi's faux provider is run with 16-character chunks; and the streamFn an Agent uses.
function fauxModels(ai) {
  const faux = ai.fauxProvider({ api: "faux", provider: "faux", tokenSize: { min: 4, max: 4 } });
  const models = ai.createModels();
  models.setProvider(faux.provider);
  return { faux, streamFn: models.streamSimple.bind(models) };
}

function span() {
  const rssBefore = Math.round(process.memoryUsage().rss / 1024);
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  return {
    elapsed: () => performance.now() - t0,
    finish() {
      const wall = performance.now() - t0;
      const used = process.cpuUsage(cpu);
      return {
        wall_ms: wall,
        cpu_ms: (used.user + used.system) / 1000,
        peak_rss_kib: process.resourceUsage().maxRSS,
        rss_before_kib: rssBefore,
      };
    },
  };
}

function report(status, figures, extra, note) {
  const line = { status };
  if (note) line.note = note;
  Object.assign(line, figures ?? {});
  if (extra) line.extra = extra;
  console.log(JSON.stringify(line));
  process.exitCode = status === "failed" ? 1 : 0;
}

async function stream([origin, kind, sizeText]) {
  const size = Number(sizeText);
  const { stream } = await load("pi-ai", "compat.js");
  const anthropic = kind.startsWith("anthropic");
  const model = {
    id: "bench-model",
    name: "bench-model",
    api: anthropic ? "anthropic-messages" : "openai-completions",
    provider: anthropic ? "anthropic" : "bench",
    baseUrl: `${origin}/${kind}/${size}`,
    reasoning: false,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128000,
    maxTokens: 4096,
  };
  const context = {
    systemPrompt: "You are a benchmark.",
    messages: [{ role: "user", content: "Write the file.", timestamp: Date.now() }],
    tools: [
      {
        name: "write",
        description: "Write a file",
        parameters: {
          type: "object",
          properties: { path: { type: "string" }, content: { type: "string" } },
          required: ["path", "content"],
        },
      },
    ],
  };

  const s = span();
  const events = stream(model, context, { apiKey: "bench-key", maxRetries: 0 });
  let count = 0;
  let deltaBytes = 0;
  let firstEvent = 0;
  let last;
  for await (const event of events) {
    if (count === 0) firstEvent = s.elapsed();
    count++;
    if (event.type === "text_delta" || event.type === "toolcall_delta") deltaBytes += event.delta.length;
    else if (event.type === "done") last = event.message;
    else if (event.type === "error") last = event.error;
  }
  const figures = s.finish();

  if (!last) return report("failed", null, null, "the stream ended without done or error");
  if (last.stopReason === "error" || last.stopReason === "aborted") {
    return report("failed", null, null, `the stream ended in error: ${last.errorMessage}`);
  }
  // The expected content comes from the server, so it is the same bytes the Rust side checks.
  const expected = await (await fetch(`${origin}/${kind}/${size}/expected`)).text();
  if (kind === "openai-text") {
    const text = last.content.filter((c) => c.type === "text").map((c) => c.text).join("");
    if (text !== expected) return report("failed", null, null, `text differs (${text.length} chars received)`);
  } else {
    const call = last.content.find((c) => c.type === "toolCall");
    if (!call || call.name !== "write") return report("failed", null, null, "no write tool call in the final message");
    if (JSON.stringify(call.arguments) !== JSON.stringify(JSON.parse(expected))) {
      return report("failed", null, null, "arguments differ from what was sent");
    }
  }
  report("ok", figures, { events: count, delta_bytes: deltaBytes, first_event_ms: firstEvent });
}

function median(values) {
  const v = [...values].sort((a, b) => a - b);
  const n = v.length;
  if (n === 0) return 0;
  return n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

async function agentLoop([turnsText]) {
  const turns = Math.max(20, Number(turnsText ?? 500));
  const ai = await load("pi-ai");
  const core = await load("pi-agent-core");
  const { faux, streamFn } = fauxModels(ai);
  const responses = [];
  for (let turn = 1; turn <= turns; turn++) {
    responses.push(
      ai.fauxAssistantMessage(ai.fauxToolCall("noop", { turn }, { id: `call_${turn}` }), { stopReason: "toolUse" }),
    );
  }
  responses.push(ai.fauxAssistantMessage("done"));
  faux.setResponses(responses);
  const noop = {
    name: "noop",
    label: "noop",
    description: "Does nothing",
    parameters: {
      type: "object",
      properties: { turn: { type: "number", description: "The turn number." } },
      required: ["turn"],
    },
    execute: async () => ({ content: [{ type: "text", text: "ok" }], details: {} }),
  };
  const agent = new core.Agent({
    initialState: { model: faux.getModel(), systemPrompt: "You are a benchmark.", tools: [noop] },
    streamFn,
  });
  const starts = [];
  agent.subscribe((event) => {
    if (event.type === "turn_start") starts.push(performance.now());
  });

  const s = span();
  await agent.prompt("Go.");
  const figures = s.finish();

  // pi 1.6 keeps its system message in the history; it is not a turn's message.
  const messages = agent.state.messages.filter((m) => m.role !== "system").length;
  if (agent.state.errorMessage) return report("failed", null, null, `the run failed: ${agent.state.errorMessage}`);
  if (messages !== 1 + 2 * turns + 1) {
    return report("failed", null, null, `${messages} messages in the history, expected ${1 + 2 * turns + 1}`);
  }
  // durations[k - 1] is turn k: from its turn_start to the next turn's.
  const durations = starts.slice(1).map((t, i) => (t - starts[i]) * 1000);
  if (durations.length < turns) return report("failed", null, null, `${durations.length} turns measured`);
  report("ok", figures, {
    turns,
    turn10_us: median(durations.slice(5, 15)),
    turn_last_us: median(durations.slice(turns - 10, turns)),
    requests: faux.state.callCount,
  });
}

async function agents([countText]) {
  const count = Math.max(1, Number(countText ?? 1000));
  const ai = await load("pi-ai");
  const core = await load("pi-agent-core");
  const { faux, streamFn } = fauxModels(ai);
  faux.setResponses(Array.from({ length: count }, () => ai.fauxAssistantMessage("Done: the answer is short.")));

  const s = span();
  const all = [];
  const runs = [];
  for (let i = 0; i < count; i++) {
    const agent = new core.Agent({
      initialState: { model: faux.getModel(), systemPrompt: "You are a benchmark." },
      streamFn,
    });
    all.push(agent);
    runs.push(agent.prompt(`Agent ${i}: go.`));
  }
  await Promise.all(runs);
  const figures = s.finish();

  const answered = all.filter(
    (a) => !a.state.errorMessage && a.state.messages.some((m) => m.role === "assistant"),
  ).length;
  if (answered !== count) return report("failed", null, null, `${answered} of ${count} agents answered`);
  report("ok", figures, {
    agents: count,
    rss_per_agent_kib: (figures.peak_rss_kib - figures.rss_before_kib) / count,
  });
}

// pi's grep spawns `rg` and its find spawns `fd`, looked up (tools-manager.js) first in
// <agent-dir>/bin, then on PATH under the names `fd` or `fdfind`, and otherwise downloaded.
// Debian names the binary `fdfind`, and its fd 8.6 rejects `--no-require-git`, which pi
// always passes (fd >= 8.7 knows it). So a temporary directory prepended to PATH holds `fd`, a
// wrapper script that drops that one flag and execs fdfind (it costs one /bin/sh start per call;
// the flag only matters outside a git repository, and the bench tree is one). The agent dir is
// pointed at that directory too, so no ~/.pi/agent/bin binary is picked up, and PI_OFFLINE stops
// any download attempt (the machine has no internet). All of this happens before pi is loaded,
// since tools-manager.js reads the agent dir when it is imported.
function prepareToolBinaries() {
  const dir = mkdtempSync(join(tmpdir(), "oxpi-bench-pi-tools-"));
  const fdfind = process.env.PATH.split(delimiter)
    .map((d) => join(d, "fdfind"))
    .find((candidate) => {
      try {
        accessSync(candidate, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  if (fdfind) {
    const wrapper = join(dir, "fd");
    writeFileSync(
      wrapper,
      [
        "#!/bin/sh",
        "# Written by bench/node/driver.mjs: fd 8.6 (Debian's fdfind) rejects --no-require-git.",
        'for a do shift; [ "$a" = --no-require-git ] || set -- "$@" "$a"; done',
        `exec '${fdfind}' "$@"`,
        "",
      ].join("\n"),
    );
    chmodSync(wrapper, 0o755);
  }
  process.env.PATH = `${dir}${delimiter}${process.env.PATH}`;
  process.env.PI_CODING_AGENT_DIR = dir;
  process.env.PI_OFFLINE = "1";
  return dir;
}

async function tool([name, root, argsJson]) {
  if (name !== "grep" && name !== "find") return report("failed", null, null, `unknown tool ${name}`);
  const args = JSON.parse(argsJson ?? "{}");
  const dir = prepareToolBinaries();
  try {
    const pi = await load("pi-coding-agent");
    const definition =
      name === "grep" ? pi.createGrepToolDefinition(root) : pi.createFindToolDefinition(root);

    const s = span();
    let result;
    try {
      result = await definition.execute(`bench_${name}`, args, undefined, undefined, undefined);
    } catch (error) {
      return report("failed", null, null, `${name} threw: ${error?.message ?? error}`);
    }
    const figures = s.finish();

    const text = (result?.content ?? [])
      .filter((c) => c.type === "text")
      .map((c) => c.text)
      .join("");
    if (result?.isError) return report("failed", null, null, `${name} returned an error: ${text}`);
    // pi appends notices (limits reached, truncation) after a blank line as "\n\n[...]".
    const end = text.indexOf("\n\n[");
    const body = end === -1 ? text : text.slice(0, end);
    // "No matches found" / "No files found matching pattern" are pi's empty results, not paths.
    const empty = body === "No matches found" || body === "No files found matching pattern";
    const lines = empty || body === "" ? 0 : body.split("\n").length;
    report("ok", figures, { lines, chars: text.length, notice: end !== -1 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  if (command === "stream") await stream(rest);
  else if (command === "agent-loop") await agentLoop(rest);
  else if (command === "agents") await agents(rest);
  else if (command === "tool") await tool(rest);
  else report("failed", null, null, `unknown command ${command}`);
} catch (error) {
  report("failed", null, null, String(error?.stack ?? error));
}
