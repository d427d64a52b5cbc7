// A pi-agent-core 1.6 session on pi-ai 1.6's faux provider that uses every hook, recorded as JSON:
// { pi, events, hooks, sequence, messages }.
//
//   node session16.mjs <install-dir> > session16.json
//
// The run (prompt "go", system prompt "Be brief.", tools echo/fail/boom/secret):
//  turn 1 (faux-1): text + six tool calls in one reply (parallel mode):
//    call_1 echo {text:"hi"}   -> progress update, result with details, structuredContent, usage;
//                                 afterToolCall adds details.audited (structuredContent kept)
//    call_2 fail {}            -> returns isError:true without throwing; afterToolCall replaces
//                                 content only (so structuredContent is dropped)
//    call_3 boom {}            -> throws
//    call_4 secret {}          -> blocked by beforeToolCall
//    call_5 nope {}            -> unknown tool
//    call_6 echo {}            -> fails validation (text missing)
//  prepareNextTurnWithContext appends a user note before turn 2;
//  prepareRequest switches turn 2 (and later) to faux-2;
//  turn 2 (faux-2): "done"; finishTurn answers {action:"continue"} once, so
//  turn 3 (faux-2): "anything else?" (a context-only request); finishTurn -> undefined, run ends.
import { loadPi, stable, summary } from "./pi16.mjs";

const { ai, agent: core } = await loadPi(process.argv[2]);

const faux = ai.fauxProvider({
  api: "faux",
  provider: "faux",
  models: [{ id: "faux-1" }, { id: "faux-2" }],
  tokenSize: { min: 2, max: 2 }, // deterministic chunks of 8 characters
});
const models = ai.createModels();
models.setProvider(faux.provider);

// Each step is a factory, so the reply is stamped when the request starts and its stream times it
// (durationMs), as with a real provider. A scripted message built earlier keeps no durationMs.
faux.setResponses([
  () => ai.fauxAssistantMessage(
    [
      ai.fauxText("Let me call the tools."),
      ai.fauxToolCall("echo", { text: "hi" }, { id: "call_1" }),
      ai.fauxToolCall("fail", {}, { id: "call_2" }),
      ai.fauxToolCall("boom", {}, { id: "call_3" }),
      ai.fauxToolCall("secret", {}, { id: "call_4" }),
      ai.fauxToolCall("nope", {}, { id: "call_5" }),
      ai.fauxToolCall("echo", {}, { id: "call_6" }),
    ],
    { stopReason: "toolUse" },
  ),
  () => ai.fauxAssistantMessage("done"),
  () => ai.fauxAssistantMessage("anything else?"),
]);

const usage = { input: 3, output: 4, cacheRead: 0, cacheWrite: 0, totalTokens: 7, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const object = (properties = {}, required = []) => ({ type: "object", properties, required });
const tools = [
  {
    name: "echo",
    label: "Echo",
    description: "Say the text back",
    parameters: object({ text: { type: "string" } }, ["text"]),
    outputSchema: object({ echoed: { type: "string" } }, ["echoed"]),
    replay: "safe",
    async execute(_id, params, _signal, onUpdate) {
      onUpdate?.({ content: [{ type: "text", text: "working" }], details: { progress: 0.5 } });
      return {
        content: [{ type: "text", text: params.text }],
        details: { length: params.text.length },
        structuredContent: { echoed: params.text },
        usage,
      };
    },
  },
  {
    name: "fail",
    label: "Fail",
    description: "Report a failure without throwing",
    parameters: object(),
    async execute() {
      return { content: [{ type: "text", text: "it failed" }], details: { code: 7 }, structuredContent: { ok: false }, isError: true };
    },
  },
  {
    name: "boom",
    label: "Boom",
    description: "Throw",
    parameters: object(),
    replay: "never",
    async execute() {
      throw new Error("boom went the tool");
    },
  },
  {
    name: "secret",
    label: "Secret",
    description: "Never allowed",
    parameters: object(),
    executionMode: "parallel",
    async execute() {
      return { content: [{ type: "text", text: "should not run" }], details: {} };
    },
  },
];

const hooks = [];
let finishTurns = 0;
let prepareRequests = 0;
const agent = new core.Agent({
  initialState: { systemPrompt: "Be brief.", model: faux.getModel("faux-1"), tools },
  streamFn: models.streamSimple.bind(models),
  sessionId: "session-16",
  beforeToolCall: async (ctx, signal) => {
    hooks.push({ hook: "beforeToolCall", toolCallId: ctx.toolCall.id, args: ctx.args, contextMessages: ctx.context.messages.length, lastRole: ctx.context.messages.at(-1)?.role, assistantStopReason: ctx.assistantMessage.stopReason, hasSignal: signal instanceof AbortSignal });
    if (ctx.toolCall.name === "secret") return { block: true, reason: "secret is not allowed" };
    return undefined;
  },
  afterToolCall: async (ctx) => {
    hooks.push({ hook: "afterToolCall", toolCallId: ctx.toolCall.id, isError: ctx.isError, result: ctx.result });
    if (ctx.toolCall.name === "echo") return { details: { ...ctx.result.details, audited: true } };
    if (ctx.toolCall.name === "fail") return { content: [{ type: "text", text: "it failed (reviewed)" }] };
    return undefined;
  },
  prepareRequest: async (request) => {
    prepareRequests++;
    hooks.push({ hook: "prepareRequest", n: prepareRequests, model: request.model.id, thinkingLevel: request.thinkingLevel, contextMessages: request.context.messages.map((m) => m.role) });
    if (prepareRequests === 2) return { model: faux.getModel("faux-2") };
    return undefined;
  },
  prepareNextTurnWithContext: async (turn) => {
    hooks.push({ hook: "prepareNextTurnWithContext", stopReason: turn.message.stopReason, toolResults: turn.toolResults.length, newMessages: turn.newMessages.length });
    if (turn.toolResults.length > 0) return { messages: [{ role: "user", content: "note from prepareNextTurn", timestamp: Date.now() }] };
    return undefined;
  },
  finishTurn: async (turn) => {
    finishTurns++;
    hooks.push({ hook: "finishTurn", n: finishTurns, stopReason: turn.message.stopReason, model: turn.message.model, toolResults: turn.toolResults.length });
    if (finishTurns === 2) return { action: "continue" };
    return undefined;
  },
});

const events = [];
const sequence = [];
agent.subscribe((event) => {
  events.push(stable(event));
  sequence.push(summary(event));
  if (event.type === "turn_end" || event.type === "turn_start") hooks.push({ event: event.type });
});
await agent.prompt("go");
await agent.waitForIdle();
const out = { pi: "1.6.0", sequence, hooks: stable(hooks), events, messages: stable(agent.state.messages), requests: faux.state.callCount };
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
