/**
 * The console's files: one HTML shell for both pages (the runs at `/`, a run at `/runs/:id/console`), one
 * script and one stylesheet. The shell holds no data and no inline script or style, so the CSP can say
 * `script-src 'self'` and nothing else; the script and stylesheet are named with their content hash
 * (`?v=`), so a browser keeps them for a year and a new version is a new URL.
 *
 * The script and stylesheet are built from web/ (TypeScript and CSS, type-checked and linted as such) by
 * esbuild: `npm run build` bundles them once next to this module (bundle/, scripts/build-console.ts), which is
 * what an installed package serves; run from the sources (tsx, jest) they are bundled in memory on first use.
 * esbuild is a dev dependency: only that fallback loads it.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

export interface ConsoleAsset {
  path: string;
  type: string;
  body: string;
  /** Content hash: the `?v=` of its URL and its ETag. */
  hash: string;
}

/** What the server serves: the script and stylesheet, and the shell that names them by hash. */
export interface ConsoleFiles {
  assets: ConsoleAsset[];
  shell: string;
  shellHash: string;
}

/** The bundled files, by name: `app.js` (an IIFE) and `style.css`. */
export type ConsoleBundle = Record<"app.js" | "style.css", string>;

const here = path.dirname(fileURLToPath(import.meta.url));
/** Where `npm run build` puts the bundle: next to the compiled module (dist/http/console/bundle/). */
export const BUNDLE_DIR = path.join(here, "bundle");
const BUNDLE_NAMES = ["app.js", "style.css"] as const;

/** Bundles web/ with esbuild: one function for the build step and the in-memory fallback. */
export function bundleConsole(web = path.join(here, "web")): ConsoleBundle {
  let esbuild: typeof import("esbuild") | undefined;
  try {
    esbuild = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
  } catch {
    // An installed package: esbuild is a dev dependency (below).
  }
  if (!esbuild || !existsSync(path.join(web, "main.ts")))
    throw new Error(
      `The console's bundle is missing (${BUNDLE_DIR}) and cannot be built here (esbuild and the console's ` +
        `sources, src/http/console/web, are needed): run \`npm run build\`.`,
    );
  const { outputFiles } = esbuild.buildSync({
    entryPoints: { app: path.join(web, "main.ts"), style: path.join(web, "style.css") },
    outdir: BUNDLE_DIR,
    bundle: true,
    format: "iife",
    target: "es2020",
    charset: "utf8",
    write: false,
    logLevel: "silent",
  });
  const file = (name: string) => outputFiles.find((f) => path.basename(f.path) === name)!.text;
  return { "app.js": file("app.js"), "style.css": file("style.css") };
}

const hashOf = (body: string) => createHash("sha256").update(body).digest("base64url").slice(0, 16);
const asset = (path: string, type: string, body: string): ConsoleAsset => ({ path, type, body, hash: hashOf(body) });

/** The console's files from the bundle in `dir` when it is there (a build), else bundled now (the sources). */
export function loadConsole(dir = BUNDLE_DIR): ConsoleFiles {
  const built = BUNDLE_NAMES.every((name) => existsSync(path.join(dir, name)));
  const bundle = built
    ? (Object.fromEntries(BUNDLE_NAMES.map((n) => [n, readFileSync(path.join(dir, n), "utf8")])) as ConsoleBundle)
    : bundleConsole();
  const script = asset("/console/app.js", "application/javascript; charset=utf-8", bundle["app.js"]);
  const style = asset("/console/style.css", "text/css; charset=utf-8", bundle["style.css"]);
  const shell = consoleShell(script, style);
  return { assets: [script, style], shell, shellHash: hashOf(shell) };
}

let loaded: ConsoleFiles | undefined;
/** The console's files, loaded (or bundled) once per process, when the first server starts. */
export const consoleFiles = () => (loaded ??= loadConsole());

/** Only its own files, its own API; no inline code, no framing, no form posting anywhere. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const consoleShell = (script: ConsoleAsset, style: ConsoleAsset) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>jai-agent console</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${style.path}?v=${style.hash}">
<script src="${script.path}?v=${script.hash}" defer></script>
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
