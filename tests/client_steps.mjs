// Steps the TypeScript SDK test clients (tests/oauth_client.mjs, tests/token_client.mjs,
// tests/confirming_client.mjs) share; every wait is bounded.

import { createRequire } from "node:module";
import { join } from "node:path";

export const TIMEOUT_MS = 10_000;
const MAX_PAGES = 50;

// The SDK is installed beside the conformance suite (`make typescript-sdk`), not next to these files: load it
// through that directory's package resolution, by its public export paths.
const require = createRequire(join(process.env.MCP_TS_NODE_MODULES, "..", "resolve-from-here.cjs"));

// One module of `@modelcontextprotocol/sdk`, by its export path ("client/index.js").
export function sdk(path) {
  return require(`@modelcontextprotocol/sdk/${path}`);
}

// `promise`, or an error naming `what` once TIMEOUT_MS have passed without it settling.
export function within(promise, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// The names of every tool the client may see, page by page.
export async function toolNames(client) {
  const names = [];
  let cursor;
  for (let page = 0; page < MAX_PAGES; page++) {
    const listed = await within(client.listTools(cursor ? { cursor } : {}), "tools/list");
    names.push(...listed.tools.map((tool) => tool.name));
    if (!(cursor = listed.nextCursor)) return names;
  }
  throw new Error(`tools/list did not end within ${MAX_PAGES} pages`);
}
