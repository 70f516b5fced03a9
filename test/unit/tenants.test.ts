/**
 * Tenants without a server (docs/tenants.md): the name check from an attacker's side (a tenant that would close
 * the quotes of a visibility query, over-long, control characters), the config check, which entry applies, and
 * the limiter's count under a burst of starts with a lagging visibility (a fake client: visibility shows a start
 * only after a delay, as a real store may).
 */
import { describe, expect, it, jest } from "@jest/globals";
import type { Client } from "@temporalio/client";
import { InvalidRunInputError, startAgentRun } from "../../src/client/client.js";
import {
  checkTenants,
  runningRunsQuery,
  tenantConfig,
  TenantLimitError,
  TenantLimiter,
  tenantProblem,
} from "../../src/shared/tenants.js";

/** A client no test may reach: the refusals come before anything is sent. */
const unreachable = new Proxy({} as Client, {
  get: (_t, name) => {
    throw new Error(`the client was used (${String(name)})`);
  },
});

const HOSTILE = [
  `a" OR AgentTenant="b`,
  `x") OR ("1"="1`,
  `acme' OR 1=1 --`,
  "a".repeat(65),
  "",
  " acme",
  "acme\n",
  "ac\u0000me",
  "ac\u001bme",
  "-acme",
  ".hidden",
  "ac me",
  "acmé",
  "ac\u202eme",
  "a/b",
  "a*",
];

