/** The headless Chromium the browser tests and the UI screenshot use (Debian's, through playwright-core). */
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** No sandbox (root in CI), no GPU, nothing that reaches the network on its own. */
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Launches it (with any extra switches, e.g. --host-resolver-rules), or says how to install it. */
export async function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`No Chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run does), or set CHROMIUM_PATH`);
  return chromium.launch({ executablePath: CHROMIUM, args: [...ARGS, ...extraArgs] });
}
