// The pi half of the session-load side-by-side (issue 46.14): pi-coding-agent 1.6's own
// SessionManager writes a long session, then opens it and builds its context, timed, with the
// process's peak resident memory, and the CPU time (user + system) of each step.
//
//   node session_load.mjs <install-dir> write <session-dir> <entries>   -> {"file", "bytes"}
//   node session_load.mjs <install-dir> load <file>                     -> {"open_ms", ...}
//
// The session written: turns of a user prompt, an assistant reply with text and a tool call,
// and the tool's result, about 440 bytes an entry on average (50,000 entries ≈ 22 MB).
const [prefix, command, ...rest] = process.argv.slice(2);
const { SessionManager } = await import(
  `${prefix}/node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js`
);

const usage = {
  input: 1200, output: 80, cacheRead: 0, cacheWrite: 0, totalTokens: 1280,
  cost: { input: 0.001, output: 0.0002, cacheRead: 0, cacheWrite: 0, total: 0.0012 },
};

function write(dir, count) {
  const session = SessionManager.create(process.cwd(), dir);
  let n = 0;
  let t = 1_700_000_000_000;
  while (n < count) {
    const k = n;
    session.appendMessage({ role: "user", content: `Question ${k}: what does file src/module_${k % 97}.rs do, and how does it relate to the others?`, timestamp: t++ });
    n++;
    if (n >= count) break;
    session.appendMessage({
      role: "assistant",
      content: [
        { type: "text", text: `Let me read src/module_${k % 97}.rs to answer that.` },
        { type: "toolCall", id: `call_${k}`, name: "read", arguments: { path: `src/module_${k % 97}.rs` } },
      ],
      api: "openai-completions", provider: "openai", model: "gpt-4o-mini", usage,
      stopReason: "toolUse", timestamp: t++,
    });
    n++;
    if (n >= count) break;
    session.appendMessage({
      role: "toolResult", toolCallId: `call_${k}`, toolName: "read",
      content: [{ type: "text", text: `pub fn run_${k}() -> u32 {\n    // module ${k}\n    ${k}\n}\n`.repeat(2) }],
      isError: false, timestamp: t++,
    });
    n++;
  }
  return session.getSessionFile();
}

if (command === "write") {
  const [dir, count] = rest;
  const file = write(dir, Number(count));
  const { statSync } = await import("node:fs");
  console.log(JSON.stringify({ file, bytes: statSync(file).size }));
} else if (command === "load") {
  const [file] = rest;
  const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
  const t0 = performance.now();
  const c0 = cpu();
  const session = SessionManager.open(file);
  const t1 = performance.now();
  const c1 = cpu();
  const context = session.buildSessionContext();
  const t2 = performance.now();
  const c2 = cpu();
  const file_bytes = (await import("node:fs")).statSync(file).size;
  const peak_rss_kib = process.resourceUsage().maxRSS;
  // `cargo xtask bench` reads the shape oxpi-bench prints; the flat fields are for people.
  console.log(JSON.stringify({
    status: "ok",
    peak_rss_kib,
    rss_before_kib: 0,
    extra: {
      open_ms: t1 - t0, context_ms: t2 - t1, open_cpu_ms: c1 - c0, context_cpu_ms: c2 - c1,
      entries: session.getEntries().length, messages: context.messages.length, file_bytes,
    },
    open_ms: t1 - t0,
    context_ms: t2 - t1,
    open_cpu_ms: c1 - c0,
    context_cpu_ms: c2 - c1,
    wall_ms: t2 - t0,
    cpu_ms: c2 - c0,
    entries: session.getEntries().length,
    messages: context.messages.length,
    peak_rss_mib: process.resourceUsage().maxRSS / 1024,
  }));
} else {
  console.error("usage: session_load.mjs <install-dir> write <dir> <entries> | load <file>");
  process.exit(2);
}
