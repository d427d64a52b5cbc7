// Replays recorded provider responses through pi-ai (TypeScript, 0.73.1 or 1.6.0), the reference
// side of oxpi's replay comparison.
//
//   node replay.mjs <install-dir> <manifest.jsonl> [0.73|1.6]
//
// <install-dir> is where `npm install` put node_modules/@mariozechner/pi-ai (pi 0.73, the default)
// or node_modules/@earendil-works/pi-ai (pi 1.6, whose `compat` entry point keeps the free
// `stream()` that dispatches on model.api). Each manifest line is
// {"id", "api", "provider", "model", "sse": <path of a recorded response body>, "status", "headers"}.
// One local HTTP server answers any request under /<i>/ (i = 0-based line index) with exchange i's
// recorded status, headers and body bytes. The exchanges run one after another through pi-ai's
// stream(); for each one a JSON line goes to stdout, in manifest order:
// {id, stopReason, errorMessage, text, thinking, toolCalls: [{name, arguments, argumentsError?}],
// usage}.
// A throw gives stopReason "exception", a run over 20 s gives "timeout". Diagnostics go to stderr.

import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [installDir, manifestPath, piVersion = "0.73"] = process.argv.slice(2);
// The module that exports `stream(model, context, options)`, per pi version.
const ENTRY = {
  "0.73": ["@mariozechner", "pi-ai", "dist", "index.js"],
  "1.6": ["@earendil-works", "pi-ai", "dist", "compat.js"],
};
const TIMEOUT_MS = 20_000;
// Framing headers of the recorded response: the body is sent as recorded (already decoded), so
// these would lie about it; Node frames the response itself.
const DROPPED_HEADERS = new Set(["content-length", "transfer-encoding", "content-encoding", "connection"]);

function load(version) {
  const parts = ENTRY[version];
  if (!parts) throw new Error(`unknown pi version ${version} (expected ${Object.keys(ENTRY).join(" or ")})`);
  return import(pathToFileURL(join(installDir, "node_modules", ...parts)).href);
}

function log(...parts) {
  console.error("[replay]", ...parts);
}

// A line that does not parse still takes its place (and index), and fails on its own.
function readManifest(path) {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line, n) => {
      try {
        return JSON.parse(line);
      } catch (error) {
        log(`manifest line ${n + 1} does not parse: ${error.message}`);
        return { id: `line-${n + 1}`, invalid: `manifest line does not parse: ${error.message}` };
      }
    });
}

// Serves exchange i under /<i>/; counts the requests each exchange received.
function startServer(exchanges) {
  const hits = exchanges.map(() => 0);
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const bodyBytes = chunks.reduce((n, c) => n + c.length, 0);
      const match = /^\/(\d+)\//.exec(req.url ?? "");
      const index = match ? Number(match[1]) : -1;
      const exchange = exchanges[index];
      if (!exchange) {
        log(`unmatched ${req.method} ${req.url} (${bodyBytes} request bytes)`);
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no exchange for ${req.url}` } }));
        return;
      }
      hits[index]++;
      log(`#${index} ${req.method} ${req.url} (${bodyBytes} request bytes)`);
      let body;
      try {
        body = readFileSync(exchange.sse);
      } catch (error) {
        log(`#${index} cannot read ${exchange.sse}: ${error.message}`);
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(`cannot read the recorded body: ${error.message}`);
        return;
      }
      res.statusCode = exchange.status ?? 200;
      for (const [name, value] of Object.entries(exchange.headers ?? {})) {
        if (DROPPED_HEADERS.has(name.toLowerCase())) continue;
        try {
          res.setHeader(name, value);
        } catch (error) {
          log(`#${index} skipped header ${name}: ${error.message}`);
        }
      }
      res.setHeader("content-length", body.length);
      res.end(body);
    });
    req.on("error", (error) => log(`request error on ${req.url}: ${error.message}`));
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ server, origin: `http://127.0.0.1:${port}`, hits });
    });
  });
}

