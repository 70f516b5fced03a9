/**
 * Scheduling of one batch of tool calls. Parallel calls start together; a
 * sequential call waits for every running call, runs alone, and the calls
 * after it wait for it. Unlike pi-agent-core, one sequential tool does not make
 * the whole batch sequential.
 */
import type { ToolExecutionMode } from "../types.js";

export interface BatchHooks<R> {
  /** Runs call `index`; never rejects (failures are results). */
  run(index: number): Promise<R>;
  /**
   * Called once per call, in source order, as soon as that call and every call
   * before it have settled: this is when a result may enter the transcript.
   */
  settledInOrder?(index: number, result: R): void;
}

/** Runs the calls with the given modes and returns their results in source order. */
export async function runToolBatch<R>(modes: ToolExecutionMode[], hooks: BatchHooks<R>): Promise<R[]> {
  const results: R[] = new Array(modes.length);
  const settled: boolean[] = modes.map(() => false);
  let nextInOrder = 0;
  const onSettled = (index: number, result: R) => {
    results[index] = result;
    settled[index] = true;
    while (nextInOrder < modes.length && settled[nextInOrder]) {
      hooks.settledInOrder?.(nextInOrder, results[nextInOrder]);
      nextInOrder++;
    }
  };
  const start = (index: number) => hooks.run(index).then((result) => onSettled(index, result));

  let running: Promise<void>[] = [];
  for (let index = 0; index < modes.length; index++) {
    if (modes[index] === "sequential") {
      await Promise.all(running);
      running = [];
      await start(index);
    } else {
      running.push(start(index));
    }
  }
  await Promise.all(running);
  return results;
}
