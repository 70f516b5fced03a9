import { rmSync } from "node:fs";

export default async function globalTeardown() {
  await globalThis.__temporalDevServer?.stop();
  if (process.env.JAI_TEST_BUNDLES) rmSync(process.env.JAI_TEST_BUNDLES, { recursive: true, force: true });
  if (process.env.JAI_TEST_JS) rmSync(process.env.JAI_TEST_JS, { recursive: true, force: true });
}
