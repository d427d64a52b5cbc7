// pi-ai 1.6's own login of a provider, run against a local fake issuer: Node's fetch is
// redirected from pi's hosts to the fake (pi's OAuth endpoints are constants), the "browser"
// fetches the authorization URL there and the user pastes where it landed (a redirect URL, or
// Anthropic's `code#state` page); GitHub's device code is approved by the fake after a poll.
// Prints the stored credential's field names.
// Usage: node oauth_login.mjs <pi install dir> <provider> <issuer origin> <login method>
import { pathToFileURL } from "node:url";

const [dir, provider, origin, method] = process.argv.slice(2);
const load = (rel) =>
  import(pathToFileURL(`${dir}/node_modules/@earendil-works/pi-ai/dist/${rel}`).href);
const HOSTS = [
  "https://auth.openai.com",
  "https://platform.claude.com",
  "https://claude.ai",
  "https://github.com",
  "https://api.github.com",
  "https://api.individual.githubcopilot.com",
];
const local = (url) => {
  const host = HOSTS.find((h) => url.startsWith(`${h}/`));
  if (!host) throw new Error(`pi asked for an unexpected URL: ${url}`);
  return origin + url.slice(host.length);
};
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) =>
  realFetch(local(typeof input === "string" ? input : input instanceof URL ? input.href : input.url), init);

const MODULES = {
  anthropic: ["auth/oauth/anthropic.js", "anthropicOAuth"],
  "openai-codex": ["auth/oauth/openai-codex.js", "openaiCodexOAuth"],
  "github-copilot": ["auth/oauth/github-copilot.js", "githubCopilotOAuth"],
};
const [file, name] = MODULES[provider];
const oauth = (await load(file))[name];
let paste;
const pasted = new Promise((resolve) => (paste = resolve));
const interaction = {
  signal: AbortSignal.timeout(120_000),
  notify(event) {
    if (event.type !== "auth_url") return;
    realFetch(local(event.url), { redirect: "manual" }).then(async (response) =>
      paste(response.status === 302 ? response.headers.get("location") : await response.text()),
    );
  },
  async prompt(prompt) {
    if (prompt.type === "select") return method;
    if (prompt.type === "manual_code") return pasted;
    if (prompt.type === "text") return ""; // Copilot: github.com, no enterprise domain
    throw new Error(`unexpected prompt ${prompt.type}`);
  },
};
const credential = await oauth.login(interaction);
// The fields as stored (JSON drops the undefined ones, e.g. Copilot's `enterpriseUrl` on github.com).
console.log(JSON.stringify(Object.keys(JSON.parse(JSON.stringify(credential))).sort()));
