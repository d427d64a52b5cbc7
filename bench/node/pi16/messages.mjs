// Serialized messages of every kind, written by pi-ai / pi-agent-core 1.6.0 themselves, as the
// reference for oxpi's message JSON (fixtures/pi16/messages.json, checked by
// crates/ai/tests/pi16_json.rs, which also runs this script when Node is installed).
//
//   node messages.mjs <install-dir> > ../../../fixtures/pi16/messages.json
//
// <install-dir> holds node_modules/@earendil-works/{pi-ai,pi-agent-core} 1.6.0. Values are kept as
// pi wrote them (real timestamps and durations), so every message can be read back field by field.
//
// Output: { pi, transcript, replay, fullAssistantEvents, fullAssistantInAgent, toolRun, deferred,
//           nestedCalls, cost, thinking }
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [installDir] = process.argv.slice(2);
if (!installDir) throw new Error("usage: node messages.mjs <install-dir>");
const file = (...parts) => pathToFileURL(join(installDir, "node_modules", "@earendil-works", ...parts)).href;
const ai = await import(file("pi-ai", "dist", "index.js"));
const core = await import(file("pi-agent-core", "dist", "index.js"));
const copy = (value) => JSON.parse(JSON.stringify(value));
const out = { pi: "1.6.0" };
const object = (properties = {}, required = []) => ({ type: "object", properties, required });

// An Agent run whose transcript holds the three kinds of system message: the leading one pi makes
// of the prompt and tools, one pi inserts when the tools change, one the app sends with sections.
{
  const faux = ai.fauxProvider({ api: "faux", provider: "faux", tokenSize: { min: 50, max: 50 } });
  const models = ai.createModels();
  models.setProvider(faux.provider);
  faux.setResponses([() => ai.fauxAssistantMessage("one"), () => ai.fauxAssistantMessage("two"), () => ai.fauxAssistantMessage("three")]);
  const tool = (name, extra = {}) => ({ name, label: name, description: `The ${name} tool`, parameters: object(), execute: async () => ({ content: [], details: {} }), ...extra });
  const strict = { constrainedSampling: { type: "json_schema", strict: "prefer" } };
  const agent = new core.Agent({
    initialState: { systemPrompt: "Base prompt.", model: faux.getModel(), tools: [tool("read", strict), tool("bash")] },
    streamFn: models.streamSimple.bind(models),
  });
  await agent.prompt("first");
  agent.state.tools = [tool("read", strict), tool("write")];
  await agent.prompt("second");
  await agent.prompt([
    { role: "system", content: [{ type: "text", text: "Extra instruction." }], sections: { skills: "<skills>a</skills>", obsolete: null }, timestamp: 1 },
    { role: "user", content: "third", timestamp: 2 },
  ]);
  const messages = copy(agent.state.messages);
  out.transcript = messages;
  const sectioned = messages.find((m) => m.sections);
  out.replay = {
    currentSystemMessage: copy(ai.getCurrentSystemMessage(messages)),
    currentSystemPrompt: ai.getCurrentSystemPrompt(messages),
    currentTools: copy(ai.getCurrentTools(messages)),
    collapsed: copy(ai.collapseSystemMessages({ messages }).messages),
    renderSystemMessageUpdate: ai.renderSystemMessageUpdate(sectioned),
    normalizeContext: copy(ai.normalizeContext({ systemPrompt: "Old style", tools: [{ name: "t", description: "d", parameters: { type: "object" } }], messages: [{ role: "user", content: "hi", timestamp: 1 }] })),
    normalizeContextEmpty: copy(ai.normalizeContext({ systemPrompt: "", messages: [] })),
  };
}

