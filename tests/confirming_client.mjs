// The official TypeScript SDK's client asked to confirm a tool call, for tests/test_confirmations_typescript.py.
//
//   MCP_TS_NODE_MODULES=.ci/node/node_modules MCP_TS_TOKEN=... node tests/confirming_client.mjs MCP_URL TOOL PLAN_JSON
//
// PLAN_JSON is a list of {"arguments": {...}, "answer": ANSWER}. For each entry a client connects (initialize) with
// the bearer token, calls TOOL once with those arguments and closes. ANSWER is what its user does with every
// elicitation/create: "accept" (ticks every box of the form), "untouched" (accepts the form as it came, and the
// client, declaring applyDefaults, fills in the schema's defaults), "decline" or "cancel"; null is a client that
// declares no elicitation at all. Prints one JSON line on stdout:
// {"calls": [{"protocolVersion": ..., "asked": [elicitation params], "result": <the tool's result>}]}, or
// {"error": message} (and exits 1). Every wait is bounded.

import { sdk, within } from "./client_steps.mjs";

const { Client } = sdk("client/index.js");
const { StreamableHTTPClientTransport } = sdk("client/streamableHttp.js");
const { ElicitRequestSchema } = sdk("types.js");

const [mcpUrl, toolName, plan] = process.argv.slice(2);

// What a person who ticks every box of the form sends back.
function ticked(requestedSchema) {
  const properties = Object.entries(requestedSchema?.properties ?? {});
  return Object.fromEntries(properties.filter(([, field]) => field.type === "boolean").map(([name]) => [name, true]));
}

const ANSWERS = {
  accept: (params) => ({ action: "accept", content: ticked(params.requestedSchema) }),
  untouched: () => ({ action: "accept", content: {} }),
  decline: () => ({ action: "decline" }),
  cancel: () => ({ action: "cancel" }),
};

// A client whose user answers every question with `answer` (null: a client that cannot ask its user).
function person(answer, asked) {
  const elicitation = { elicitation: { form: answer === "untouched" ? { applyDefaults: true } : {} } };
  const client = new Client(
    { name: "typescript-sdk-confirming", version: "1.0.0" },
    { capabilities: answer === null ? {} : elicitation },
  );
  if (answer !== null) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return ANSWERS[answer](request.params);
    });
  }
  return client;
}

async function call(step) {
  const asked = [];
  const client = person(step.answer, asked);
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TS_TOKEN}` } },
  });
  await within(client.connect(transport), "connecting");
  try {
    const result = await within(client.callTool({ name: toolName, arguments: step.arguments }), "tools/call");
    return { protocolVersion: transport.protocolVersion, asked, result };
  } finally {
    await within(client.close(), "closing");
  }
}

async function main() {
  const calls = [];
  for (const step of JSON.parse(plan)) calls.push(await call(step));
  process.stdout.write(JSON.stringify({ calls }) + "\n");
}

main().catch((error) => {
  process.stdout.write(JSON.stringify({ error: String(error?.stack ?? error) }) + "\n");
  process.exitCode = 1;
});
