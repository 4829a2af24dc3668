// The gateway driven by the official TypeScript SDK client: lists, calls, and approves by
// elicitation. Usage: node ts_client.mjs SDK_DIR stdio COMMAND [ARGS...] | SDK_DIR http URL
// Prints one JSON object with what it saw.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, transportKind, ...rest] = process.argv.slice(2);
// The SDK is installed outside the repository: import it by path (ESM ignores NODE_PATH).
const load = (part) => import(pathToFileURL(join(sdkDir, "dist", "esm", part)).href);
const { Client } = await load("client/index.js");
const { ElicitRequestSchema } = await load("types.js");

let transport;
if (transportKind === "stdio") {
  const { StdioClientTransport } = await load("client/stdio.js");
  // This environment, not the SDK's short default: the gateway imports the tests' toolwire.
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: process.env, stderr: "inherit" });
} else {
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(rest[0]));
}

const client = new Client({ name: "ts-test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const elicited = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicited.push(request.params.message);
  return { action: "accept", content: { approve: true } };
});

await client.connect(transport);
const listing = await client.listTools();
const text = (result) => result.content.filter((p) => p.type === "text").map((p) => p.text).join("\n");
const summary = (result) => ({ isError: Boolean(result.isError), text: text(result), structured: result.structuredContent ?? null });
const out = {
  tools: listing.tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema, annotations: t.annotations ?? null })),
  add: summary(await client.callTool({ name: "add", arguments: { a: 2, b: 3 } })),
  weather: summary(await client.callTool({ name: "weather", arguments: { city: "Oslo" } })),
  bad: summary(await client.callTool({ name: "add", arguments: { a: "two" } })),
  denied: summary(await client.callTool({ name: "format_disk", arguments: { device: "sda" } })),
  approved: summary(await client.callTool({ name: "delete_file", arguments: { path: "t.txt" } })),
  elicited,
};
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
