/**
 * The contracts users write against: the seed's types (tools, results,
 * events) and the run's input, result and state. The wire types that cross
 * the activity boundary or continue-as-new (RunSetup, ToolSpec,
 * ModelContextRef, ContinuedRun, …) stay internal to src/types.ts.
 */
export type {
  AgentMessage,
  AgentToolResult,
  ToolUpdateCallback,
  ToolExecutionMode,
  AgentTool,
  AgentActivityOptions,
  ToolActivityOptions,
  RetryOptions,
  ToolResultLimits,
  SubAgentSpec,
  AgentEvent,
  AgentRunRef,
  AgentEventSink,
  ModelRef,
  AgentStopReason,
  AgentRunInput,
  ModelActivityOptions,
  AgentRunResult,
  DroppedMessage,
  AgentRunStatus,
  AgentRunState,
  PendingApproval,
  ApprovalDecision,
  PendingToolCall,
  PromptResult,
} from "./types.js";
