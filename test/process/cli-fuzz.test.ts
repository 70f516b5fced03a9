/**
 * Every command of src/cli meets the ordinary mistakes (issue 57 row 4): `--help`, an unknown flag, a missing
 * argument, no server (a closed port in TEMPORAL_ADDRESS), no codec keys for an encrypted run, a bad value. Each
 * answers with its usage or one line naming the fix, exits non-zero where it failed (2 for usage), and never
 * prints a stack trace unless --debug asks. The programs run from the compiled sources (test/support/entry.ts),
 * all cases in a pool of four before the checks.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Client } from "@temporalio/client";
import { fauxAssistantMessage } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { dataConverterFromEnv } from "../../src/node/codec/config.js";
import { freePort } from "../../src/node/dev-server.js";
import { sharedBundle } from "../support/bundles.js";
import { jaiAgent, type ProgramOutput } from "../support/cli.js";
import { fauxModel, openTestEnv, testWorker, uniqueId, within, type TestEnv } from "../support/helpers.js";

const KEY = "FZ:" + Buffer.alloc(32, 9).toString("base64");
const STACK = /^\s+at .*\(/m;
const CONFIG = "test/fixtures/agents-config.ts";

/**
 * What a case must answer: "help" (exit 0, the usage on stdout), "usage" (exit 2, the mistake then the usage on
 * stderr), or a line (exit `code`, default 1: one line on stderr matching `line`).
 */
type Expect = "help" | "usage" | { line: RegExp; code?: number };
interface Case {
  args: string[];
  expect: Expect;
  /** "closed": TEMPORAL_ADDRESS is a port nothing listens on. */
  server?: "closed";
}

/** `{sealed}` in args: an encrypted run's id; `{closed}`: the closed port's address. */
const noServer: Expect = {
  line: /^no Temporal server at 127\.0\.0\.1:\d+ \(connection refused\): start one with `npm run temporal`, or point TEMPORAL_ADDRESS/,
};
const noRun = (code = 1): Expect => ({ line: /^no run "nope-\w+" in /, code });
const noKeys: Expect = { line: /key "FZ".*JAI_CODEC_KEYS/ };

const RUNS_COMMANDS: [string, string[]][] = [
  ["state", ["nope-1"]],
  ["approve", ["nope-1", "call-1"]],
  ["deny", ["nope-1", "call-1"]],
  ["tool-result", ["nope-1", "call-1", "{}"]],
  ["policy", ["nope-1", '{"default":"ask"}']],
  ["steer", ["nope-1", "hi"]],
  ["follow-up", ["nope-1", "hi"]],
  ["prompt", ["nope-1", "hi"]],
  ["cancel", ["nope-1"]],
];
const SCHEDULE_IDS = ["describe", "pause", "unpause", "trigger", "delete"];

