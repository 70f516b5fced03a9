/** `/healthz` (the process and its worker are alive), `/readyz` (polling for tasks) for orchestrators, `/metrics` for Prometheus. */
import type { Server } from "node:http";
import { createHttpApp } from "../../http/app.js";

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
 * as the image does for its orchestrator and Prometheus) is the operator's choice. The HTTP app's guard still
 * holds: a `Host` other than loopback names and the bound addresses (orchestrators and Prometheus call by
 * address) or `allowedHosts` is refused (DNS rebinding), and so is another site's page.
 */
export async function serveHealth(
  probe: HealthProbe,
  port: number,
  host = "127.0.0.1",
  allowedHosts: readonly string[] = (process.env.JAI_HEALTH_ALLOWED_HOSTS ?? "").split(",").filter(Boolean),
): Promise<Server> {
  const http = createHttpApp({ hosts: "served", allowedHosts, origins: "same-origin" });
  const { app } = http;
  for (const [route, check] of Object.entries({ "/healthz": () => probe.healthy(), "/readyz": () => probe.ready() }))
    app.get(route, async (_req, reply) => {
      const ok = check();
      return reply.code(ok ? 200 : 503).send({ ok, ...probe.detail() });
    });
  if (probe.metrics) {
    const metrics = probe.metrics;
    // A failure is the app's answer: 500 with a reference, the message in the log.
    app.get("/metrics", async (_req, reply) => {
      const text = await metrics();
      return reply.type("text/plain; version=0.0.4; charset=utf-8").send(text);
    });
  }
  app.setNotFoundHandler((_req, reply) =>
    reply
      .code(404)
      .type("text/plain")
      .send(`not found: try /healthz, /readyz${probe.metrics ? " or /metrics" : ""}\n`),
  );
  await http.listen(host, port);
  return app.server;
}
