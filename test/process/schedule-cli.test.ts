/**
 * `jai-agent schedule` as a person uses it (issue 57 row 9): `create` refuses a mistyped model before anything is
 * created, naming the nearest known one, and takes a model the workers' config module declares (--config);
 * `describe` prints what the schedule is made of (its spec, the run it starts: prompt, model, tools), its next
 * firings and its latest runs, for a schedule made by the CLI and for one made with the SDK (whose cron the server
 * keeps only as calendars).
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { jaiAgent } from "../support/cli.js";
import { openTestEnv, uniqueId, within, type TestEnv } from "../support/helpers.js";

let env: TestEnv;
const made: string[] = [];
beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  for (const id of made)
    await env.client.schedule
      .getHandle(id)
      .delete()
      .catch(() => undefined);
  await env?.close();
});

const exists = (id: string) =>
  env.client.schedule
    .getHandle(id)
    .describe()
    .then(
      () => true,
      () => false,
    );

describe("schedule create checks the model", () => {
  it("refuses a mistyped model or provider with the nearest name, creating nothing; takes a config module's model", async () => {
    const [typo, provider, fromConfig] = await Promise.all(
      [
        ["anthropic/claude-sonet-4-5"],
        ["antropic/claude-sonnet-4-5"],
        ["agents-fixture/model-1", "--config", "test/fixtures/agents-config.ts"],
      ].map(async ([model, ...more]) => {
        const id = uniqueId("sched-model");
        made.push(id);
        const out = await jaiAgent([
          "schedule",
          "create",
          id,
          "--model",
          model,
          "--prompt",
          "hi",
          "--every",
          "1h",
          "--paused",
          ...more,
        ]);
        return { id, out };
      }),
    );
    expect(typo.out.code).toBe(2);
    expect(typo.out.stderr.split("\n")[0]).toBe(
      'unknown model "anthropic/claude-sonet-4-5": "anthropic" has no model "claude-sonet-4-5" in @jai/ai\'s catalogue (did you mean "anthropic/claude-sonnet-4-5"?); a model only your workers\' config module declares: name the module with --config',
    );
    expect(await exists(typo.id)).toBe(false);
    expect(provider.out.code).toBe(2);
    expect(provider.out.stderr).toContain('no provider "antropic"');
    expect(provider.out.stderr).toContain('did you mean "anthropic/claude-sonnet-4-5"?');
    expect(await exists(provider.id)).toBe(false);
    expect(fromConfig.out.stderr).toBe("");
    expect(fromConfig.out.code).toBe(0);
    expect(await exists(fromConfig.id)).toBe(true);
  }, 120_000);
});

describe("schedule describe", () => {
  it("prints its spec, the run it starts, its next firings and its latest runs", async () => {
    const id = uniqueId("sched-describe");
    made.push(id);
    // A queue no worker polls: the triggered run waits there (and is terminated at the end).
    const taskQueue = uniqueId("sched-q");
    const created = await jaiAgent([
      "schedule",
      "create",
      id,
      "--model",
      "demo/offline-scripted",
      "--prompt",
      "Summarize the workspace\nin three lines",
      "--cron",
      "0 9 * * MON-FRI",
      "--tools",
      "read_file,list_dir",
      "--max-turns",
      "5",
      "--task-queue",
      taskQueue,
    ]);
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    expect((await jaiAgent(["schedule", "trigger", id])).code).toBe(0);
    // The firing is recorded once the schedule's workflow took it.
    let out = "";
    for (const until = Date.now() + 30_000; Date.now() < until; ) {
      out = (await jaiAgent(["schedule", "describe", id])).stdout;
      if (/recent: {3}\S/.test(out)) break;
    }
    const lines = out.trim().split("\n");
    expect(lines[0]).toBe(`schedule ${id}: active`);
    expect(lines[1]).toBe('  when:     cron "0 9 * * MON-FRI" (UTC); overlap skip');
    expect(lines[2]).toBe(
      `  starts:   model demo/offline-scripted on task queue "${taskQueue}"; tools read_file, list_dir; max turns 5`,
    );
    expect(lines[3]).toBe("  prompt:   Summarize the workspace in three lines");
    expect(lines[4]).toMatch(/^ {2}next: {5}(\d{4}-\d\d-\d\dT09:00:00\.000Z(, )?){5}$/);
    const recent = /^ {2}recent: {3}\S+ {2}(\S+) {2}(running|completed|failed|terminated)$/.exec(lines[5]);
    expect(recent?.[1]).toMatch(new RegExp(`^${id}-`));
    expect(lines.at(-1)).toMatch(/^ {2}created \S+; 1 run\(s\) started$/);
    await env.client.workflow
      .getHandle(recent![1])
      .terminate("test over")
      .catch(() => undefined);

    const json = JSON.parse((await jaiAgent(["schedule", "describe", id, "--json"])).stdout);
    expect(json).toMatchObject({
      scheduleId: id,
      spec: { cron: ["0 9 * * MON-FRI"], intervals: [] },
      taskQueue,
      overlap: "skip",
      input: { model: "demo/offline-scripted", tools: ["read_file", "list_dir"], maxTurns: 5 },
    });
  }, 120_000);

  it("a schedule made with the SDK: its cron read back from the server's calendars, its interval in words", async () => {
    const id = uniqueId("sched-sdk");
    made.push(id);
    await env.client.schedule.create({
      scheduleId: id,
      spec: { cronExpressions: ["30 6 1 * *"], intervals: [{ every: "90m" }], timezone: "Europe/Paris" },
      action: {
        type: "startWorkflow",
        workflowType: "agentRun",
        args: [{ model: "demo/offline-scripted", prompt: "hello" }],
        taskQueue: "nobody",
        workflowId: id,
      },
      state: { paused: true, note: "made by hand" },
    });
    const out = await within(jaiAgent(["schedule", "describe", id]), 60_000, "describe");
    expect(out.code).toBe(0);
    const lines = out.stdout.trim().split("\n");
    expect(lines.slice(0, 4)).toEqual([
      `schedule ${id}: paused (note: made by hand)`,
      '  when:     cron "30 6 1 * *"; every 90m (Europe/Paris); overlap skip',
      `  starts:   model demo/offline-scripted on task queue "nobody"; tools all the worker's`,
      "  prompt:   hello",
    ]);
    expect(lines).toContain("  next:     - (paused)");
    expect(lines).toContain("  recent:   - (no run yet)");
  }, 60_000);
});
