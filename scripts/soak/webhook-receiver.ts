/**
 * The soak's completion-webhook receiver: a plain HTTP server on a loopback port of the soak process, as a
 * customer's receiver would be. It verifies each delivery's signature (HMAC-SHA256 of the raw body, compared in
 * constant time, as docs/reach.md says), keeps every delivery it accepted, and refuses the first attempt of about
 * one delivery in eight with a 503 so the worker's retries, and deduplication by the delivery id, are exercised.
 *
 * The workers reach it only because their config allows it the documented way: the secret `soak` bound to this
 * receiver's origin (JAI_WEBHOOK_SECRET_SOAK, JAI_WEBHOOK_ORIGINS_SOAK) and `webhooks.allowPrivateHosts` (a
 * loopback receiver is a private host).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { timingSafeEqual } from "node:crypto";
import {
  DELIVERY_HEADER,
  SIGNATURE_HEADER,
  signWebhookBody,
  type RunOutcome,
} from "../../src/worker/webhooks/deliver.js";
import type { RunRecord } from "./workload.js";

/** The secret's name in the worker config and in each run's `webhook`. */
export const WEBHOOK_SECRET_NAME = "soak";
const REFUSE_FIRST_SHARE = 1 / 8;

export interface Delivery {
  id: string;
  outcome: RunOutcome;
  signed: boolean;
  t: number;
}

export interface WebhookReceiver {
  url: string;
  origin: string;
  deliveries: Delivery[];
  /** First attempts answered 503 on purpose. */
  refused: number;
  close(): Promise<void>;
}

export async function startWebhookReceiver(secret: string): Promise<WebhookReceiver> {
  const deliveries: Delivery[] = [];
  const attempted = new Set<string>();
  const state = { refused: 0 };
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const id = String(req.headers[DELIVERY_HEADER] ?? "");
      if (!attempted.has(id) && Math.random() < REFUSE_FIRST_SHARE) {
        attempted.add(id);
        state.refused++;
        res.writeHead(503).end();
        return;
      }
      attempted.add(id);
      const expected = Buffer.from(signWebhookBody(body.toString("utf8"), secret));
      const given = Buffer.from(String(req.headers[SIGNATURE_HEADER] ?? ""));
      const signed = given.length === expected.length && timingSafeEqual(given, expected);
      let outcome: RunOutcome;
      try {
        outcome = JSON.parse(body.toString("utf8")) as RunOutcome;
      } catch {
        res.writeHead(400).end();
        return;
      }
      // Kept even when the signature is wrong, so the check names it instead of waiting for a missing delivery.
      deliveries.push({ id, outcome, signed, t: Date.now() });
      res.writeHead(signed ? 204 : 401).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return {
    url: `${origin}/hooks/soak`,
    origin,
    deliveries,
    get refused() {
      return state.refused;
    },
    async close() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

export interface WebhookReport {
  /** Ended runs that asked for a webhook. */
  runs: number;
  /** Deliveries accepted (repeats included), distinct delivery ids, first attempts refused on purpose. */
  deliveries: number;
  distinct: number;
  refused: number;
  /** Deliveries of an id already accepted: a worker retried after its answer was lost (deduplicated). */
  duplicates: number;
  violations: { run: string; what: string }[];
}

/**
 * Every ended run that asked for a webhook got at least one delivery, all under one delivery id
 * (`<workflowId>/<last run id>`), each signed and naming that run, its last run and its final status; a run
 * that did not ask got none.
 */
export function checkWebhooks(receiver: WebhookReceiver, runs: RunRecord[]): WebhookReport {
  const byWorkflow = new Map<string, Delivery[]>();
  for (const d of receiver.deliveries)
    byWorkflow.set(d.outcome.workflowId, [...(byWorkflow.get(d.outcome.workflowId) ?? []), d]);
  const ids = new Set(receiver.deliveries.map((d) => d.id));
  const report: WebhookReport = {
    runs: 0,
    deliveries: receiver.deliveries.length,
    distinct: ids.size,
    refused: receiver.refused,
    duplicates: receiver.deliveries.length - ids.size,
    violations: [],
  };
  const known = new Set(runs.map((r) => r.id));
  for (const [wf, got] of byWorkflow)
    if (!known.has(wf))
      report.violations.push({ run: wf, what: `webhook: ${got.length} deliveries naming no soak run` });
  for (const run of runs) {
    const got = byWorkflow.get(run.id) ?? [];
    const bad = (what: string) => report.violations.push({ run: run.id, what: `webhook: ${what}` });
    if (!run.webhook) {
      if (got.length) bad(`${got.length} deliveries for a run that asked for none`);
      continue;
    }
    if (!run.stopReason) continue; // not ended: the run's own check says so
    report.runs++;
    if (got.length === 0) {
      bad("no delivery for an ended run that asked for one");
      continue;
    }
    const status = run.scenario === "cancel" ? "cancelled" : "completed";
    const wanted = `${run.id}/${run.finalRunId}`;
    for (const d of got) {
      const o = d.outcome;
      if (!d.signed) bad(`delivery ${d.id} has no valid signature`);
      if (d.id !== wanted) bad(`delivery id ${d.id}, expected ${wanted} (the chain's last run)`);
      if (o.runId !== run.finalRunId) bad(`delivery names run ${o.runId}, the chain's last run is ${run.finalRunId}`);
      if (o.status !== status || o.stopReason !== run.stopReason)
        bad(`delivery says ${o.status}/${o.stopReason}, the run ended ${status}/${run.stopReason}`);
    }
  }
  return report;
}
