// Opens a session file with pi-coding-agent's own SessionManager and prints what pi sees as one
// JSON document: the header, the entry ids, the leaf, the name, and the context pi would send
// (buildSessionContext) reduced to role, text, tool call id and stop reason per message.
//
// argv[2]: the install prefix; argv[3]: the session file.

import { pathToFileURL } from "node:url";

const [prefix, file] = process.argv.slice(2);
const module = `${prefix}/node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js`;
const { SessionManager } = await import(pathToFileURL(module).href);
const sm = SessionManager.open(file);
const text = (content) =>
  typeof content === "string"
    ? content
    : (content ?? [])
        .map((b) => (b.type === "text" ? b.text : b.type === "toolCall" ? `[${b.name}]` : ""))
        .join("");
const entries = sm.getEntries();
console.log(
  JSON.stringify({
    header: sm.getHeader(),
    ids: entries.map((e) => e.id),
    leaf: sm.getLeafId(),
    name: sm.getSessionName() ?? null,
    messages: sm.buildSessionContext().messages.map((m) => ({
      role: m.role,
      text: text(m.content),
      toolCallId: m.toolCallId ?? null,
      stopReason: m.stopReason ?? null,
    })),
  }),
);
