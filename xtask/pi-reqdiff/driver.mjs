// The pi side of `cargo xtask pi-reqdiff`: every case of a cases file through pi-ai 1.6.0's
// `compat` entry point (`getModel`, `streamSimple`), each model's base URL pointed at the
// xtask's recording server. The server answers every request with a final 400, so each case
// sends exactly one request; this script only has to start the stream and drain it.
//
//   node driver.mjs <install-dir> <cases.json> <server-url> <out.jsonl>
//
// A case is {id, provider, model, baseUrl, context, options, piOnly} (see xtask/src/pi_reqdiff/cases.rs):
// `baseUrl` is the model's own base URL with its scheme and host already replaced by
// `<server-url>/pi/<id>`, `context` is pi's context JSON, `options` are `streamSimple` options
// (oxpi gets the same), `piOnly` more options for pi alone (its Bedrock client's HTTP/1.1 switch).
// Writes one line per case: {id, error} (pi's error message, or null when the stream ended
// without one), or {id, thrown} when pi threw before streaming.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [installDir, casesFile, serverUrl, outFile] = process.argv.slice(2);
if (!installDir || !casesFile || !serverUrl || !outFile) {
  throw new Error("usage: node driver.mjs <install-dir> <cases.json> <server-url> <out.jsonl>");
}
const compat = await import(
  pathToFileURL(join(installDir, "node_modules", "@earendil-works", "pi-ai", "dist", "compat.js")).href
);
const cases = JSON.parse(readFileSync(casesFile, "utf8"));

async function runCase(c) {
  const found = compat.getModel(c.provider, c.model);
  if (!found) return { id: c.id, thrown: `pi has no model ${c.provider}/${c.model}` };
  const model = { ...found, baseUrl: c.baseUrl.replace("{server}", `${serverUrl}/pi/${c.id}`) };
  const options = { ...c.options, ...(c.piOnly ?? {}), maxRetries: 0, timeoutMs: 30000 };
  try {
    const stream = compat.streamSimple(model, c.context, options);
    let error = null;
    for await (const event of stream) {
      if (event.type === "error") error = event.error?.errorMessage ?? "error";
    }
    return { id: c.id, error };
  } catch (err) {
    return { id: c.id, thrown: String(err?.stack ?? err) };
  }
}

const results = new Array(cases.length);
let next = 0;
async function worker() {
  while (next < cases.length) {
    const i = next++;
    results[i] = await runCase(cases[i]);
  }
}
await Promise.all(Array.from({ length: 16 }, worker));
writeFileSync(outFile, results.map((r) => JSON.stringify(r)).join("\n") + "\n");
// Lingering keep-alive sockets or SDK timers must not hold the process.
process.exit(0);
