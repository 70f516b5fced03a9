/**
 * Replay debugging: run a recorded history against the current workflow code
 * and report whether it is still deterministic, and where it diverges if not.
 */
import { readFile } from "node:fs/promises";
import { historyFromJSON } from "@temporalio/common/lib/proto-utils.js";
import type { temporal } from "@temporalio/proto";
import { Worker } from "@temporalio/worker";
import { bundleAgentWorkflows } from "./worker.js";

export type History = temporal.api.history.v1.IHistory;

export interface ReplayOutcome {
  /** Events in the history. */
  events: number;
  /** Set when the current code does not reproduce the history. */
  error?: { message: string; eventId?: number; nondeterminism: boolean };
}

/** Reads a history exported by the Temporal UI or `temporal workflow show --output json`. */
export async function readHistoryFile(file: string): Promise<History> {
  const json = JSON.parse(await readFile(file, "utf8")) as { events?: unknown[] } | unknown[];
  return historyFromJSON(Array.isArray(json) ? { events: json } : json);
}

/** The event id a nondeterminism message points at, when it names one. */
export function divergentEventId(message: string): number | undefined {
  const match = /event(?:[ _]?id)?[^0-9]{0,12}(\d+)/i.exec(message);
  return match ? Number(match[1]) : undefined;
}

/** Replays one history; never throws for a divergence, it reports it. */
export async function replayHistory(history: History, workflowId = "replay", bundle?: { code: string }): Promise<ReplayOutcome> {
  const events = history.events?.length ?? 0;
  try {
    await Worker.runReplayHistory({ workflowBundle: bundle ?? (await bundleAgentWorkflows()) }, history, workflowId);
    return { events };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const nondeterminism = (err as Error)?.name === "DeterminismViolationError" || /nondetermin/i.test(message);
    return { events, error: { message, eventId: divergentEventId(message), nondeterminism } };
  }
}
