/** The tool activity: validates and coerces arguments, then runs the tool's `execute` once. */
import { Context } from "@temporalio/activity";
import { CancelledFailure } from "@temporalio/common";
import { validateToolArguments } from "@jai/ai";
import type { AgentEventSink, AgentTool, AgentToolResult, ToolResultLimits } from "../../shared/contracts.js";
import type {
  ExecuteFastToolOutput,
  ExecuteToolInput,
  ExecuteToolOutput,
  PrepareToolOutput,
} from "../../shared/wire.js";
import { errorOutput } from "../../shared/tool-output.js";
import { boundFailure, capErrorText, capToolResult, keepErrorText, keepToolResult } from "./result-limits.js";
import { activityEmitter } from "./emit-events.js";
import { withHeartbeats } from "./heartbeat.js";

/** Checks what a tool returned and makes it plain JSON (it goes into history). */
export function normalizeToolResult(toolName: string, value: unknown): AgentToolResult {
  const result = value as AgentToolResult | undefined;
  if (typeof result !== "object" || result === null || !Array.isArray(result.content)) {
    throw new Error(`Tool ${toolName} returned an invalid result: expected { content: [...] }`);
  }
  for (const block of result.content) {
    const ok =
      (block?.type === "text" && typeof block.text === "string") ||
      (block?.type === "image" && typeof block.data === "string" && typeof block.mimeType === "string");
    if (!ok)
      throw new Error(`Tool ${toolName} returned an invalid content block: ${JSON.stringify(block)?.slice(0, 200)}`);
  }
  return JSON.parse(
    JSON.stringify({
      content: result.content,
      ...(result.details !== undefined ? { details: result.details } : {}),
      ...(result.terminate === true ? { terminate: true } : {}),
    }),
  ) as AgentToolResult;
}

/** The text of what a tool threw; never throws itself (a thrown value's getters or toString may). */
function errorText(err: unknown): string {
  try {
    return err instanceof Error ? String(err.message) : String(err);
  } catch {
    return "The tool threw a value that cannot be shown as text";
  }
}

const DEFAULT_GRACE_MS = 5000;

function validate(tool: AgentTool<any>, input: ExecuteToolInput): { args: unknown } | { error: string } {
  try {
    return {
      args: validateToolArguments(tool, {
        type: "toolCall",
        id: input.toolCallId,
        name: input.toolName,
        arguments: input.args,
      }),
    };
  } catch (err) {
    return { error: errorText(err) };
  }
}

/**
 * Resolves with `execution`, or rejects with a cancellation once the signal has
 * fired and the tool has not honoured it within the grace period: the call is
 * abandoned (JavaScript cannot stop it) and the activity reports cancellation.
 */
function withGrace<T>(execution: Promise<T>, signal: AbortSignal, graceMs: number, toolName: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const abandoned = new Promise<never>((_, reject) => {
    const start = () => {
      timer = setTimeout(
        () => reject(new CancelledFailure(`${toolName} ignored cancellation for ${graceMs} ms and was abandoned`)),
        graceMs,
      );
    };
    if (signal.aborted) start();
    else signal.addEventListener("abort", start, { once: true });
  });
  return Promise.race([execution, abandoned]).finally(() => clearTimeout(timer));
}

/** Told of every output `executeTool` returns (the model activity passes them by reference). */
export type ToolOutputListener = (input: ExecuteToolInput, output: ExecuteToolOutput) => void;

