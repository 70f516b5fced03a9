/**
 * Tenants (docs/tenants.md): who a run is for. `startAgentRun({ tenant })`, `POST /runs { tenant }` and
 * `jai-agent start --tenant` put it on the run twice: the `AgentTenant` search attribute (find and count a
 * tenant's runs) and Temporal's priority `fairnessKey` (a server with fairness on dispatches each tenant's tasks in
 * proportion to its weight, so one tenant's flood does not starve the others). Activities and child workflows
 * (sub-agents) inherit the workflow's priority on the server; sub-agents also carry the search attribute.
 *
 * Optional per-tenant limits (`tenants` in the config module, or startAgentRun's `tenants` option), enforced at
 * start: `maxConcurrentRuns` (a visibility count, see `TenantLimiter`) and a default `budget`.
 */
import { budgetProblem } from "./budget-checks.js";
import type { Client } from "@temporalio/client";
import type { AgentBudget } from "./contracts.js";
import { AgentTenant } from "./search-attributes.js";

/**
 * A tenant name: 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit. Keyword-safe: it can
 * never close the quotes of a visibility query, and it fits Temporal's 64-byte fairness key.
 */
export const TENANT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** What a tenant may do; every field optional. */
export interface TenantConfig {
  /**
   * Most top-level runs of the tenant running at once (sub-agents run inside their parent and do not count).
   * Over it, a start is refused with TenantLimitError (HTTP 429). Approximate across processes: see docs/tenants.md.
   */
  maxConcurrentRuns?: number;
  /** The budget a run of the tenant gets when its caller gives none (a caller's own budget is kept as given). */
  budget?: AgentBudget;
  /**
   * Temporal's fairness weight of the tenant's tasks (0.001-1000, default 1): with fairness on, a tenant of
   * weight 2 gets twice the dispatches of one of weight 1 when both have a backlog.
   */
  fairnessWeight?: number;
}

/** Per-tenant settings by tenant name; `"*"` applies to every tenant not named (a run without a tenant has none). */
export type TenantsConfig = Record<string, TenantConfig>;

/** A start refused because its tenant is at a limit; nothing was started. HTTP: 429. */
export class TenantLimitError extends Error {
  constructor(
    readonly tenant: string,
    /** The limit reached, e.g. "maxConcurrentRuns". */
    readonly limit: "maxConcurrentRuns",
    /** The limit's value. */
    readonly max: number,
    /** What the tenant has now (running runs). */
    readonly current: number,
  ) {
    super(
      `tenant "${tenant}" is at its limit: maxConcurrentRuns ${max} (${current} running); start again once one ends`,
    );
    this.name = "TenantLimitError";
  }
}

/** Why `tenant` is not a valid tenant name, or undefined. */
export function tenantProblem(tenant: unknown): string | undefined {
  if (typeof tenant !== "string") return `"tenant" must be a string, got ${tenant === null ? "null" : typeof tenant}`;
  if (!TENANT_NAME.test(tenant))
    return `"tenant" must be 1-64 letters, digits, ".", "_" or "-" (starting with a letter or digit), got ${JSON.stringify(tenant.length > 80 ? `${tenant.slice(0, 80)}…` : tenant)}`;
  return undefined;
}

/** Checks a `tenants` config; a wrong field is named (the worker then refuses to start, not the first caller). */
export function checkTenants(tenants: unknown, where = "tenants"): TenantsConfig {
  if (tenants === undefined) return {};
  if (typeof tenants !== "object" || tenants === null || Array.isArray(tenants))
    throw new Error(
      `${where} must be an object of tenant name (or "*") to { maxConcurrentRuns?, budget?, fairnessWeight? }`,
    );
  for (const [name, config] of Object.entries(tenants as Record<string, unknown>)) {
    const at = `${where}["${name}"]`;
    if (name !== "*" && tenantProblem(name)) throw new Error(`${at}: ${tenantProblem(name)}`);
    if (typeof config !== "object" || config === null || Array.isArray(config))
      throw new Error(`${at} must be an object`);
    const c = config as Record<string, unknown>;
    const unknown = Object.keys(c).filter((k) => !["maxConcurrentRuns", "budget", "fairnessWeight"].includes(k));
    if (unknown.length) throw new Error(`${at}: unknown field ${unknown.map((k) => `"${k}"`).join(", ")}`);
    if (
      c.maxConcurrentRuns !== undefined &&
      !(Number.isInteger(c.maxConcurrentRuns) && (c.maxConcurrentRuns as number) >= 0)
    )
      throw new Error(`${at}.maxConcurrentRuns must be a non-negative integer`);
    const budget = budgetProblem(c.budget);
    if (budget) throw new Error(`${at}: ${budget}`);
    const w = c.fairnessWeight;
    if (w !== undefined && !(typeof w === "number" && w >= 0.001 && w <= 1000))
      throw new Error(`${at}.fairnessWeight must be a number from 0.001 to 1000`);
  }
  return tenants as TenantsConfig;
}

/** The settings of `tenant`: its own entry, else `"*"`'s, else none. */
export function tenantConfig(tenants: TenantsConfig | undefined, tenant: string): TenantConfig | undefined {
  if (!tenants) return undefined;
  return Object.hasOwn(tenants, tenant) ? tenants[tenant] : Object.hasOwn(tenants, "*") ? tenants["*"] : undefined;
}

