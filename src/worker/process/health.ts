/** `/healthz` (the process and its worker are alive), `/readyz` (polling for tasks) for orchestrators, `/metrics` for Prometheus. */
import { createServer, type Server } from "node:http";

export interface HealthProbe {
  /** False once the worker failed: restart the process. */
  healthy(): boolean;
  /** True while the worker polls; false while starting and draining. */
  ready(): boolean;
  /** Shown in the response body. */
  detail(): Record<string, unknown>;
  /** Prometheus text exposition for /metrics (absent: 404). */
  metrics?(): Promise<string>;
}

/**
 * Serves the probe on host:port; resolves with the server once it listens (port 0: any free one).
 * Loopback by default: the endpoints carry no auth, so widening them (JAI_HEALTH_HOST / --health-host 0.0.0.0,
 * as the image does for its orchestrator and Prometheus) is the operator's choice.
 */
export function serveHealth(probe: HealthProbe, port: number, host = "127.0.0.1"): Promise<Server> {
  const server = createServer((req, res) => {
    const route = (req.url ?? "").split("?")[0];
    if (route === "/metrics" && probe.metrics) {
      probe.metrics().then(
        (text) => res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }).end(text),
        (err: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`metrics failed: ${String(err)}\n`),
      );
      return;
    }
    const ok = route === "/healthz" ? probe.healthy() : route === "/readyz" ? probe.ready() : undefined;
    if (ok === undefined) {
      res
        .writeHead(404, { "content-type": "text/plain" })
        .end(`not found: try /healthz, /readyz${probe.metrics ? " or /metrics" : ""}\n`);
      return;
    }
    res
      .writeHead(ok ? 200 : 503, { "content-type": "application/json" })
      .end(JSON.stringify({ ok, ...probe.detail() }) + "\n");
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}
