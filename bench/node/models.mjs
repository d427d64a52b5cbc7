// Writes pi-ai's model catalogue (0.73.1, dist/models.generated.js through getProviders /
// getModels) as oxpi's data file: crates/ai/data/models.json. Run by `cargo xtask models`.
//
//   node models.mjs <install-dir>   (prints the file)
//
// Every model of every API except `openai-codex-responses` (ChatGPT login; oxpi has no such
// provider), one model per line in pi's own JSON shape, sorted by provider then id. `counts` is
// the number of models per provider, counted here from pi's lists independently of the array, so
// crates/ai/tests/catalogue.rs can check that oxpi loads every one.

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [installDir] = process.argv.slice(2);
const root = join(installDir, "node_modules", "@mariozechner", "pi-ai");
const ai = await import(pathToFileURL(join(root, "dist", "index.js")).href);
const { readFileSync } = await import("node:fs");
const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;

const EXCLUDED_API = "openai-codex-responses";
const counts = {};
const excluded = {};
const models = [];
for (const provider of [...ai.getProviders()].sort()) {
  for (const model of ai.getModels(provider)) {
    if (model.api === EXCLUDED_API) {
      excluded[provider] = (excluded[provider] ?? 0) + 1;
      continue;
    }
    counts[provider] = (counts[provider] ?? 0) + 1;
    models.push(model);
  }
}
models.sort((a, b) => (a.provider === b.provider ? (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) : a.provider < b.provider ? -1 : 1));

const lines = [];
lines.push("{");
lines.push(`"source": ${JSON.stringify(`@mariozechner/pi-ai ${version} (getProviders/getModels)`)},`);
lines.push(`"excluded": ${JSON.stringify({ api: EXCLUDED_API, models: excluded })},`);
lines.push(`"counts": ${JSON.stringify(counts)},`);
lines.push(`"models": [`);
lines.push(models.map((m) => JSON.stringify(m)).join(",\n"));
lines.push("]");
lines.push("}");
process.stdout.write(lines.join("\n") + "\n");
