// pi-ai 1.6.0's own pi-messages client, for crates/ai/tests/pi_messages.rs: it sends one
// request to the test's server and prints the final message, so the test compares what pi sends
// and builds with what oxpi sends and builds, from the same stream.
//
//   node pi_messages.mjs <install-dir> <base-url> <input.json>
//
// <input.json>: { model, context, options } as the test gives them to oxpi (context in pi's
// Context shape; options: apiKey, temperature, maxTokens, sessionId, reasoning, toolChoice).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [installDir, baseUrl, inputPath] = process.argv.slice(2);
if (!inputPath) throw new Error("usage: node pi_messages.mjs <install-dir> <base-url> <input.json>");
const file = (...parts) => pathToFileURL(join(installDir, "node_modules", "@earendil-works", ...parts)).href;
const api = await import(file("pi-ai", "dist", "api", "pi-messages.js"));
const transcript = await import(file("pi-ai", "dist", "utils", "transcript.js"));
const input = JSON.parse(readFileSync(inputPath, "utf8"));
const model = { ...input.model, baseUrl };
const stream = api.stream(model, transcript.normalizeContext(input.context), input.options);
const message = await stream.result();
process.stdout.write(JSON.stringify(message));
