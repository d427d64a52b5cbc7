// Writes pi-ai 1.6's model catalogue (`@earendil-works/pi-ai/compat`: getProviders / getModels,
// the static built-in list of chat models) as oxpi's data file: crates/ai/data/models.json. Run by
// `cargo xtask models`.
//
//   node models.mjs <install-dir>   (prints the file)
//
// Every chat model of every provider, one model per line in pi's own JSON shape, sorted by
// provider then id. `counts` is the number of models per provider and `apis` per wire API,
// counted here from pi's lists independently of the array, so crates/ai/tests/catalogue.rs can
// check that oxpi loads every one.

import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { readFileSync } from "node:fs";

const [installDir] = process.argv.slice(2);
if (!installDir) throw new Error("usage: node models.mjs <install-dir>");
const root = join(installDir, "node_modules", "@earendil-works", "pi-ai");
const compat = await import(pathToFileURL(join(root, "dist", "compat.js")).href);
const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;

const counts = {};
const apis = {};
const models = [];
for (const provider of [...compat.getProviders()].sort()) {
  for (const model of compat.getModels(provider)) {
    counts[provider] = (counts[provider] ?? 0) + 1;
    apis[model.api] = (apis[model.api] ?? 0) + 1;
    models.push(model);
  }
}
const byKey = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
models.sort((a, b) => (a.provider === b.provider ? byKey(a.id, b.id) : byKey(a.provider, b.provider)));

const lines = [];
lines.push("{");
lines.push(`"source": ${JSON.stringify(`@earendil-works/pi-ai ${version} (compat getProviders/getModels)`)},`);
lines.push(`"counts": ${JSON.stringify(counts)},`);
lines.push(`"apis": ${JSON.stringify(Object.fromEntries(Object.entries(apis).sort(([a], [b]) => byKey(a, b))))},`);
lines.push(`"models": [`);
lines.push(models.map((m) => JSON.stringify(m)).join(",\n"));
lines.push("]");
lines.push("}");
process.stdout.write(lines.join("\n") + "\n");
