/**
 * The worker's context cache (issue 17): bounded in bytes, and runs taking
 * turns in rotation past its capacity do not make every call miss (they do
 * under LRU). Driven directly, with a stand-in for the `modelContext` query.
 */
import { describe, expect, it } from "@jest/globals";
import { ContextCache } from "../../src/worker/activities/context-cache.js";
import type { AgentMessage } from "../../src/shared/contracts.js";

const KB = 1024;

/** Recorded contexts per run, served page by page like the `modelContext` query. */
function fakeWorkflows() {
  const recorded = new Map<string, AgentMessage[]>();
  const client = {
    workflow: {
      getHandle: (workflowId: string) => ({
        query: async (_q: unknown, page: { offset: number; limit: number }) => {
          const messages = recorded.get(workflowId)!;
          return { epoch: 0, total: messages.length, messages: messages.slice(page.offset, page.offset + page.limit) };
        },
      }),
    },
  };
  return { recorded, client: client as never };
}

const user = (text: string): AgentMessage => ({ role: "user", content: text, timestamp: 1 });
const reply = (text: string, ended = false): AgentMessage =>
  ({
    role: "assistant",
    content: ended ? [{ type: "text", text }] : [{ type: "toolCall", id: text, name: "t", arguments: {} }],
    api: "faux",
    provider: "faux",
    model: "m",
    usage: {} as never,
    stopReason: ended ? "stop" : "toolUse",
    timestamp: 2,
  }) as AgentMessage;
const result = (id: string, bytes: number): AgentMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName: "t",
  content: [{ type: "text", text: "r".repeat(bytes) }],
  isError: false,
  timestamp: 3,
});

/**
 * `runs` runs take `turns` turns each in strict rotation (the worst case for LRU), every
 * turn adding a `resultBytes` tool result; as the loop does: resolve the call, remember it with the reply.
 */
async function rotate(cache: ContextCache, runs: number, turns: number, resultBytes: number, check?: () => void) {
  const { recorded, client } = fakeWorkflows();
  (cache as unknown as { client: () => unknown }).client = () => client;
  for (let r = 0; r < runs; r++) recorded.set(`w${r}`, [user(`go ${r}`)]);
  const known = new Map<string, number>();
  for (let turn = 0; turn < turns; turn++) {
    for (let r = 0; r < runs; r++) {
      const id = `w${r}`;
      const context = recorded.get(id)!;
      const base = known.get(id) ?? 0;
      const messages = await cache.resolve(
        { workflowId: id, runId: "1" },
        { epoch: 0, base, append: context.slice(base) },
      );
      expect(messages).toEqual(context);
      const answer = reply(`c${turn}`, turn === turns - 1);
      cache.remember({ workflowId: id, runId: "1" }, 0, [...messages, answer], turn === turns - 1);
      context.push(answer, result(`c${turn}`, resultBytes));
      known.set(id, context.length - 1);
      check?.();
    }
  }
}

describe("the context cache", () => {
  it("stays within its byte budget, whatever the runs hold", async () => {
    const cache = new ContextCache(() => undefined, { maxBytes: 200 * KB });
    let peak = 0;
    await rotate(cache, 30, 10, 2 * KB, () => (peak = Math.max(peak, cache.stats.bytes)));
    expect(peak).toBeLessThanOrEqual(200 * KB);
    expect(cache.stats.evictions).toBeGreaterThan(0);
  });

  it("runs in rotation past its capacity: a stable share of them keeps hitting (LRU would miss every call)", async () => {
    // 60 runs of ~8 KB a turn for 20 turns need ~10 MB at the end; the cache holds a fifth of that.
    const cache = new ContextCache(() => undefined, { maxBytes: 2 * 1024 * KB });
    await rotate(cache, 60, 20, 8 * KB);
    const stats = cache.stats;
    expect(stats.lookups).toBe(60 * 20);
    // Turn 1 has nothing to look up (base 0). Measured: ~56% of the rest hit; LRU ~17% (all of it before the set outgrew the cache).
    expect(stats.hitRate).toBeGreaterThan(0.45);
    const lru = await lruHitRate(60, 20, 8 * KB, 2 * 1024 * KB);
    expect(lru).toBeLessThan(0.25);
    console.log(
      `rotation of 60 runs over a cache of a fifth of their contexts: hit rate ${(stats.hitRate * 100).toFixed(0)}% (LRU ${(lru * 100).toFixed(0)}%)`,
    );
  });

  it("hits every call when the working set fits, and counts query bytes only for misses", async () => {
    const cache = new ContextCache(() => undefined, { maxBytes: 64 * 1024 * KB });
    await rotate(cache, 20, 10, 8 * KB);
    expect(cache.stats).toMatchObject({ misses: 0, queries: 0, queryBytes: 0, evictions: 0, runs: 20 });
    expect(cache.stats.hits).toBe(20 * 9);
  });

  it("gives up runs whose loop ended before active ones", async () => {
    const cache = new ContextCache(() => undefined, { maxBytes: 100 * KB });
    const run = (id: string) => ({ workflowId: id, runId: "1" });
    cache.remember(run("done"), 0, [user("a"), result("x", 40 * KB), reply("bye", true)], true);
    cache.remember(run("busy"), 0, [user("b"), result("y", 40 * KB), reply("more")]);
    cache.remember(run("new"), 0, [user("c"), result("z", 30 * KB), reply("more")]);
    expect(cache.stats.runs).toBe(2);
    const { recorded, client } = fakeWorkflows();
    (cache as unknown as { client: () => unknown }).client = () => client;
    recorded.set("busy", [user("b"), result("y", 40 * KB), reply("more")]);
    await cache.resolve(run("busy"), { epoch: 0, base: 3, append: [] });
    expect(cache.stats.hits).toBe(1);
  });

  it("a zero budget caches nothing: every call reads its context from the workflow", async () => {
    const cache = new ContextCache(() => undefined, { maxBytes: 0 });
    await rotate(cache, 3, 3, KB);
    expect(cache.stats).toMatchObject({ hits: 0, misses: 6, runs: 0, bytes: 0 });
    expect(cache.stats.queryBytes).toBeGreaterThan(0);
  });
});

/** The same rotation through a byte-bounded LRU, for comparison. */
async function lruHitRate(runs: number, turns: number, resultBytes: number, maxBytes: number): Promise<number> {
  const lru = new Map<string, number>();
  const sizes = new Map<string, number>();
  let bytes = 0;
  let hits = 0;
  let lookups = 0;
  for (let turn = 0; turn < turns; turn++) {
    for (let r = 0; r < runs; r++) {
      const id = `w${r}`;
      if (turn > 0) {
        lookups++;
        if (lru.has(id)) hits++;
      }
      const size = (turn + 1) * (resultBytes + 200);
      bytes -= sizes.get(id) ?? 0;
      lru.delete(id);
      lru.set(id, size);
      sizes.set(id, size);
      bytes += size;
      while (bytes > maxBytes) {
        const [oldest, s] = lru.entries().next().value!;
        lru.delete(oldest);
        sizes.delete(oldest);
        bytes -= s;
      }
    }
  }
  return hits / lookups;
}
