// The official TypeScript SDK's OAuth client as a desktop app runs it, for tests/test_browser_oauth.py.
//
//   MCP_TS_NODE_MODULES=.ci/node/node_modules node tests/oauth_client.mjs MCP_URL TOOL ARGUMENTS_JSON
//
// It registers (DCR), waits at a loopback redirect URI of its own (RFC 8252) and prints one JSON line per
// step on stdout: {"authorize": URL} for the person's browser to open, then, once the browser has come back
// with a code, {"tools": [names], "result": <the tool's result>}, or {"error": message} (and exits 1).
// Every wait is bounded.

import { randomBytes } from "node:crypto";
import { createServer } from "node:http";

import { sdk, toolNames, within } from "./client_steps.mjs";

const { Client } = sdk("client/index.js");
const { StreamableHTTPClientTransport } = sdk("client/streamableHttp.js");
const { UnauthorizedError } = sdk("client/auth.js");

const [mcpUrl, toolName, toolArguments] = process.argv.slice(2);

function say(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

// The redirect URI: a loopback server whose `arrival` resolves with the query the browser brings back.
async function loopbackCallback() {
  let arrive;
  const arrival = new Promise((resolve) => (arrive = resolve));
  const server = createServer((request, response) => {
    const url = new URL(request.url, "http://127.0.0.1");
    if (url.pathname !== "/callback") {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    response.end("<!doctype html><title>Connected</title><p>You can close this window and return to the app.");
    arrive(url.searchParams);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, arrival, redirectUrl: `http://127.0.0.1:${server.address().port}/callback` };
}

// The SDK's OAuthClientProvider, kept in memory: a desktop app would keep these in its key store.
class DesktopProvider {
  constructor(redirectUrl) {
    this.redirectUrl = redirectUrl;
    this.expectedState = randomBytes(24).toString("base64url");
    this.saved = {};
  }
  get clientMetadata() {
    return {
      client_name: "TypeScript SDK client",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() {
    return this.expectedState;
  }
  clientInformation() {
    return this.saved.client;
  }
  saveClientInformation(client) {
    this.saved.client = client;
  }
  tokens() {
    return this.saved.tokens;
  }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
  }
  redirectToAuthorization(authorizationUrl) {
    say({ authorize: authorizationUrl.toString() });
  }
  saveCodeVerifier(verifier) {
    this.saved.verifier = verifier;
  }
  codeVerifier() {
    return this.saved.verifier;
  }
}

async function authorizedClient(provider, callback) {
  const client = new Client({ name: "typescript-sdk-test", version: "1.0.0" });
  const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  try {
    await within(client.connect(first), "connecting");
    return client; // already authorized: nothing for the person to do
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  const query = await within(callback.arrival, "the browser's return");
  if (query.get("error")) throw new Error(`authorization refused: ${query.get("error")}`);
  if (query.get("state") !== provider.expectedState) throw new Error("the state came back altered");
  await within(first.finishAuth(query.get("code")), "the token exchange");
  const authorized = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  await within(client.connect(authorized), "connecting with the token");
  return client;
}

async function main() {
  const callback = await loopbackCallback();
  try {
    const client = await authorizedClient(new DesktopProvider(callback.redirectUrl), callback);
    const tools = await toolNames(client);
    const result = await within(client.callTool({ name: toolName, arguments: JSON.parse(toolArguments) }), "tools/call");
    say({ tools, result });
    await client.close();
  } finally {
    callback.server.close();
  }
}

main().catch((error) => {
  say({ error: String(error?.stack ?? error) });
  process.exitCode = 1;
});