// Where each SDK sends its request, given model.baseUrl:
// - openai-completions / openai-responses: the openai SDK posts to `${baseURL}/chat/completions`
//   or `${baseURL}/responses` (pi passes baseURL: model.baseUrl).
// - anthropic-messages: the Anthropic SDK posts to `${baseURL}/v1/messages`.
// - google-generative-ai: pi sets httpOptions {baseUrl: model.baseUrl, apiVersion: ""}, so
//   @google/genai posts to `${baseUrl}/models/<id>:streamGenerateContent?alt=sse`.
// So the suffixes below reproduce the recorded paths under the /<i> prefix.
function baseUrlFor(api, origin, index) {
  const prefix = `${origin}/${index}`;
  switch (api) {
    case "openai-completions":
    case "openai-responses":
      return `${prefix}/v1`;
    case "anthropic-messages":
      return prefix;
    case "google-generative-ai":
      return `${prefix}/v1beta`;
    default:
      return `${prefix}/v1`;
  }
}

function buildModel(exchange, baseUrl) {
  return {
    id: exchange.model,
    name: exchange.model,
    api: exchange.api,
    provider: exchange.provider,
    baseUrl,
    reasoning: false,
    input: ["text", "image"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128000,
    maxTokens: 4096,
  };
}

function zeroUsage() {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 };
}

function failure(id, stopReason, errorMessage) {
  return { id, stopReason, errorMessage, text: "", thinking: "", toolCalls: [], usage: zeroUsage() };
}

function summarize(id, message) {
  const content = Array.isArray(message.content) ? message.content : [];
  const usage = message.usage ?? {};
  return {
    id,
    stopReason: message.stopReason ?? null,
    errorMessage: message.errorMessage ?? null,
    text: content.filter((c) => c.type === "text").map((c) => c.text).join(""),
    thinking: content.filter((c) => c.type === "thinking").map((c) => c.thinking).join(""),
    // pi 1.6 marks arguments it could not parse (`argumentsError`, as oxpi); 0.73.1 never does.
    toolCalls: content
      .filter((c) => c.type === "toolCall")
      .map((c) => (c.argumentsError ? { name: c.name, arguments: c.arguments, argumentsError: true } : { name: c.name, arguments: c.arguments })),
    usage: {
      input: usage.input ?? 0,
      output: usage.output ?? 0,
      cacheRead: usage.cacheRead ?? 0,
      cacheWrite: usage.cacheWrite ?? 0,
      totalTokens: usage.totalTokens ?? 0,
    },
  };
}

// Runs one exchange through pi-ai's stream() and consumes every event; resolves to the final
// AssistantMessage (from the done or error event).
async function consume(stream, model, signal) {
  const context = {
    systemPrompt: "replay",
    messages: [{ role: "user", content: "replay", timestamp: Date.now() }],
  };
  // maxRetries 0: a recorded 4xx/5xx must not be retried (the openai and Anthropic SDKs retry
  // twice by default); the key is passed so no provider looks at the environment for one.
  const events = stream(model, context, { apiKey: "test-key", maxRetries: 0, signal });
  let final;
  for await (const event of events) {
    if (event.type === "done") final = event.message;
    else if (event.type === "error") final = event.error;
  }
  if (!final) throw new Error("the stream ended without a done or error event");
  return final;
}

async function runExchange(stream, exchange, index, origin) {
  const id = exchange.id;
  const controller = new AbortController();
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve(failure(id, "timeout", `no final message after ${TIMEOUT_MS} ms`));
    }, TIMEOUT_MS);
  });
  const run = (async () => {
    try {
      if (exchange.invalid) throw new Error(exchange.invalid);
      const model = buildModel(exchange, baseUrlFor(exchange.api, origin, index));
      return summarize(id, await consume(stream, model, controller.signal));
    } catch (error) {
      return failure(id, "exception", String(error?.message ?? error));
    }
  })();
  try {
    return await Promise.race([run, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function main() {
  if (!installDir || !manifestPath) {
    console.error("usage: node replay.mjs <install-dir> <manifest.jsonl> [0.73|1.6]");
    process.exit(2);
  }
  const exchanges = readManifest(manifestPath);
  const { stream } = await load(piVersion);
  const { server, origin, hits } = await startServer(exchanges);
  log(`serving ${exchanges.length} exchanges at ${origin}`);
  for (const [index, exchange] of exchanges.entries()) {
    const line = await runExchange(stream, exchange, index, origin);
    if (hits[index] === 0) log(`#${index} (${exchange.id}) never reached the server`);
    console.log(JSON.stringify(line));
  }
  server.closeAllConnections();
  server.close();
  // A timed-out exchange may still hold a socket or timer; every exchange has been attempted.
  process.exit(0);
}

process.on("unhandledRejection", (error) => log("unhandled rejection:", error?.stack ?? error));

try {
  await main();
} catch (error) {
  log(String(error?.stack ?? error));
  process.exit(1);
}
