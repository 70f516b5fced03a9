export default async function globalTeardown() {
  await globalThis.__temporalDevServer?.stop();
}
