// pi 1.6's own refresh of a stored Codex login, under its auth.json lock, pointed at a local
// fake issuer by redirecting Node's fetch (pi's OAuth endpoints are constants), then one
// request to the fake model server with the token it ended with.
// Usage: node pi_oauth_refresh.mjs <pi install prefix> <auth.json> <issuer origin> <model server>
//        <start file: the request starts once it exists>
import { existsSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [prefix, authPath, issuer, backend, go] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(`${prefix}/node_modules/@earendil-works/${rel}`).href);
const { AuthStorage } = await load("pi-coding-agent/dist/core/auth-storage.js");
const { refreshStoredOAuthCredential } = await load("pi-ai/dist/auth/resolve.js");
const { openaiCodexOAuth } = await load("pi-ai/dist/auth/oauth/openai-codex.js");

const realFetch = globalThis.fetch;
const PI_ISSUER = "https://auth.openai.com";
globalThis.fetch = (input, init) => {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  if (!url.startsWith(`${PI_ISSUER}/`)) throw new Error(`pi asked for an unexpected URL: ${url}`);
  return realFetch(issuer + url.slice(PI_ISSUER.length), init);
};

while (!existsSync(go)) await new Promise((resolve) => setTimeout(resolve, 10));
const storage = AuthStorage.create(authPath);
const expiresSoon = (c) => Date.now() + 5 * 60 * 1000 >= c.expires;
const credential = await refreshStoredOAuthCredential(
  storage,
  "openai-codex",
  openaiCodexOAuth,
  expiresSoon,
  AbortSignal.timeout(60_000),
);
if (!credential) throw new Error("no stored login after the refresh");
const response = await realFetch(`${backend}/backend-api/codex/responses`, {
  method: "POST",
  headers: {
    authorization: `Bearer ${credential.access}`,
    "chatgpt-account-id": credential.accountId,
    "content-type": "application/json",
  },
  body: JSON.stringify({ model: "gpt-5.6-luna", input: "hi", stream: true }),
});
await response.text();
if (response.status !== 200) throw new Error(`the model server answered ${response.status}`);
console.log("REQUEST OK");
