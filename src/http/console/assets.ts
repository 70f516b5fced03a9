/**
 * The console's files: one HTML shell for both pages (the runs at `/`, a run at `/runs/:id/console`), one
 * script and one stylesheet. The shell holds no data and no inline script or style, so the CSP can say
 * `script-src 'self'` and nothing else; the script and stylesheet are named with their content hash
 * (`?v=`), so a browser keeps them for a year and a new version is a new URL.
 */
import { createHash } from "node:crypto";
import { COMMON_JS } from "./common.js";
import { MARKDOWN_JS } from "./markdown.js";
import { EVENT_IDS_JS, RUN_JS } from "./run-view.js";
import { RUNS_JS } from "./runs-view.js";
import { CONSOLE_CSS } from "./style.js";

const BOOT_JS = String.raw`
async function boot() {
  let settings;
  try { settings = await api("GET", "/console/settings"); }
  catch (e) { if (e.status !== 401) notice("The console could not reach its server: " + e.message); return; }
  $("login").hidden = true; $("main").hidden = false; $("signout").hidden = !token();
  const m = /^\/runs\/([^/]+)\/console$/.exec(location.pathname);
  if (m) runView(settings, decodeURIComponent(m[1])); else runsView(settings);
}
setupLogin(boot);
boot();
`;

export interface ConsoleAsset {
  path: string;
  type: string;
  body: string;
  /** Content hash: the `?v=` of its URL and its ETag. */
  hash: string;
}

const hashOf = (body: string) => createHash("sha256").update(body).digest("base64url").slice(0, 16);
const asset = (path: string, type: string, body: string): ConsoleAsset => ({ path, type, body, hash: hashOf(body) });

export const CONSOLE_SCRIPT = asset(
  "/console/app.js",
  "application/javascript; charset=utf-8",
  [COMMON_JS, MARKDOWN_JS, RUNS_JS, EVENT_IDS_JS, RUN_JS, BOOT_JS].join("\n"),
);
export const CONSOLE_STYLE = asset("/console/style.css", "text/css; charset=utf-8", CONSOLE_CSS);
export const CONSOLE_ASSETS = [CONSOLE_SCRIPT, CONSOLE_STYLE];

/** Only its own files, its own API; no inline code, no framing, no form posting anywhere. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const CONSOLE_SHELL = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>jai-agent console</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${CONSOLE_STYLE.path}?v=${CONSOLE_STYLE.hash}">
<script src="${CONSOLE_SCRIPT.path}?v=${CONSOLE_SCRIPT.hash}" defer></script>
</head><body>
<header><a class="brand" href="/">jai-agent</a><span class="muted">console</span><span class="grow"></span>
<button type="button" id="signout" hidden>Sign out</button></header>
<div id="notice" class="notice" role="status" aria-live="polite"></div>
<form id="login" class="login" hidden autocomplete="off">
<h2>Sign in</h2>
<p>This server needs its token: <code>JAI_HTTP_TOKEN</code>, or the one in the console URL the worker printed at start.
It is kept for this tab only (sessionStorage) and sent as <code>Authorization: Bearer</code>, never in a URL.</p>
<p id="login-why" class="err"></p>
<input id="login-token" type="password" placeholder="token" autocomplete="off" spellcheck="false">
<button type="submit" class="primary">Sign in</button>
</form>
<main id="main"></main>
</body></html>
`;
export const CONSOLE_SHELL_HASH = hashOf(CONSOLE_SHELL);
