// The official TypeScript SDK's client with a bearer token, as a script or a desktop app configured with a
// token runs it, for tests/test_doors_live.py.
//
//   MCP_TS_NODE_MODULES=.ci/node/node_modules MCP_TS_TOKEN=... node tests/token_client.mjs MCP_URL TOOL ARGUMENTS_JSON
//
// It connects (initialize), lists every page of tools, calls TOOL and prints one JSON line on stdout:
// {"protocolVersion": ..., "tools": [names], "result": <the tool's result>}, or {"error": message} (and exits 1).
// Every wait is bounded.

import { sdk, toolNames, within } from "./client_steps.mjs";

const { Client } = sdk("client/index.js");
const { StreamableHTTPClientTransport } = sdk("client/streamableHttp.js");

const [mcpUrl, toolName, toolArguments] = process.argv.slice(2);

async function main() {
  const client = new Client({ name: "typescript-sdk-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TS_TOKEN}` } },
  });
  await within(client.connect(transport), "connecting");
  try {
    const tools = await toolNames(client);
    const result = await within(client.callTool({ name: toolName, arguments: JSON.parse(toolArguments) }), "tools/call");
    process.stdout.write(JSON.stringify({ protocolVersion: transport.protocolVersion, tools, result }) + "\n");
  } finally {
    await within(client.close(), "closing");
  }
}

main().catch((error) => {
  process.stdout.write(JSON.stringify({ error: String(error?.stack ?? error) }) + "\n");
  process.exitCode = 1;
});
