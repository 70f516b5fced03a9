/**
 * The console's "Temporal UI ↗" link beside `npm run temporal` (issue 57 row 5): the dev server writes
 * 127.0.0.1:7233 in .jai/server.json, the worker process connects to localhost:7233 (TEMPORAL_ADDRESS's
 * default); the two name one server, so the link is there. Another port or host is another server: no link.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { devServerUiUrl, sameServerAddress } from "../../src/http/temporal-ui.js";

const cwd = mkdtempSync(path.join(os.tmpdir(), "jai-ui-link-"));
mkdirSync(path.join(cwd, ".jai"));
writeFileSync(
  path.join(cwd, ".jai", "server.json"),
  JSON.stringify({ address: "127.0.0.1:7233", uiUrl: "http://127.0.0.1:8233" }),
);
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describe("the dev server's UI link", () => {
  it("links the UI for the dev server's address however loopback is written", () => {
    for (const address of ["127.0.0.1:7233", "localhost:7233", "LOCALHOST:7233", "[::1]:7233", "127.0.1.1:7233"])
      expect({ address, ui: devServerUiUrl(address, cwd) }).toEqual({ address, ui: "http://127.0.0.1:8233" });
  });

  it("another port or a host off this machine is another server: no link", () => {
    for (const address of ["localhost:7234", "10.0.0.5:7233", "temporal.example.com:7233", "localhost", undefined])
      expect({ address, ui: devServerUiUrl(address, cwd) }).toEqual({ address, ui: undefined });
    expect(sameServerAddress("temporal.example.com:7233", "TEMPORAL.example.com:7233")).toBe(true);
  });
});
