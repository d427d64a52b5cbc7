// Shared helpers for the pi 1.6 example scripts: load pi-ai / pi-agent-core 1.6 from an install
// directory (the scripts live outside any node_modules, so bare imports would not resolve), and
// make recorded JSON stable enough to diff (timestamps and durations replaced by placeholders).
//
//   npm install --prefix <dir> @earendil-works/pi-agent-core@1.6.0 @earendil-works/pi-ai@1.6.0
//   node <script>.mjs <dir>
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export async function loadPi(installDir) {
  if (!installDir) throw new Error("usage: node <script>.mjs <install-dir>");
  const file = (...parts) => pathToFileURL(join(installDir, "node_modules", "@earendil-works", ...parts)).href;
  const ai = await import(file("pi-ai", "dist", "index.js")); // "@earendil-works/pi-ai"
  const compat = await import(file("pi-ai", "dist", "compat.js")); // "@earendil-works/pi-ai/compat"
  const agent = await import(file("pi-agent-core", "dist", "index.js")); // "@earendil-works/pi-agent-core"
  return { ai, compat, agent };
}

/** A JSON copy with volatile values replaced: timestamps (except 0) and durationMs. */
export function stable(value) {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(value), (key, v) => {
    if (key === "timestamp" && typeof v === "number" && v !== 0) return "<ts>";
    if (key === "durationMs" && typeof v === "number") return "<ms>";
    return v;
  });
}

/** One line per event: its type and what distinguishes it. */
export function summary(event) {
  switch (event.type) {
    case "message_start":
    case "message_end": {
      const m = event.message;
      const what = m.role === "assistant" ? `assistant(${m.model},${m.stopReason})` : m.role === "toolResult" ? `toolResult(${m.toolCallId},isError=${m.isError})` : m.role;
      return `${event.type} ${what}`;
    }
    case "message_update":
      return `message_update ${event.assistantMessageEvent.type}`;
    case "tool_execution_start":
    case "tool_execution_update":
      return `${event.type} ${event.toolCallId}`;
    case "tool_execution_end":
      return `tool_execution_end ${event.toolCallId} isError=${event.isError}${event.durationMs === undefined ? "" : " durationMs"}`;
    case "turn_end":
      return `turn_end ${event.message.role === "assistant" ? event.message.stopReason : event.message.role} toolResults=${event.toolResults.length}`;
    case "agent_end":
      return `agent_end messages=${event.messages.length}`;
    default:
      return event.type;
  }
}