describe("tenant names", () => {
  it.each(["acme", "a", "A-1_b.c", "0tenant", "t".repeat(64)])("%s is accepted", (name) => {
    expect(tenantProblem(name)).toBeUndefined();
    expect(runningRunsQuery(name)).toBe(
      `AgentTenant = "${name}" AND ExecutionStatus = "Running" AND ParentWorkflowId IS NULL`,
    );
  });

  it.each(HOSTILE)("%j is refused, and never reaches a visibility query", (name) => {
    expect(tenantProblem(name)).toMatch(/"tenant" must be 1-64 letters, digits/);
    expect(() => runningRunsQuery(name)).toThrow(/"tenant" must be/);
  });

  it("a tenant that is not a string is refused", () => {
    for (const value of [1, null, {}, ["acme"], true]) expect(tenantProblem(value)).toMatch(/must be a string/);
  });

  it.each(HOSTILE)(
    "startAgentRun refuses tenant %j with InvalidRunInputError before reaching the server",
    async (t) => {
      await expect(
        startAgentRun(unreachable, { model: "faux/x", prompt: "hi", tenant: t, taskQueue: "q" }),
      ).rejects.toThrow(InvalidRunInputError);
    },
  );

  it("the refusal quotes an over-long tenant cut short", async () => {
    const err = await startAgentRun(unreachable, { model: "faux/x", prompt: "hi", tenant: "x".repeat(10_000) }).catch(
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(InvalidRunInputError);
    expect((err as Error).message.length).toBeLessThan(300);
  });
});

describe("tenants config", () => {
  it("names the wrong field", () => {
    expect(() => checkTenants([])).toThrow(/tenants must be an object/);
    expect(() => checkTenants({ 'a"b': {} })).toThrow(/tenants\["a"b"\]: "tenant" must be/);
    expect(() => checkTenants({ acme: { maxConcurrentRuns: -1 } })).toThrow(/maxConcurrentRuns must be a non-negative/);
    expect(() => checkTenants({ acme: { maxConcurrentRuns: 1.5 } })).toThrow(/maxConcurrentRuns/);
    expect(() => checkTenants({ acme: { fairnessWeight: 0 } })).toThrow(/fairnessWeight must be a number from 0.001/);
    expect(() => checkTenants({ acme: { budget: 5 } })).toThrow(/"budget" must be an object/);
    expect(() => checkTenants({ acme: { maxRuns: 5 } })).toThrow(/unknown field "maxRuns"/);
    expect(checkTenants(undefined)).toEqual({});
    expect(checkTenants({ acme: { maxConcurrentRuns: 0 }, "*": { fairnessWeight: 2 } })).toBeTruthy();
  });

  it("a tenant's own entry, else the default, else none", () => {
    const tenants = { acme: { maxConcurrentRuns: 5 }, "*": { maxConcurrentRuns: 1 } };
    expect(tenantConfig(tenants, "acme")).toEqual({ maxConcurrentRuns: 5 });
    expect(tenantConfig(tenants, "other")).toEqual({ maxConcurrentRuns: 1 });
    expect(tenantConfig({ acme: {} }, "other")).toBeUndefined();
    expect(tenantConfig(undefined, "acme")).toBeUndefined();
    // An inherited property is no tenant.
    expect(tenantConfig({ acme: {} }, "constructor")).toBeUndefined();
  });
});

describe("TenantLimiter", () => {
  /**
   * Visibility shows a started run `lagMs` after its start, and an ended one as running until `closeLagMs` after
   * its end; describe sees both at once.
   */
  function fakeClient(lagMs: number, closeLagMs = 0) {
    const runs = new Map<string, { tenant: string; at: number; running: boolean; endedAt?: number }>();
    const describes: string[] = [];
    const visible = (query: string) => {
      const tenant = /AgentTenant = "([^"]+)"/.exec(query)![1];
      const listedRunning = (r: { running: boolean; endedAt?: number }) =>
        r.running || (r.endedAt !== undefined && Date.now() - r.endedAt < closeLagMs);
      return [...runs].filter(([, r]) => r.tenant === tenant && listedRunning(r) && Date.now() - r.at >= lagMs);
    };
    const client = {
      workflow: {
        count: async (query: string) => ({ count: visible(query).length }),
        list: ({ query }: { query: string }) =>
          (async function* () {
            for (const [workflowId] of visible(query)) yield { workflowId };
          })(),
        getHandle: (id: string) => ({
          describe: async () => {
            describes.push(id);
            return { status: { name: runs.get(id)?.running ? "RUNNING" : "COMPLETED" } };
          },
        }),
      },
    } as unknown as Client;
    let n = 0;
    const start = (tenant: string) => async () => {
      await new Promise((r) => setTimeout(r, 2));
      const workflowId = `run-${n++}`;
      runs.set(workflowId, { tenant, at: Date.now(), running: true });
      return { workflowId };
    };
    const end = (id: string) => Object.assign(runs.get(id)!, { running: false, endedAt: Date.now() });
    return { client, runs, start, end, describes };
  }

  it("a burst of 20 starts against a limit of 5 starts exactly 5, though visibility lags behind them", async () => {
    const { client, start } = fakeClient(60_000);
    const limiter = new TenantLimiter(client);
    const settled = await Promise.allSettled(Array.from({ length: 20 }, () => limiter.guard("acme", 5, start("acme"))));
    expect(settled.filter((s) => s.status === "fulfilled")).toHaveLength(5);
    const refused = settled.flatMap((s) => (s.status === "rejected" ? [s.reason as TenantLimitError] : []));
    expect(refused).toHaveLength(15);
    expect(refused[0]).toBeInstanceOf(TenantLimitError);
    expect(refused[0]).toMatchObject({ tenant: "acme", limit: "maxConcurrentRuns", max: 5, current: 5 });
    expect(refused[0].message).toMatch(/tenant "acme" is at its limit: maxConcurrentRuns 5 \(5 running\)/);
    // Another tenant has its own count.
    await expect(limiter.guard("other", 5, start("other"))).resolves.toBeTruthy();
  });

  it("a run that ended frees its place, visible or not", async () => {
    const { client, runs, start } = fakeClient(60_000);
    const limiter = new TenantLimiter(client);
    const first = await limiter.guard("acme", 1, start("acme"));
    await expect(limiter.guard("acme", 1, start("acme"))).rejects.toThrow(TenantLimitError);
    runs.get(first.workflowId)!.running = false;
    await expect(limiter.guard("acme", 1, start("acme"))).resolves.toBeTruthy();
  });

  it("a run this process started that ended a moment ago frees its place though visibility still lists it", async () => {
    const { client, start, end, describes } = fakeClient(0, 60_000);
    const limiter = new TenantLimiter(client);
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await limiter.guard("acme", 3, start("acme")));
    // Under the limit, the runs visibility lists cost no describe.
    expect(describes).toEqual([]);
    await expect(limiter.guard("acme", 3, start("acme"))).rejects.toThrow(TenantLimitError);
    end(runs[0].workflowId);
    await expect(limiter.guard("acme", 3, start("acme"))).resolves.toBeTruthy();
    // A run visibility still lists that this process did not start (or started long ago) is counted as listed.
    const other = new TenantLimiter(client);
    await expect(other.guard("acme", 3, start("acme"))).rejects.toThrow(/maxConcurrentRuns 3 \(4 running\)/);
  });

  it("forgets a tenant once its starts are older than the visibility grace: any number of names cannot grow it", async () => {
    const { client, start } = fakeClient(0);
    const limiter = new TenantLimiter(client);
    const now = Date.now();
    const clock = jest.spyOn(Date, "now");
    try {
      clock.mockReturnValue(now);
      for (let i = 0; i < 50; i++) await limiter.guard(`t${i}`, 5, start(`t${i}`));
      expect(limiter.remembered).toBe(50);
      clock.mockReturnValue(now + 11_000);
      await limiter.guard("late", 5, start("late"));
      expect(limiter.remembered).toBe(1);
    } finally {
      clock.mockRestore();
    }
  });

  it("maxConcurrentRuns 0 refuses every start", async () => {
    const { client, start } = fakeClient(0);
    await expect(new TenantLimiter(client).guard("acme", 0, start("acme"))).rejects.toThrow(/maxConcurrentRuns 0/);
  });

  it("a visibility store that cannot count says what the namespace lacks", async () => {
    const client = {
      workflow: {
        count: async () => {
          throw new Error("INVALID_ARGUMENT: invalid query: AgentTenant is not defined");
        },
      },
    } as unknown as Client;
    await expect(new TenantLimiter(client).guard("acme", 3, async () => ({ workflowId: "x" }))).rejects.toThrow(
      /cannot count the runs of tenant "acme".*search-attribute create --name AgentTenant/,
    );
  });
});
