/**
 * Scheduling of one batch of tool calls. Parallel calls start together; a
 * sequential call waits for every running call, runs alone, and the calls
 * after it wait for it. Unlike pi-agent-core, one sequential tool does not make
 * the whole batch sequential.
 *
 * The batch splits into groups: each run of consecutive parallel calls is one
 * group, each sequential call a group of its own. A group is what pi-agent-core
 * calls a batch: every call reports when it finishes, and only when the whole
 * group has finished are its results handed over, in source order. So an
 * all-parallel batch behaves as pi's parallel batch and an all-sequential one
 * as pi's sequential batch (each call's result right after it finishes).
 */
import type { ToolExecutionMode } from "../shared/contracts.js";

export interface BatchHooks<R> {
  /** Runs call `index`; never rejects (failures are results). */
  run(index: number): Promise<R>;
  /** Called as each call finishes, in the order they finish: when a UI may show it as done. */
  finished?(index: number, result: R): void;
  /**
   * Called once per group, after all of its calls finished, with their indices
   * in source order: this is when results enter the transcript.
   */
  groupFinished?(indices: number[], results: R[]): void;
}

/**
 * Runs the calls with the given modes and returns their results in source order.
 *
 * Promise chains, not an async function: a replay pays a captured stack trace
 * for every promise the workflow made, so a batch makes few (one per call and
 * two per group).
 */
export function runToolBatch<R>(modes: ToolExecutionMode[], hooks: BatchHooks<R>): Promise<R[]> {
  const results: R[] = new Array(modes.length);
  // Each sequential call is a group of its own; consecutive parallel calls share one.
  const groups: number[][] = [];
  modes.forEach((mode, index) => {
    const last = groups[groups.length - 1];
    if (mode === "sequential" || !last || modes[last[0]] === "sequential") groups.push([index]);
    else last.push(index);
  });
  const runGroup = (group: number[]): Promise<void> =>
    Promise.all(
      group.map((index) =>
        hooks.run(index).then((result) => {
          results[index] = result;
          hooks.finished?.(index, result);
        }),
      ),
    ).then(() =>
      hooks.groupFinished?.(
        group,
        group.map((i) => results[i]),
      ),
    );
  // The first group starts now; each next one when the one before it has finished.
  let done: Promise<void> | undefined;
  for (const group of groups) done = done ? done.then(() => runGroup(group)) : runGroup(group);
  return done ? done.then(() => results) : Promise.resolve(results);
}
