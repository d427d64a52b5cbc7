// Records a whole pi-agent-core 0.73.1 session — every AgentEvent and the final messages — from
// a scripted run on pi-ai's faux provider, as the reference for oxpi's JSON field names
// (fixtures/pi/session.json, checked by crates/agent-core/tests/pi_session.rs).
//
//   node session.mjs <install-dir> > ../../fixtures/pi/session.json
//
// The run: the user says "go"; the model answers with text and one `echo` tool call; the tool
// reports progress once and returns content with details; the model then answers "done".
// crates/agent-core/tests/pi_session.rs replays the same run on oxpi's faux provider.

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [installDir] = process.argv.slice(2);
const load = (pkg) =>
  import(pathToFileURL(join(installDir, "node_modules", "@mariozechner", pkg, "dist", "index.js")).href);
const ai = await load("pi-ai");
const { Agent } = await load("pi-agent-core");

const faux = ai.registerFauxProvider({ provider: "faux", models: [{ id: "faux-1" }] });
faux.setResponses([
  ai.fauxAssistantMessage([ai.fauxText("Let me echo."), ai.fauxToolCall("echo", { text: "hi" }, { id: "call_1" })], {
    stopReason: "toolUse",
  }),
  ai.fauxAssistantMessage("done"),
]);

const echo = {
  name: "echo",
  label: "Echo",
  description: "Say the text back",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  async execute(_id, params, _signal, onUpdate) {
    onUpdate?.({ content: [{ type: "text", text: "working" }], details: { progress: 0.5 } });
    return { content: [{ type: "text", text: params.text }], details: { length: params.text.length } };
  },
};

const agent = new Agent({
  initialState: { systemPrompt: "Be brief.", model: faux.getModel(), tools: [echo] },
});
const events = [];
agent.subscribe((event) => {
  events.push(JSON.parse(JSON.stringify(event)));
});
await agent.prompt("go");
await agent.waitForIdle();
const messages = JSON.parse(JSON.stringify(agent.state.messages));
process.stdout.write(JSON.stringify({ pi: "0.73.1", events, messages }, null, 1) + "\n");
faux.unregister();
