/**
 * Chaos (issue 9, Tests): two worker processes; over and over, one is frozen
 * (SIGSTOP) past its heartbeat timeout and thawed, then the other is killed
 * (kill -9) and replaced, through a 20-turn run whose model reuses its
 * tool-call ids every turn. Every model call must have seen exactly the
 * recorded context, and the transcript must equal an uncrashed run's.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { contextMismatches } from "../support/context-check.js";
import {
  harnessDir,
  normalizeTranscript,
  readLog,
  runScenario,
  seenContexts,
  startChildWorker,
  startScenarioRun,
  waitFor,
  type ChildWorker,
  type HarnessDir,
} from "../support/crash/harness.js";
import { CHAOS_TURNS } from "../support/crash/scenario.js";
import { openTestEnv, type TestEnv } from "../support/helpers.js";

let env: TestEnv;
let files: HarnessDir;

const HEARTBEAT_MS = 2000;

const config = () => files.config("chaos", { slowMs: 700, tokensPerSecond: 150 });

beforeAll(async () => {
  env = await openTestEnv();
  files = await harnessDir("chaos");
}, 60000);

afterAll(async () => {
  await env?.close();
  await files?.remove();
});

/** The fault itself lasts this long (longer than the heartbeat timeout); it is not a wait for something to happen. */
const frozenFor = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("chaos", () => {
  it(`two workers, one frozen past its heartbeat timeout while the other is killed, again and again over ${CHAOS_TURNS} turns: 0 wrong contexts, the uncrashed transcript`, async () => {
    const baseline = await runScenario(env.client, config());
    expect(baseline.result.turns).toBe(CHAOS_TURNS);

    const cfg = config();
    const workers: ChildWorker[] = [await startChildWorker(cfg), await startChildWorker(cfg)];
    const handle = await startScenarioRun(env.client, cfg);
    let finished = false;
    const result = handle.result().finally(() => (finished = true));
    const faults = { frozen: 0, killed: 0 };
    /** Waits until `worker` does something new (a model call or a tool start), or the run ends. */
    const progressBy = async (worker: ChildWorker) => {
      const seen = readLog(cfg.logFile).length;
      await waitFor(
        () =>
          finished ||
          readLog(cfg.logFile)
            .slice(seen)
            .some((e) => e.pid === worker.pid && (e.event === "model_call" || e.event === "tool_start")),
        60000,
        `progress by ${worker.pid}`,
      );
    };
    try {
      for (let round = 0; !finished; round++) {
        const [freeze, kill] = round % 2 === 0 ? [0, 1] : [1, 0];
        await progressBy(workers[freeze]);
        if (finished) break;
        workers[freeze].pause();
        faults.frozen++;
        await frozenFor(HEARTBEAT_MS + 1000);
        workers[freeze].resume();
        await progressBy(workers[kill]);
        if (finished) break;
        await workers[kill].kill();
        faults.killed++;
        workers[kill] = await startChildWorker(cfg);
      }
      const final = await result;
      const log = readLog(cfg.logFile);
      const seen = seenContexts(log);
      expect(final.stopReason).toBe("stop");
      expect(normalizeTranscript(final.messages)).toEqual(normalizeTranscript(baseline.result.messages));
      expect(contextMismatches(seen, final.messages)).toEqual([]);
      expect(faults.frozen).toBeGreaterThanOrEqual(3);
      expect(faults.killed).toBeGreaterThanOrEqual(2);
      console.log(
        `chaos: ${CHAOS_TURNS} turns, ${faults.frozen} freezes past the heartbeat timeout, ${faults.killed} kill -9, ` +
          `${seen.length} model calls checked (${new Set(log.filter((e) => e.event === "model_call").map((e) => e.pid)).size} processes), wrong contexts=0, transcript equal`,
      );
    } finally {
      for (const w of workers) await w.kill();
    }
  }, 600000);
});