const CASES: [string, Case][] = [
  // jai-agent itself
  ["jai-agent --help", { args: ["--help"], expect: "help" }],
  ["jai-agent (no command)", { args: [], expect: "usage" }],
  ["jai-agent bogus", { args: ["bogus"], expect: "usage" }],
  // runs and its siblings (src/cli/runs.ts)
  ["runs --help", { args: ["runs", "--help"], expect: "help" }],
  ["runs --bogus", { args: ["runs", "--bogus"], expect: "usage" }],
  ["runs --limit (missing value)", { args: ["runs", "--limit"], expect: "usage" }],
  ["runs --limit x", { args: ["runs", "--limit", "x"], expect: "usage" }],
  ["runs --status bogus", { args: ["runs", "--status", "bogus"], expect: "usage" }],
  ["runs (no server)", { args: ["runs"], expect: noServer, server: "closed" }],
  ...RUNS_COMMANDS.flatMap(([name, good]): [string, Case][] => [
    [`${name} --help`, { args: [name, "--help"], expect: "help" }],
    [`${name} --bogus`, { args: [name, ...good, "--bogus"], expect: "usage" }],
    [`${name} (missing argument)`, { args: [name], expect: "usage" }],
    [`${name} (no server)`, { args: [name, ...good], expect: noServer, server: "closed" }],
    [`${name} (no such run)`, { args: [name, ...good], expect: noRun() }],
  ]),
  ["approve id (no call id)", { args: ["approve", "nope-1"], expect: "usage" }],
  ["tool-result (not JSON)", { args: ["tool-result", "nope-1", "c", "{oops"], expect: "usage" }],
  ["policy (bad policy)", { args: ["policy", "nope-1", '{"default":"maybe"}'], expect: "usage" }],
  ["state (no keys)", { args: ["state", "{sealed}"], expect: noKeys }],
  // watch
  ["watch --help", { args: ["watch", "--help"], expect: "help" }],
  ["watch --bogus", { args: ["watch", "nope-1", "--bogus"], expect: "usage" }],
  ["watch (missing id)", { args: ["watch"], expect: "usage" }],
  ["watch --url (missing value)", { args: ["watch", "nope-1", "--url"], expect: "usage" }],
  ["watch (no server)", { args: ["watch", "nope-1"], expect: noServer, server: "closed" }],
  ["watch (no such run)", { args: ["watch", "nope-1"], expect: noRun() }],
  ["watch (no keys)", { args: ["watch", "{sealed}"], expect: noKeys }],
  // show
  ["show --help", { args: ["show", "--help"], expect: "help" }],
  ["show --bogus", { args: ["show", "nope-1", "--bogus"], expect: "usage" }],
  ["show (missing id)", { args: ["show"], expect: "usage" }],
  ["show (no server)", { args: ["show", "nope-1"], expect: noServer, server: "closed" }],
  ["show (no such run)", { args: ["show", "nope-1"], expect: noRun() }],
  ["show (no keys)", { args: ["show", "{sealed}"], expect: noKeys }],
  // schedule and its subcommands
  ["schedule --help", { args: ["schedule", "--help"], expect: "help" }],
  ["schedule (no command)", { args: ["schedule"], expect: "usage" }],
  ["schedule bogus", { args: ["schedule", "bogus"], expect: "usage" }],
  ["schedule list --bogus", { args: ["schedule", "list", "--bogus"], expect: "usage" }],
  ["schedule list (no server)", { args: ["schedule", "list"], expect: noServer, server: "closed" }],
  ["schedule create --help", { args: ["schedule", "create", "--help"], expect: "help" }],
  [
    "schedule create --promt",
    {
      args: ["schedule", "create", "s1", "--model", "demo/offline-scripted", "--promt", "hi", "--every", "1h"],
      expect: "usage",
    },
  ],
  [
    "schedule create (missing --every)",
    { args: ["schedule", "create", "s1", "--model", "demo/offline-scripted", "--prompt", "hi"], expect: "usage" },
  ],
  [
    "schedule create --every nope",
    {
      args: [
        "schedule",
        "create",
        uniqueId("fz"),
        "--model",
        "demo/offline-scripted",
        "--prompt",
        "hi",
        "--every",
        "nope",
      ],
      expect: "usage",
    },
  ],
  [
    "schedule create (no server)",
    {
      args: ["schedule", "create", "s1", "--model", "demo/offline-scripted", "--prompt", "hi", "--every", "1h"],
      expect: noServer,
      server: "closed",
    },
  ],
  ...SCHEDULE_IDS.flatMap((name): [string, Case][] => [
    [`schedule ${name} --help`, { args: ["schedule", name, "--help"], expect: "help" }],
    [`schedule ${name} (missing id)`, { args: ["schedule", name], expect: "usage" }],
    [
      `schedule ${name} (no such schedule)`,
      { args: ["schedule", name, "nope-1"], expect: { line: /^no schedule "nope-1" in this namespace/ } },
    ],
  ]),
  // replay
  ["replay --help", { args: ["replay", "--help"], expect: "help" }],
  ["replay --bogus", { args: ["replay", "nope-1", "--bogus"], expect: "usage" }],
  ["replay (missing id)", { args: ["replay"], expect: "usage" }],
  ["replay --file (missing value)", { args: ["replay", "--file"], expect: "usage" }],
  [
    "replay --file (no such file)",
    {
      args: ["replay", "--file", "/nonexistent/history.json"],
      expect: { line: /^cannot replay .*nonexistent/, code: 2 },
    },
  ],
  [
    "replay (no server)",
    {
      args: ["replay", "nope-1"],
      expect: { line: /no Temporal server at 127\.0\.0\.1:\d+/, code: 2 },
      server: "closed",
    },
  ],
  ["replay (no keys)", { args: ["replay", "{sealed}"], expect: { line: /encrypted.*JAI_CODEC_KEYS/, code: 2 } }],
  // start, and start --agent (src/cli/start-agent.ts)
  ["start --help", { args: ["start", "--help"], expect: "help" }],
  ["start --bogus", { args: ["start", "--bogus", "hello"], expect: "usage" }],
  ["start (missing prompt)", { args: ["start"], expect: "usage" }],
  ["start --budget x", { args: ["start", "--budget", "x", "hello"], expect: "usage" }],
  ["start --tenant (bad name)", { args: ["start", "--tenant", "no spaces", "hello"], expect: "usage" }],
  ["start (no server)", { args: ["start", "hello"], expect: noServer, server: "closed" }],
  ["start --agent --help", { args: ["start", "--agent", "reviewer", "--help"], expect: "help" }],
  ["start --agent --bogus", { args: ["start", "--agent", "reviewer", "--bogus", "hi"], expect: "usage" }],
  ["start --agent (missing prompt)", { args: ["start", "--agent", "reviewer", "--config", CONFIG], expect: "usage" }],
  [
    "start --agent (unknown agent)",
    { args: ["start", "--agent", "nobody", "--config", CONFIG, "hi"], expect: "usage" },
  ],
  [
    "start --agent (no server)",
    { args: ["start", "--agent", "reviewer", "--config", CONFIG, "hi"], expect: noServer, server: "closed" },
  ],
  // the worker process
  ["worker --help", { args: ["worker", "--help"], expect: "help" }],
  ["worker --bogus", { args: ["worker", "--bogus"], expect: "usage" }],
  ["worker --http-port (missing value)", { args: ["worker", "--http-port"], expect: "usage" }],
  [
    "worker --max-activities x",
    {
      args: ["worker", "--max-activities", "x"],
      expect: { line: /--max-activities must be a non-negative integer, got "x"/ },
    },
  ],
  ["worker (no server)", { args: ["worker", "--no-demo-model"], expect: noServer, server: "closed" }],
  // codec-server, bundle, temporal: refused before they start anything
  ["codec-server --help", { args: ["codec-server", "--help"], expect: "help" }],
  ["codec-server --bogus", { args: ["codec-server", "--bogus"], expect: "usage" }],
  ["codec-server --port (missing value)", { args: ["codec-server", "--port"], expect: "usage" }],
  ["codec-server (no keys)", { args: ["codec-server"], expect: "usage" }],
  ["bundle --help", { args: ["bundle", "--help"], expect: "help" }],
  ["bundle --bogus", { args: ["bundle", "--bogus"], expect: "usage" }],
  ["temporal --help", { args: ["temporal", "--help"], expect: "help" }],
  ["temporal --bogus", { args: ["temporal", "--bogus"], expect: "usage" }],
  ["temporal --port x", { args: ["temporal", "--port", "x"], expect: "usage" }],
];

