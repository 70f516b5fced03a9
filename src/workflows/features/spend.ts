/**
 * A run's spend against its `budget` (issue #42): the part of `RunState` that this file alone writes. Tokens and
 * cost are the conversation's usage, which already holds every sub-agent's (sub-agent.ts adds a child's usage to
 * its parent's); tool calls are counted here, a child's included; time runs from the chain's first run.
 *
 * The checks (docs/budgets.md): before each model call, against the most that call may cost (the context as
 * estimated plus the model's `maxTokens` of output, at the model's prices); after each turn (its tool batch always
 * finishes); and a batch's calls past `maxToolCalls` are not run (they get an error result). Pure and
 * deterministic: workflow time only.
 */
import { msToNumber } from "@temporalio/common";
import type { Api, Model, Usage } from "@jai/ai";
import type { AgentBudget, BudgetLimit, BudgetSpend } from "../../shared/contracts.js";
import { formatCount } from "../../shared/payload-limits.js";
import type { ChildGrant, SpendCarry } from "../../shared/budget-checks.js";

/** A budget's limits as numbers; absent: no such limit. */
interface Limits {
  tokens?: number;
  costUsd?: number;
  toolCalls?: number;
  durationMs?: number;
}

function limitsOf(budget: AgentBudget | undefined): Limits | undefined {
  if (!budget) return undefined;
  return {
    ...(budget.maxTokens !== undefined ? { tokens: budget.maxTokens } : {}),
    ...(budget.maxCostUsd !== undefined ? { costUsd: budget.maxCostUsd } : {}),
    ...(budget.maxToolCalls !== undefined ? { toolCalls: budget.maxToolCalls } : {}),
    ...(budget.maxDuration !== undefined ? { durationMs: msToNumber(budget.maxDuration) } : {}),
  };
}

const usd = (n: number) => `$${n.toFixed(n < 1 ? 4 : 2)}`;

/** The most one model call may cost: the context as estimated, and the model's whole `maxTokens` of output. */
export function worstCall(model: Model<Api>, contextTokens: number): { tokens: number; costUsd: number } {
  const output = model.maxTokens || 0;
  const price = model.cost ?? { input: 0, output: 0 };
  return {
    tokens: contextTokens + output,
    costUsd: (contextTokens * (price.input || 0) + output * (price.output || 0)) / 1_000_000,
  };
}

export class Spend {
  /** The run's limits; undefined when the run has no budget (nothing here is then checked or carried). */
  limits?: Limits;
  /** Tool calls so far (the chain's), a child's included. */
  toolCalls = 0;
  /** When the chain's first run started (ms, workflow time). */
  startedAt = 0;
  /** The limit that ended the run, once one did. */
  exceeded?: BudgetLimit;
  /** What running sub-agents were granted of what is left (their spend is counted when they end). */
  reserved = { tokens: 0, costUsd: 0, toolCalls: 0 };

  /** The run starts with `budget` (a continued run: with what its chain spent so far). */
  start(budget: AgentBudget | undefined, carried: SpendCarry | undefined, now: number): void {
    this.limits = limitsOf(budget);
    this.toolCalls = carried?.toolCalls ?? 0;
    this.startedAt = carried?.startedAt ?? now;
  }

  get active(): boolean {
    return this.limits !== undefined;
  }

  /** What has been spent and what is left, for the `state` query and the result. */
  report(usage: Usage, now: number): BudgetSpend {
    const l = this.limits ?? {};
    const elapsedMs = Math.max(0, now - this.startedAt);
    const left = (limit: number | undefined, used: number) =>
      limit === undefined ? undefined : Math.max(0, limit - used);
    const entries = {
      tokens: left(l.tokens, usage.totalTokens),
      costUsd: left(l.costUsd, usage.cost.total),
      toolCalls: left(l.toolCalls, this.toolCalls),
      durationMs: left(l.durationMs, elapsedMs),
    };
    return {
      tokens: usage.totalTokens,
      costUsd: usage.cost.total,
      toolCalls: this.toolCalls,
      elapsedMs,
      left: Object.fromEntries(Object.entries(entries).filter(([, v]) => v !== undefined)),
    };
  }

  /**
   * Before a model call: the limit that call could pass (what is spent plus the most it may cost), if any.
   * Records it as the one that ended the run.
   */
  beforeCall(usage: Usage, now: number, worst: { tokens: number; costUsd: number }): BudgetLimit | undefined {
    const l = this.limits;
    if (!l) return undefined;
    const over: BudgetLimit | undefined =
      l.durationMs !== undefined && now - this.startedAt >= l.durationMs
        ? "maxDuration"
        : l.tokens !== undefined && usage.totalTokens + worst.tokens > l.tokens
          ? "maxTokens"
          : l.costUsd !== undefined && usage.cost.total + worst.costUsd > l.costUsd
            ? "maxCostUsd"
            : undefined;
    if (over) this.exceeded = over;
    return over;
  }