// An AssistantMessage with every optional field, from a custom provider through Models.streamSimple
// (every event kind) and through an Agent asking for "high" (which adds thinkingLevel, durationMs).
{
  const usage = {
    input: 100, output: 50, cacheRead: 20, cacheWrite: 30, cacheWrite1h: 10, reasoning: 12, totalTokens: 200,
    cost: { input: 0.0003, output: 0.00075, cacheRead: 0.000006, cacheWrite: 0.0001, total: 0.0012, totalFromProvider: true },
  };
  const model = { id: "full-1", name: "Full", api: "full-api", provider: "full", baseUrl: "http://localhost:0", reasoning: true, input: ["text"], cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }, contextWindow: 200000, maxTokens: 8192 };
  const blocks = [
    { type: "thinking", thinking: "Let me think.", thinkingSignature: "sig-thinking" },
    { type: "thinking", thinking: "", thinkingSignature: "opaque-redacted-payload", redacted: true },
    { type: "text", text: "Here you go.", textSignature: JSON.stringify({ v: 1, id: "msg_1", phase: "final_answer" }) },
    { type: "toolCall", id: "call_9|fc_9", name: "lookup", arguments: { q: "x" }, thoughtSignature: "sig-thought", namespace: "mcp__search" },
    { type: "toolCall", id: "call_10", name: "lookup", arguments: {}, argumentsError: "Unexpected token } in JSON at position 5\n\nReceived arguments:\n{\"q\":}" },
  ];
  const streamFull = (requestModel) => {
    const stream = ai.createAssistantMessageEventStream();
    const base = { role: "assistant", content: [], api: requestModel.api, provider: requestModel.provider, model: requestModel.id, usage, stopReason: "pending", timestamp: Date.now() };
    queueMicrotask(() => {
      const partial = { ...base, content: [] };
      const snap = () => copy(partial);
      stream.push({ type: "start", partial: snap() });
      blocks.forEach((block, i) => {
        partial.content.push(block);
        if (block.type === "thinking") {
          stream.push({ type: "thinking_start", contentIndex: i, partial: snap() });
          if (block.thinking) stream.push({ type: "thinking_delta", contentIndex: i, delta: block.thinking, partial: snap() });
          stream.push({ type: "thinking_end", contentIndex: i, content: block.thinking, partial: snap() });
        } else if (block.type === "text") {
          stream.push({ type: "text_start", contentIndex: i, partial: snap() });
          stream.push({ type: "text_delta", contentIndex: i, delta: block.text, partial: snap() });
          stream.push({ type: "text_end", contentIndex: i, content: block.text, partial: snap() });
        } else {
          stream.push({ type: "toolcall_start", contentIndex: i, partial: snap() });
          stream.push({ type: "toolcall_delta", contentIndex: i, delta: JSON.stringify(block.arguments), partial: snap() });
          stream.push({ type: "toolcall_end", contentIndex: i, toolCall: block, partial: snap() });
        }
      });
      const message = {
        ...base,
        content: blocks,
        responseModel: "full-1-2026-11-01",
        responseId: "resp_123",
        providerThinkingLevel: "high",
        diagnostics: [
          { type: "openai_input_transformations", timestamp: 5, details: { transformations: [{ type: "reasoning", id: "rs_1", action: "removed", reason: "orphaned" }] } },
          { type: "provider_transport_failure", timestamp: 6, error: { name: "Error", message: "socket hang up", code: "ECONNRESET" } },
        ],
        stopReason: "toolUse",
        rawStopReason: "tool_use",
        endTurn: false,
      };
      stream.push({ type: "done", reason: "toolUse", message });
      stream.end(message);
    });
    return stream;
  };
  const provider = ai.createProvider({ id: "full", auth: { apiKey: { name: "none", resolve: async () => ({ auth: {} }) } }, models: [model], api: { stream: streamFull, streamSimple: streamFull } });
  const models = ai.createModels();
  models.setProvider(provider);
  const events = [];
  for await (const event of models.streamSimple(model, { systemPrompt: "s", messages: [{ role: "user", content: "hi", timestamp: 1 }] })) events.push(copy(event));
  out.fullAssistantEvents = events;
  const agent = new core.Agent({ initialState: { model, thinkingLevel: "high" }, streamFn: models.streamSimple.bind(models) });
  agent.finishTurn = async () => ({ action: "end" });
  await agent.prompt("hi");
  out.fullAssistantInAgent = copy(agent.state.messages.find((m) => m.role === "assistant"));
}

// Tool results as pi-agent-core writes them: one from a tool that reports its own usage (with
// durationMs), one for an unknown tool (no durationMs), one for a tool that threw.
{
  const faux = ai.fauxProvider({ api: "faux", provider: "faux", tokenSize: { min: 50, max: 50 } });
  const models = ai.createModels();
  models.setProvider(faux.provider);
  faux.setResponses([
    () => ai.fauxAssistantMessage([ai.fauxToolCall("ask", { q: "x" }, { id: "call_1" }), ai.fauxToolCall("nope", {}, { id: "call_2" }), ai.fauxToolCall("boom", {}, { id: "call_3" })], { stopReason: "toolUse" }),
    () => ai.fauxAssistantMessage("done"),
  ]);
  const usage = { input: 3, output: 4, cacheRead: 0, cacheWrite: 0, totalTokens: 7, cost: { input: 0.25, output: 0.5, cacheRead: 0, cacheWrite: 0, total: 0.75 } };
  const tools = [
    { name: "ask", label: "Ask", description: "Asks a model", parameters: object({ q: { type: "string" } }, ["q"]), execute: async () => ({ content: [{ type: "text", text: "answer" }], details: { asked: 1 }, usage }) },
    { name: "boom", label: "Boom", description: "Throws", parameters: object(), execute: async () => { throw new Error("it broke"); } },
  ];
  const agent = new core.Agent({ initialState: { systemPrompt: "Tools.", model: faux.getModel(), tools }, streamFn: models.streamSimple.bind(models) });
  await agent.prompt("go");
  out.toolRun = copy(agent.state.messages);
}

