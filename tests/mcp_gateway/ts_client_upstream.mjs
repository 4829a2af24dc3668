// The gateway in front of an MCP server (upstream_server.py), driven by the official TypeScript
// SDK client: progress forwarded to the client, a call the client aborts cancelled upstream,
// and a deferred approval completed on the next call once decided (the script waits for a line
// on stdin between the two calls). Usage: node ts_client_upstream.mjs SDK_DIR COMMAND [ARGS...]
// Prints one JSON object per step, each on its own line.
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [sdkDir, command, ...args] = process.argv.slice(2);
const load = (part) => import(pathToFileURL(join(sdkDir, "dist", "esm", part)).href);
const { Client } = await load("client/index.js");
const { CallToolResultSchema } = await load("types.js");
const { StdioClientTransport } = await load("client/stdio.js");

const client = new Client({ name: "ts-upstream-test", version: "1.0.0" });
// This environment, not the SDK's short default: the gateway imports the tests' toolwire.
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
await client.connect(transport);
// What reached the client, in wire order: the SDK runs a notification's handler a little later
// than it answers a response, so its onprogress may miss the last reports before an answer.
// Each report's progress token, and the token each call asked with: a report the SDK's
// onprogress never ran for still shows it was the call's own.
const wire = [];
const asked = [];
const received = transport.onmessage;
transport.onmessage = (message) => {
  if (message.method === "notifications/progress") {
    wire.push(["progress", message.params.progress, message.params.progressToken]);
  } else if (message.id !== undefined) wire.push(["answer", message.id]);
  received(message);
};
const send = transport.send.bind(transport);
transport.send = (message, options) => {
  if (message.method === "tools/call") asked.push(message.params?._meta?.progressToken);
  return send(message, options);
};
const text = (result) => result.content.filter((p) => p.type === "text").map((p) => p.text).join("\n");
const say = (step, value) => process.stdout.write(JSON.stringify({ step, ...value }) + "\n");

const progress = [];
const steps = await client.callTool({ name: "upstream_server__steps", arguments: { n: 3 } }, CallToolResultSchema, {
  onprogress: (p) => progress.push([p.progress, p.total ?? null, p.message ?? null]),
});
say("progress", {
  text: text(steps),
  progress,
  wire: wire.map(([kind, value]) => (kind === "answer" ? kind : value)),
  tokens: wire.filter(([kind]) => kind === "progress").map(([, , token]) => token),
  asked: asked[0],
});

const abort = new AbortController();
let aborted = "not aborted";
try {
  await client.callTool({ name: "upstream_server__hang", arguments: {} }, CallToolResultSchema, {
    signal: abort.signal,
    onprogress: () => abort.abort("the user stopped it"),
    timeout: 60000,
  });
} catch (error) {
  aborted = String(error);
}
say("cancelled", { aborted });

const first = await client.callTool({ name: "upstream_server__guarded", arguments: { item: "box" } });
say("waiting", { isError: Boolean(first.isError), text: text(first) });
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim() === "decided") break;
}
const second = await client.callTool({ name: "upstream_server__guarded", arguments: { item: "box" } });
say("approved", { isError: Boolean(second.isError), text: text(second) });
await client.close();
process.exit(0);