export function createToolActivities(
  tools: Map<string, AgentTool<any>>,
  onEvent: AgentEventSink | undefined,
  onOutput: ToolOutputListener = () => {},
  options: {
    /**
     * The worker has a blob store (External Storage): results and error texts up to this many bytes are kept whole,
     * the limits cutting only the model's copy (`modelContent`). Undefined: cut to the limits, as without a store.
     */
    keepBytes?: number;
  } = {},
) {
  const { keepBytes } = options;
  /** The output of a result: cut to the limits, or kept whole with the model's cut copy beside it. */
  const resultOutput = (result: AgentToolResult, limits: ToolResultLimits): ExecuteToolOutput => {
    if (keepBytes === undefined) return { result: capToolResult(result, limits), isError: false };
    const kept = keepToolResult(result, limits, keepBytes);
    return { result: kept.result, isError: false, ...(kept.modelContent ? { modelContent: kept.modelContent } : {}) };
  };
  /** The error output of what a tool threw, like resultOutput. */
  const errorTextOutput = (text: string, limits: ToolResultLimits): ExecuteToolOutput => {
    if (keepBytes === undefined) return errorOutput(capErrorText(text, limits));
    const kept = keepErrorText(text, limits, keepBytes);
    return {
      ...errorOutput(kept.text),
      ...(kept.modelText !== undefined ? { modelContent: [{ type: "text", text: kept.modelText }] } : {}),
    };
  };
  /** Validates the arguments and asks the tool's approval predicate (only for tools that have one). */
  async function prepareToolCall(input: ExecuteToolInput): Promise<PrepareToolOutput> {
    const tool = tools.get(input.toolName);
    if (!tool) return { error: `Tool ${input.toolName} not found`, needsApproval: false };
    const checked = validate(tool, input);
    if ("error" in checked) return { error: capErrorText(checked.error, input.limits), needsApproval: false };
    const rule = tool.requiresApproval;
    if (typeof rule !== "function") return { needsApproval: Boolean(rule) };
    // A predicate that fails asks a person rather than letting the call through.
    const decided = Promise.resolve()
      .then(() => rule(checked.args as never, input.toolCallId))
      .then(Boolean, () => true);
    // A predicate that never settles must not hold the worker (its shutdown waits for running activities).
    return {
      needsApproval: await withGrace(
        decided,
        Context.current().cancellationSignal,
        0,
        `${input.toolName}'s approval predicate`,
      ),
    };
  }

  async function executeTool(input: ExecuteToolInput): Promise<ExecuteToolOutput> {
    let output: ExecuteToolOutput;
    try {
      output = await runTool(input);
    } catch (err) {
      // Whatever fails the activity goes into history as a failure: bounded like a result.
      throw boundFailure(err, { ...input.limits, ...tools.get(input.toolName)?.resultLimits });
    }
    onOutput(input, output);
    // A retried call says so: an earlier attempt's worker stopped, and it may be the one holding the run's context.
    const { attempt } = Context.current().info;
    return { ...output, ...(attempt > 1 ? { attempt } : {}), ...(input.doneAt ? { doneAtMs: Date.now() } : {}) };
  }

  /** A fast tool's call as a local activity: the same execution, its output naming the call (see ExecuteFastToolOutput). */
  async function executeFastTool(input: ExecuteToolInput & { outputKey: string }): Promise<ExecuteFastToolOutput> {
    const output = await executeTool(input);
    return { ...output, toolCallId: input.toolCallId, toolName: input.toolName, outputKey: input.outputKey };
  }

  async function runTool(input: ExecuteToolInput): Promise<ExecuteToolOutput> {
    const tool = tools.get(input.toolName);
    if (!tool) return errorOutput(`Tool ${input.toolName} not found`);
    const checked = validate(tool, input);
    const limits = { ...input.limits, ...tool.resultLimits };
    if ("error" in checked) return errorOutput(capErrorText(checked.error, limits));
    const emit = activityEmitter(onEvent);
    return withHeartbeats(async (signal) => {
      let live = true;
      const onUpdate = (partial: AgentToolResult) => {
        if (!live) return;
        try {
          const capped = capToolResult(normalizeToolResult(input.toolName, partial), limits);
          emit({
            type: "tool_execution_update",
            toolCallId: input.toolCallId,
            toolName: input.toolName,
            partial: capped,
          });
        } catch {
          // A malformed progress report is dropped; the final result is what counts.
        }
      };
      try {
        const execution = Promise.resolve().then(() =>
          tool.execute(input.toolCallId, checked.args as never, signal, onUpdate),
        );
        const value = await withGrace(execution, signal, tool.cancelGracePeriodMs ?? DEFAULT_GRACE_MS, input.toolName);
        return resultOutput(normalizeToolResult(input.toolName, value), limits);
      } catch (err) {
        // A cancel reports only its (bounded) message: a tool's own CancelledFailure may carry anything in details.
        if (signal.aborted)
          throw new CancelledFailure(
            err instanceof CancelledFailure ? capErrorText(errorText(err), limits) : `${input.toolName} cancelled`,
          );
        // The model sees what the tool threw, cut like a result: an error too big for history would fail the call.
        return errorTextOutput(errorText(err), limits);
      } finally {
        live = false;
      }
    });
  }

  return { prepareToolCall, executeTool, executeFastTool };
}