/** The visibility query of a tenant's running top-level runs. Only for a name `tenantProblem` accepts. */
export function runningRunsQuery(tenant: string): string {
  if (tenantProblem(tenant)) throw new Error(tenantProblem(tenant));
  return `${AgentTenant.name} = "${tenant}" AND ExecutionStatus = "Running" AND ParentWorkflowId IS NULL`;
}

/**
 * How long a run started here is counted from memory rather than visibility: visibility records a start
 * asynchronously (on a SQL store within milliseconds to about a second), so a count right after a start may miss it.
 */
export const VISIBILITY_GRACE_MS = 10_000;

/**
 * Enforces `maxConcurrentRuns` for the starts of one client: per tenant, one check-and-start at a time (in this
 * process), counting the tenant's running runs in visibility plus the runs started here in the last
 * VISIBILITY_GRACE_MS that visibility may not show yet. Exact for one process's starts; across processes,
 * another process's starts within the visibility lag can go unseen (docs/tenants.md, "How exact the limit is").
 */
export class TenantLimiter {
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly recent = new Map<string, Map<string, number>>();

  constructor(private readonly client: Client) {}

  /** Runs `start` if `tenant` has fewer than `max` runs running; else throws TenantLimitError. */
  async guard<T extends { workflowId: string }>(tenant: string, max: number, start: () => Promise<T>): Promise<T> {
    const before = this.queues.get(tenant) ?? Promise.resolve();
    const turn = before
      .catch(() => undefined)
      .then(async () => {
        const current = await this.running(tenant, max);
        if (current >= max) throw new TenantLimitError(tenant, "maxConcurrentRuns", max, current);
        const started = await start();
        this.recentOf(tenant).set(started.workflowId, Date.now());
        return started;
      });
    this.queues.set(tenant, turn);
    try {
      return await turn;
    } finally {
      if (this.queues.get(tenant) === turn) this.queues.delete(tenant);
    }
  }

  private recentOf(tenant: string): Map<string, number> {
    // Every tenant's old starts go, and a tenant with none is forgotten: callers may name any number of tenants.
    const now = Date.now();
    for (const [name, starts] of this.recent) {
      for (const [id, at] of starts) if (now - at > VISIBILITY_GRACE_MS) starts.delete(id);
      if (starts.size === 0) this.recent.delete(name);
    }
    let map = this.recent.get(tenant);
    if (!map) this.recent.set(tenant, (map = new Map()));
    return map;
  }

  /** Tenants with starts still within the visibility grace (what the limiter holds in memory). */
  get remembered(): number {
    return this.recent.size;
  }

  /** Running runs of the tenant (at most `max` + recent are listed when recent starts must be told apart). */
  private async running(tenant: string, max: number): Promise<number> {
    const query = runningRunsQuery(tenant);
    const recent = this.recentOf(tenant);
    try {
      if (recent.size === 0) return (await this.client.workflow.count(query)).count;
      // Visibility lags both ways for the starts of this process: a new run may not be listed yet, and a run that
      // just ended may still be listed as running. For those runs describe (which reads the run, not visibility)
      // has the last word; the others are counted as visibility lists them.
      const listed = new Set<string>();
      for await (const run of this.client.workflow.list({ query, pageSize: Math.min(1000, max + recent.size) })) {
        listed.add(run.workflowId);
        if (listed.size >= max + recent.size) break;
      }
      let others = 0;
      for (const id of listed) if (!recent.has(id)) others++;
      if (others >= max) return others;
      // Which of `ids` still run (describe reads the run, not visibility); the ended ones are forgotten.
      const stillRunning = async (ids: string[]) => {
        const up = await Promise.all(
          ids.map((id) =>
            this.client.workflow
              .getHandle(id)
              .describe()
              .then((d) => d.status.name === "RUNNING")
              .catch(() => false),
          ),
        );
        for (const [i, id] of ids.entries()) if (!up[i]) recent.delete(id);
        return ids.filter((_, i) => up[i]).length;
      };
      // The unlisted ones always (a start visibility has not recorded yet); the listed ones only when they would
      // make a refusal (an end visibility has not recorded yet), so a start under the limit costs no describe.
      const mine = [...recent.keys()];
      const listedMine = mine.filter((id) => listed.has(id));
      const unlistedUp = await stillRunning(mine.filter((id) => !listed.has(id)));
      if (others + listedMine.length + unlistedUp < max) return others + listedMine.length + unlistedUp;
      return others + (await stillRunning(listedMine)) + unlistedUp;
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new Error(
        `cannot count the runs of tenant "${tenant}" to enforce its maxConcurrentRuns (${why}); ` +
          `the namespace needs the ${AgentTenant.name} search attribute: temporal operator search-attribute create --name ${AgentTenant.name} --type Keyword`,
        { cause: err },
      );
    }
  }
}

const limiters = new WeakMap<Client, TenantLimiter>();

/** The limiter of a client (one per client, so every start through it is serialised per tenant). */
export function tenantLimiter(client: Client): TenantLimiter {
  let limiter = limiters.get(client);
  if (!limiter) limiters.set(client, (limiter = new TenantLimiter(client)));
  return limiter;
}
