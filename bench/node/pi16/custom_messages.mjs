// App-defined messages (pi-agent-core's CustomAgentMessages) as pi 1.6 itself writes and handles
// them, the reference for oxpi's Message::Custom (fixtures/pi16/custom_messages.json, checked by
// crates/agent-core/tests/custom_messages.rs).
//
//   node custom_messages.mjs <install-dir> > ../../../fixtures/pi16/custom_messages.json
//
// <install-dir> holds node_modules/@earendil-works/pi-coding-agent 1.6.0 (with its pi-ai and
// pi-agent-core 1.6.0); pi-coding-agent needs Node 22.
//
// Output: { pi, sessionFile, context, defaultRun, convertedRun }
//   sessionFile:  the lines pi's SessionManager wrote (a bashExecution `message` entry, a
//                 `custom_message` entry, a branch summary, a compaction)
//   context:      buildSessionContext().messages: the agent messages pi gives its Agent
//   defaultRun:   an Agent run with pi's default convertToLlm, prompted with the context's
//                 messages and a user message: its events (message_update left out), the
//                 messages its faux provider received, its state.messages after the run
//   convertedRun: the same with the coding agent's convertToLlm
import { mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [installDir] = process.argv.slice(2);
if (!installDir) throw new Error("usage: node custom_messages.mjs <install-dir>");
const file = (...parts) => pathToFileURL(join(installDir, "node_modules", "@earendil-works", ...parts)).href;
const ai = await import(file("pi-ai", "dist", "index.js"));
const core = await import(file("pi-agent-core", "dist", "index.js"));
const coding = await import(file("pi-coding-agent", "dist", "index.js"));
const copy = (value) => JSON.parse(JSON.stringify(value));
const out = { pi: "1.6.0" };

// A session as the coding agent writes one.
{
  const cwd = mkdtempSync(join(tmpdir(), "pi-custom-cwd-"));
  const dir = mkdtempSync(join(tmpdir(), "pi-custom-sessions-"));
  const session = coding.SessionManager.create(cwd, dir);
  const first = session.appendMessage({ role: "user", content: "first", timestamp: Date.now() });
  // AgentSession.recordBashResult's message, a cancelled run and one that exited 2.
  session.appendMessage({ role: "bashExecution", command: "sleep 9", output: "", exitCode: undefined, cancelled: true, truncated: false, fullOutputPath: undefined, timestamp: Date.now(), excludeFromContext: undefined });
  session.appendMessage({ role: "bashExecution", command: "ls nope", output: "ls: nope: No such file", exitCode: 2, cancelled: false, truncated: true, fullOutputPath: "/tmp/out.txt", timestamp: Date.now(), excludeFromContext: false });
  session.appendCustomMessageEntry("note", "An extension's note.", true, { source: "ext", n: 1 });
  session.appendCustomMessageEntry("hidden", [{ type: "text", text: "blocks" }], false);
  const assistant = ai.fauxAssistantMessage("ok");
  session.appendMessage({ ...assistant, api: "faux", provider: "faux", model: "faux-1" });
  const leaf = session.getLeafId();
  session.branchWithSummary(leaf, "Went elsewhere.");
  session.appendCompaction("Summary of nothing yet.", first, 1234);
  const [name] = readdirSync(dir);
  out.sessionFile = readFileSync(join(dir, name), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  out.context = copy(session.buildSessionContext().messages);
}

async function run(convertToLlm) {
  const faux = ai.fauxProvider({ api: "faux", provider: "faux", tokenSize: { min: 50, max: 50 } });
  const models = ai.createModels();
  models.setProvider(faux.provider);
  const seen = [];
  faux.setResponses([(context) => { seen.push(copy(context.messages)); return ai.fauxAssistantMessage("done"); }]);
  const agent = new core.Agent({
    initialState: { model: faux.getModel() },
    streamFn: models.streamSimple.bind(models),
    ...(convertToLlm ? { convertToLlm } : {}),
  });
  const events = [];
  agent.subscribe((event) => {
    if (event.type === "message_update") return;
    events.push(event.message ? { type: event.type, message: copy(event.message) } : { type: event.type });
  });
  const custom = out.context.filter((m) => m.role !== "user" && m.role !== "assistant");
  await agent.prompt([...custom, { role: "user", content: "go on", timestamp: 5 }]);
  return { events, requests: seen, messages: copy(agent.state.messages) };
}

out.defaultRun = await run(undefined);
out.convertedRun = await run(coding.convertToLlm);
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