let env: TestEnv;
let stopWorker: (() => Promise<void>) | undefined;
const results = new Map<string, ProgramOutput>();
let debugRun: ProgramOutput;
let codecServerBadPort: ProgramOutput;

/** Runs `jobs` at most `limit` at a time. */
async function pool<T>(jobs: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < jobs.length) {
        const i = next++;
        out[i] = await jobs[i]();
      }
    }),
  );
  return out;
}

beforeAll(async () => {
  env = await openTestEnv();
  // An encrypted run that completed: what `watch`, `show`, `state` and `replay` meet without the keys.
  const dataConverter = dataConverterFromEnv({ JAI_CODEC_KEYS: KEY })!;
  const { worker, taskQueue } = await testWorker(env, [], {
    dataConverter,
    workflowBundle: await sharedBundle("encrypted-failures"),
  });
  // It keeps serving (queries of the sealed run) until the cases ran.
  const running = worker.run();
  stopWorker = async () => {
    worker.shutdown();
    await running;
  };
  const client = new Client({ connection: env.client.connection, dataConverter });
  const faux = fauxModel([fauxAssistantMessage("sealed answer")]);
  const sealed = await startAgentRun(client, {
    taskQueue,
    workflowId: uniqueId("fz-sealed"),
    model: faux.getModel(),
    prompt: "a secret",
  });
  await within(sealed.result(), 180_000, "the sealed run");
  const closed = `127.0.0.1:${await freePort()}`;
  const fill = (args: string[]) => args.map((a) => a.replace("{sealed}", sealed.workflowId));
  const jobs = CASES.map(([name, c]) => async () => {
    results.set(name, await jaiAgent(fill(c.args), c.server === "closed" ? { TEMPORAL_ADDRESS: closed } : {}));
  });
  jobs.push(async () => {
    debugRun = await jaiAgent(["watch", "nope-1", "--debug"], { TEMPORAL_ADDRESS: closed });
  });
  jobs.push(async () => {
    codecServerBadPort = await jaiAgent(["codec-server", "--port", "x"], { JAI_CODEC_KEYS: KEY });
  });
  await pool(jobs, 4);
}, 600_000); // a bound against a hang: 130 CLI processes, 4 at a time, took past 120 s on an overloaded machine

