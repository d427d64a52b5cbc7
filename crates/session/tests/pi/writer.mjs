// pi writes a session: two faux-provider turns of its Agent (with a tool call), a system
// message, a compaction, a label, a name, extension entries, a branch with a summary, and a
// fork into a second file. Prints what pi's SessionManager sees, as JSON.
const [prefix, sessionDir, cwd] = process.argv.slice(2);
const mod = (p) => import(`${prefix}/node_modules/@earendil-works/${p}`);
const { SessionManager } = await mod("pi-coding-agent/dist/core/session-manager.js");
const ai = await mod("pi-ai/dist/index.js");
const core = await mod("pi-agent-core/dist/index.js");

const faux = ai.fauxProvider({ api: "faux", provider: "faux" });
const models = ai.createModels();
models.setProvider(faux.provider);
const tool = {
  name: "echo", label: "echo", description: "Echo text",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  execute: async (_id, p) => ({ content: [{ type: "text", text: "echo: " + p.text }], details: { n: 1 } }),
};
const agent = new core.Agent({
  initialState: { systemPrompt: "Be brief.", model: faux.getModel(), tools: [tool] },
  streamFn: models.streamSimple.bind(models),
});
const sm = SessionManager.create(cwd, sessionDir);
agent.subscribe((e) => { if (e.type === "message_end") sm.appendMessage(e.message); });

sm.appendModelChange("faux", faux.getModel().id);
sm.appendThinkingLevelChange("low");
sm.appendMessage({ role: "system", content: "Be brief.", sections: { cwd: cwd }, toolsAdded: [{ name: "echo", description: "Echo text", parameters: tool.parameters }], timestamp: 1 });
faux.setResponses([
  ai.fauxAssistantMessage([ai.fauxToolCall("echo", { text: "hi" })], { stopReason: "toolUse" }),
  ai.fauxAssistantMessage("done one"),
]);
await agent.prompt("first");
const entries = () => sm.getEntries();
const firstUser = entries().find((e) => e.type === "message" && e.message.role === "user").id;
const kept = entries().filter((e) => e.type === "message" && e.message.role === "assistant").at(-1).id;
sm.appendLabelChange(firstUser, "start");
sm.appendCustomEntry("ext", { count: 1 });
sm.appendCompaction("The user said first; echo ran.", kept, 4321, { readFiles: ["a.txt"], modifiedFiles: [] });
const compaction = sm.getLeafId();
sm.appendCustomMessageEntry("ext", "Injected.", true, { why: "test" });
faux.setResponses([ai.fauxAssistantMessage("done two")]);
await agent.prompt("second");
const beforeBranch = sm.getLeafId();
sm.appendSessionInfo("pi wrote this");
sm.branchWithSummary(compaction, "Tried the second prompt.", { readFiles: [], modifiedFiles: [] });
sm.appendMessage({ role: "user", content: "on the branch", timestamp: 2 });
const fork = SessionManager.forkFrom(sm.getSessionFile(), cwd, sessionDir);
console.log(JSON.stringify({
  file: sm.getSessionFile(),
  fork: fork.getSessionFile(),
  leaf: sm.getLeafId(),
  beforeBranch,
  count: sm.getEntries().length,
  context: sm.buildSessionContext(),
  forkContext: fork.buildSessionContext(),
}));
