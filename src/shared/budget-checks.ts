/** A run input's `budget` checked (pure: the client, the workflow, the agents' and tenants' configs ask it). */
import { msToNumber } from "@temporalio/common";
import type { BudgetLimit } from "./contracts.js";
import { isObject } from "./plain-object.js";

/** What continue-as-new carries of the spend (tokens and cost travel with the usage). */
export interface SpendCarry {
  /** Tool calls so far, a child's included. */
  toolCalls: number;
  /** When the chain's first run started (ms, workflow time). */
  startedAt: number;
}

/** What a running sub-agent holds of its parent's budget. */
export interface ChildGrant {
  tokens: number;
  costUsd: number;
  toolCalls: number;
}

/** The fields of `AgentBudget`, as the run input names them. */
const BUDGET_FIELDS: Record<BudgetLimit, true> = {
  maxTokens: true,
  maxCostUsd: true,
  maxToolCalls: true,
  maxDuration: true,
};

/** The first problem of a run input's `budget`, or undefined when it is usable. */
export function budgetProblem(budget: unknown): string | undefined {
  if (budget === undefined) return undefined;
  if (!isObject(budget)) return `"budget" must be an object like { maxTokens, maxCostUsd, maxToolCalls, maxDuration }`;
  for (const [key, value] of Object.entries(budget)) {
    if (!(key in BUDGET_FIELDS))
      return `"budget.${key}" is not a budget limit (limits: ${Object.keys(BUDGET_FIELDS).join(", ")})`;
    if (value === undefined) continue;
    if (key === "maxDuration") {
      let ms: number;
      try {
        ms = typeof value === "number" || typeof value === "string" ? msToNumber(value as never) : NaN;
      } catch {
        ms = NaN;
      }
      if (!Number.isFinite(ms) || ms <= 0)
        return `"budget.maxDuration" must be a positive duration (milliseconds, or a string like "10m"), got ${JSON.stringify(value)}`;
    } else if (key === "maxCostUsd") {
      if (typeof value !== "number" || !Number.isFinite(value) || value <= 0)
        return `"budget.maxCostUsd" must be a positive number of US dollars`;
    } else if (key === "maxToolCalls") {
      if (typeof value !== "number" || !Number.isInteger(value) || value < 0)
        return `"budget.maxToolCalls" must be a non-negative integer (0: no tool calls)`;
    } else if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
      return `"budget.${key}" must be a positive integer`;
    }
  }
  return undefined;
}