// A deferred faux reply: the start partial and the final message carry the handle.
{
  const faux = ai.fauxProvider({ api: "faux", provider: "faux" });
  const models = ai.createModels();
  models.setProvider(faux.provider);
  faux.setResponses([() => ai.fauxAssistantMessage("later")]);
  const events = [];
  for await (const event of models.streamSimple(faux.getModel(), { messages: [{ role: "user", content: "hi", timestamp: 1 }] }, { deferred: true })) events.push(copy(event));
  out.deferred = events.filter((e) => e.type === "done" || e.type === "start");
}

// pi-agent-core never writes nestedCalls (pi-coding-agent's extension tools do): written from the type.
out.nestedCalls = {
  role: "toolResult", toolCallId: "call_1", toolName: "codemode", content: [{ type: "text", text: "ran 3 calls" }], details: {},
  nestedCalls: { calls: [{ id: "n1", name: "read", arguments: { path: "a" }, status: "ok", durationMs: 3 }, { id: "n2", name: "write", argumentsBytes: 90000, status: "error", durationMs: 1, error: "denied" }, { id: "n3", name: "bash", arguments: { cmd: "sleep 9" }, status: "unfinished" }], complete: false },
  isError: false, timestamp: 1, durationMs: 12,
};

// calculateCost with a price tier and one-hour cache writes.
{
  const model = { id: "m", name: "m", api: "x", provider: "p", baseUrl: "", reasoning: false, input: ["text"], contextWindow: 1, maxTokens: 1, cost: { input: 1, output: 2, cacheRead: 0.1, cacheWrite: 1.25, tiers: [{ inputTokensAbove: 200000, input: 2, output: 4, cacheRead: 0.2, cacheWrite: 2.5 }, { inputTokensAbove: 100000, input: 1.5, output: 3, cacheRead: 0.15, cacheWrite: 2 }] } };
  const usage = (input, cacheRead, cacheWrite, cacheWrite1h) => ({ input, output: 1000, cacheRead, cacheWrite, ...(cacheWrite1h ? { cacheWrite1h } : {}), totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } });
  const cases = { base: usage(1000, 0, 1000), with1h: usage(1000, 0, 1000, 400), middleTier: usage(90000, 10000, 1), topTier: usage(150000, 0, 60000), atThreshold: usage(200000, 0, 0) };
  out.cost = { model, cases: Object.fromEntries(Object.entries(cases).map(([name, u]) => [name, { usage: copy(u), cost: copy(ai.calculateCost(model, u)) }])) };
}

// getSupportedThinkingLevels / clampThinkingLevel on models of several shapes.
{
  const base = { id: "t", name: "t", api: "x", provider: "p", baseUrl: "", input: ["text"], contextWindow: 1, maxTokens: 1, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } };
  const shapes = {
    noReasoning: { ...base, reasoning: false },
    plain: { ...base, reasoning: true },
    noOff: { ...base, reasoning: true, thinkingLevelMap: { off: null, xhigh: null, max: null } },
    withMax: { ...base, reasoning: true, thinkingLevelMap: { max: "max" } },
    xhighOnly: { ...base, reasoning: true, thinkingLevelMap: { minimal: null, low: null, xhigh: "xhigh" } },
    onlyHigh: { ...base, reasoning: true, thinkingLevelMap: { off: null, minimal: null, low: null, medium: null } },
  };
  const levels = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];
  out.thinking = Object.fromEntries(Object.entries(shapes).map(([name, model]) => [name, {
    model,
    supported: ai.getSupportedThinkingLevels(model),
    clamped: Object.fromEntries(levels.map((level) => [level, ai.clampThinkingLevel(model, level)])),
  }]));
}

process.stdout.write(JSON.stringify(out, null, 1) + "\n");
