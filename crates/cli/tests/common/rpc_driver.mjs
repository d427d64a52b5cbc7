// Drives an RPC agent (`pi --mode rpc` or `oxpi --mode rpc` behind a shim) with
// pi-coding-agent's own exported `RpcClient`, through one fixed scenario, and prints what the
// client got as one JSON document on stdout: `{"steps": [{name, data | error, events}]}`.
// Every wait is on an event or a response (no timing assumptions); each is bounded.
//
// argv[2]: JSON `{clientModule, cliPath, args, cwd, env}`.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const config = JSON.parse(process.argv[2]);
const { RpcClient } = await import(pathToFileURL(config.clientModule).href);

const WAIT_MS = 60000;
const client = new RpcClient({ cliPath: config.cliPath, cwd: config.cwd, env: config.env, args: config.args });
const steps = [];
let events = [];
client.onEvent((event) => events.push(event));

function waitFor(pred, what) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no ${what} within ${WAIT_MS} ms; stderr: ${client.getStderr()}`));
    }, WAIT_MS);
    const stop = client.onEvent((event) => {
      if (pred(event)) {
        clearTimeout(timer);
        stop();
        resolve(event);
      }
    });
  });
}

const settled = () => waitFor((e) => e.type === "agent_settled", "agent_settled");

async function step(name, action) {
  let record;
  try {
    record = { name, data: (await action()) ?? null };
  } catch (error) {
    record = { name, error: String(error?.message ?? error) };
  }
  record.events = events;
  events = [];
  steps.push(record);
  return record;
}

await client.start();
try {
  // A prompt the model answers with a tool call (read), then text.
  await step("prompt_tool", async () => {
    const done = settled();
    const disposition = await client.prompt("please read notes.txt");
    await done;
    return { disposition };
  });

  // A large file read twice (so that compact has something to cut).
  for (const name of ["prompt_big_1", "prompt_big_2"]) {
    await step(name, async () => {
      const done = settled();
      const disposition = await client.prompt("please read big.txt");
      await done;
      return { disposition };
    });
  }

  // Steering mid-run: the model calls bash with a command that waits for the file `go`; the
  // client steers once the tool has started, then creates `go`.
  await step("steer", async () => {
    const started = waitFor((e) => e.type === "tool_execution_start", "tool_execution_start");
    const done = settled();
    const disposition = await client.prompt("please wait for go");
    await started;
    const steered = await client.steer("steered: stop waiting");
    writeFileSync(join(config.cwd, "go"), "");
    await done;
    return { disposition, steered };
  });

  // Abort: the model streams a little and stalls; the client aborts after the first delta.
  await step("abort", async () => {
    const delta = waitFor(
      (e) => e.type === "message_update" && e.assistantMessageEvent?.type === "text_delta",
      "a text delta",
    );
    const done = settled();
    const disposition = await client.prompt("please be slow");
    await delta;
    await client.abort();
    await done;
    return { disposition };
  });

  // The bash command: its result is recorded as a bashExecution message.
  await step("bash", () => client.bash("echo from-bash; exit 4"));

  await step("get_messages", () => client.getMessages());
  const state = await step("get_state", () => client.getState());
  const original = state.data?.sessionFile;

  await step("compact", () => client.compact());
  await step("get_messages_after_compact", () => client.getMessages());

  const forks = await step("get_fork_messages", () => client.getForkMessages());
  const first = forks.data?.[0]?.entryId;
  await step("fork", () => client.fork(first));
  await step("get_messages_after_fork", () => client.getMessages());
  await step("get_state_after_fork", () => client.getState());

  await step("switch_session", () => client.switchSession(original));
  await step("get_messages_after_switch", () => client.getMessages());
  await step("get_state_after_switch", () => client.getState());
} finally {
  await client.stop();
}
process.stdout.write(JSON.stringify({ steps }) + "\n");
