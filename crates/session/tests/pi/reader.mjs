// pi opens a session file, prints what it sees as JSON, then (given a text) appends a user
// message and prints the context again.
const [prefix, file, text] = process.argv.slice(2);
const { SessionManager } = await import(`${prefix}/node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js`);
const sm = SessionManager.open(file);
const seen = {
  header: sm.getHeader(),
  leaf: sm.getLeafId(),
  ids: sm.getEntries().map((e) => e.id),
  roots: sm.getTree().length,
  label: (id) => sm.getLabel(id),
  name: sm.getSessionName() ?? null,
  branch: sm.getBranch().map((e) => e.id),
  context: sm.buildSessionContext(),
};
let appended = null;
if (text) {
  const id = sm.appendMessage({ role: "user", content: [{ type: "text", text }], timestamp: 3 });
  appended = { id, context: sm.buildSessionContext() };
}
delete seen.label;
console.log(JSON.stringify({ ...seen, appended }));