  /** A batch of `n` tool calls: how many of them may run (the rest are refused, and the run ends after the turn). */
  allowToolCalls(n: number): number {
    const max = this.limits?.toolCalls;
    const allowed = max === undefined ? n : Math.max(0, Math.min(n, max - this.toolCalls));
    this.toolCalls += allowed;
    if (allowed < n) this.exceeded = "maxToolCalls";
    return allowed;
  }

  /**
   * A sub-agent ended (`grant`: what childBudget gave it): its reservation is released and its tool calls count
   * here (its tokens and cost arrive with its usage, which the caller adds to the conversation).
   */
  childEnded(grant: ChildGrant | undefined, toolCalls: number): void {
    if (grant) {
      this.reserved = {
        tokens: this.reserved.tokens - grant.tokens,
        costUsd: this.reserved.costUsd - grant.costUsd,
        toolCalls: this.reserved.toolCalls - grant.toolCalls,
      };
    }
    this.toolCalls += toolCalls;
  }

  /** Why the run ended, for a person: the limit, what was spent and what the next call could have cost. */
  explain(limit: BudgetLimit, usage: Usage, now: number, worst?: { tokens: number; costUsd: number }): string {
    const l = this.limits ?? {};
    switch (limit) {
      case "maxTokens":
        return `Budget: maxTokens ${formatCount(l.tokens ?? 0)} reached (${formatCount(usage.totalTokens)} tokens spent; the next model call may use up to ${formatCount(worst?.tokens ?? 0)})`;
      case "maxCostUsd":
        return `Budget: maxCostUsd ${usd(l.costUsd ?? 0)} reached (${usd(usage.cost.total)} spent; the next model call may cost up to ${usd(worst?.costUsd ?? 0)})`;
      case "maxToolCalls":
        return `Budget: maxToolCalls ${formatCount(l.toolCalls ?? 0)} reached (the calls past it were not run)`;
      case "maxDuration":
        return `Budget: maxDuration ${formatCount(l.durationMs ?? 0)} ms reached (${formatCount(now - this.startedAt)} ms since the run started)`;
    }
  }

  /**
   * The budget a sub-agent gets: what is left of each limit, less what running children hold,
   * shared with the `others` sub-agent calls of the batch not granted yet; reserved until `childEnded`, so children
   * running at the same time can never spend more than is left between them. Undefined when this run has no budget.
   */
  childBudget(others: number, usage: Usage, now: number): { budget: AgentBudget; grant: ChildGrant } | undefined {
    if (!this.limits) return undefined;
    const { left } = this.report(usage, now);
    const share = 1 + Math.max(0, others);
    const part = (value: number | undefined, held: number, whole: boolean) => {
      if (value === undefined) return undefined;
      const free = Math.max(0, value - held) / share;
      return whole ? Math.floor(free) : free;
    };
    const tokens = part(left.tokens, this.reserved.tokens, true);
    const costUsd = part(left.costUsd, this.reserved.costUsd, false);
    const toolCalls = part(left.toolCalls, this.reserved.toolCalls, true);
    const grant = { tokens: tokens ?? 0, costUsd: costUsd ?? 0, toolCalls: toolCalls ?? 0 };
    this.reserved = {
      tokens: this.reserved.tokens + grant.tokens,
      costUsd: this.reserved.costUsd + grant.costUsd,
      toolCalls: this.reserved.toolCalls + grant.toolCalls,
    };
    const budget: AgentBudget = {
      // A child with nothing left of a limit still gets the smallest positive one: it ends at its first check.
      ...(tokens !== undefined ? { maxTokens: Math.max(1, tokens) } : {}),
      ...(costUsd !== undefined ? { maxCostUsd: Math.max(1e-9, costUsd) } : {}),
      ...(toolCalls !== undefined ? { maxToolCalls: toolCalls } : {}),
      ...(left.durationMs !== undefined ? { maxDuration: Math.max(1, left.durationMs) } : {}),
    };
    return { budget, grant };
  }

  /** What continue-as-new carries; undefined without a budget. */
  carry(): SpendCarry | undefined {
    return this.limits ? { toolCalls: this.toolCalls, startedAt: this.startedAt } : undefined;
  }
}