afterAll(async () => {
  await stopWorker?.();
  await env?.close();
});

describe("every command, every ordinary mistake: usage or one line, never a stack trace", () => {
  it.each(CASES)("%s", (_name, c) => {
    const out = results.get(_name)!;
    const all = `${out.stdout}\n${out.stderr}`;
    const seen = { code: out.code, stdout: out.stdout.slice(0, 400), stderr: out.stderr.slice(0, 600) };
    expect({ stack: STACK.test(all) || /triggerUncaughtException|node:internal/.test(all), ...seen }).toEqual({
      stack: false,
      ...seen,
    });
    if (c.expect === "help") {
      expect(seen).toEqual({ ...seen, code: 0, stderr: "" });
      expect(out.stdout).toMatch(/^usage: /m);
    } else if (c.expect === "usage") {
      expect(seen).toEqual({ ...seen, code: 2 });
      const [first, ...rest] = out.stderr.trim().split("\n");
      expect(first).not.toMatch(/^usage:/); // the mistake comes first, in one line
      expect(rest.join("\n")).toMatch(/^usage: /m);
    } else {
      expect(seen).toEqual({ ...seen, code: c.expect.code ?? 1 });
      // A note the command emits on the way (one line each, "note: …") may come before the failure's line.
      const lines = out.stderr
        .trim()
        .split("\n")
        .filter((l) => !l.startsWith("note: "));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(c.expect.line);
    }
  });

  it("--debug adds the stack trace", () => {
    expect(debugRun.code).toBe(1);
    expect(debugRun.stderr.split("\n")[0]).toMatch(/^no Temporal server at /);
    expect(debugRun.stderr).toMatch(STACK);
  });

  it("codec-server --port x with keys: one line naming the flag, exit 2", () => {
    expect(codecServerBadPort.code).toBe(2);
    expect(codecServerBadPort.stderr.trim()).toBe('codec-server: --port must be a port number, got "x"');
  });
});
