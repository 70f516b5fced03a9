/** `/healthz` (the process and its worker are alive) and `/readyz` (polling for tasks) for orchestrators. */
import { createServer, type Server } from "node:http";

export interface HealthProbe {
  /** False once the worker failed: restart the process. */
  healthy(): boolean;
  /** True while the worker polls; false while starting and draining. */
  ready(): boolean;
  /** Shown in the response body. */
  detail(): Record<string, unknown>;
}

/** Serves the probe on host:port; resolves with the server once it listens (port 0: any free one). */
export function serveHealth(probe: HealthProbe, port: number, host = "0.0.0.0"): Promise<Server> {
  const server = createServer((req, res) => {
    const route = (req.url ?? "").split("?")[0];
    const ok = route === "/healthz" ? probe.healthy() : route === "/readyz" ? probe.ready() : undefined;
    if (ok === undefined) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: try /healthz or /readyz\n");
      return;
    }
    res.writeHead(ok ? 200 : 503, { "content-type": "application/json" }).end(JSON.stringify({ ok, ...probe.detail() }) + "\n");
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}
