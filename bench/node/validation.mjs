// Validates tool-call arguments with pi-ai (TypeScript, 0.73.1), the reference for oxpi's
// validation texts (fixtures/pi/validation.json).
//
//   node validation.mjs <install-dir> <cases.json>
//
// <install-dir> is where `npm install` put node_modules/@mariozechner/pi-ai. <cases.json> is an
// array of {name, schema, arguments}. Prints the same array as JSON with `pi` added to each case:
// {"ok": <the arguments pi returns>} or {"error": <the error text pi throws>}. Other fields of a
// case (`oxpi` and `why`, where oxpi answers differently on purpose) are kept, so the fixture is
// regenerated with: node validation.mjs <install-dir> ../../fixtures/pi/validation.json > new.json

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [installDir, casesPath] = process.argv.slice(2);
const entry = join(installDir, "node_modules", "@mariozechner", "pi-ai", "dist", "index.js");
const { validateToolArguments } = await import(pathToFileURL(entry).href);

const cases = JSON.parse(readFileSync(casesPath, "utf8"));
for (const c of cases) {
  const tool = { name: "tool", description: "", parameters: c.schema };
  const toolCall = { type: "toolCall", id: "call_1", name: "tool", arguments: c.arguments };
  try {
    c.pi = { ok: validateToolArguments(tool, toolCall) };
  } catch (error) {
    c.pi = { error: String(error.message) };
  }
}
process.stdout.write(JSON.stringify(cases, null, 1) + "\n");
