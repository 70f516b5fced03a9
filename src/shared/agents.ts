/**
 * Named agents: a config module declares them once (`agents: [...]` in jai.config), and every way of starting a
 * run accepts them by name: the console's "New run" form, `POST /runs { agent, prompt }`, and code
 * (`agentRunOptions`). An agent fixes what a run may do (model, system prompt, tools, session or one-shot,
 * approval policy); a caller adds the prompt and only the overrides the agent allows, so a person at the console
 * cannot widen it, at start or later (the policy is the run's floor).
 */
import type { Duration } from "@temporalio/common";
import type { AgentBudget, AgentRunInput, ApprovalPolicy } from "./contracts.js";
import { approvalPolicyProblem } from "./approval-rules.js";
import { budgetProblem } from "./budget-checks.js";

/** One agent of the registry. Plain data: the run input it stands for, plus what a caller may change. */
export interface AgentDefinition {
  /** How callers name it: letters, digits, "-", "_", ".", 1-64 characters. */
  name: string;
  /** One or two lines for the console's "New run" form. */
  description?: string;
  /** `"provider/modelId"` as the worker serves it (its `models` or the catalogue). */
  model: string;
  systemPrompt?: string;
  /**
   * Names of the worker's tools the agent's runs may call, MCP tools included (`<server>__<tool>`); default all.
   * Which of them wait for a person is the tools' own `requiresApproval`, unless `approvalPolicy` says otherwise.
   */
  tools?: string[];
  /**
   * The default approval policy of the agent's runs (docs/policies.md): rules on tool names (globs, MCP names
   * included) that allow, ask, deny or leave it to the tool. A caller starting the agent by name cannot replace it,
   * and it is the floor of the agent's runs (`approvalPolicyFloor`): `setApprovalPolicy` on a running run may only
   * add restrictions, `remember` never runs a call it denies, and its runs' sub-agents inherit it. Without one, the
   * floor is `{ default: "tool" }`: no one switches off a tool's own `requiresApproval`.
   * @default none: each tool's own `requiresApproval` decides
   */
  approvalPolicy?: ApprovalPolicy;
  /** A session (waits for prompts after each answer) or one-shot (default). */
  session?: boolean | { idleTimeout?: Duration };
  maxTurns?: number;
  /**
   * What each of its runs may spend at most (docs/budgets.md); a caller cannot change it.
   * @default none (a tenant's default budget, if any, applies)
   */
  budget?: AgentBudget;
  /**
   * Models that take a call when `model` cannot (its provider down, overloaded, rate-limited, the model gone), in
   * order: the run's `model` is then the chain `[model, ...fallbacks]` (docs/budgets.md#model-fallbacks).
   * @default none
   */
  fallbacks?: string[];
  /** Approval timeout of its tools that require approval; default: wait forever. */
  approvalTimeout?: Duration;
  /** Task queue of the workers that serve it; default the server's. */
  taskQueue?: string;
  /** What a caller may change, and to what; nothing else is accepted from them. */
  overrides?: {
    /** Other models a caller may pick (besides `model`). */
    models?: string[];
    /** A caller may replace the system prompt. */
    systemPrompt?: boolean;
    /** A caller may pick a subset of `tools`. */
    tools?: boolean;
  };
}

/** A start request by agent name: the prompt and any overrides. */
export interface AgentRunRequest {
  agent: string;
  prompt: string;
  model?: string;
  systemPrompt?: string;
  tools?: string[];
  workflowId?: string;
  /** Who the run is for (docs/tenants.md): its search attribute and fairness key; the tenants' limits apply. */
  tenant?: string;
}

/** A refused request (unknown agent, an override it does not allow): the HTTP API answers 400 with the message. */
export class AgentRequestError extends Error {}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The floor of an agent without a policy: each tool's own `requiresApproval`, which a caller cannot switch off. */
const AGENT_DEFAULT_FLOOR: ApprovalPolicy = { default: "tool" };

/** Checks a config's agents; a wrong field is named (the worker then refuses to start, not the first caller). */
export function checkAgents(agents: unknown, where = "agents"): AgentDefinition[] {
  if (agents === undefined) return [];
  if (!Array.isArray(agents)) throw new Error(`${where} must be an array of agent definitions`);
  const seen = new Set<string>();
  for (const [i, a] of agents.entries()) {
    const at = `${where}[${i}]`;
    if (typeof a !== "object" || a === null) throw new Error(`${at} must be an object`);
    const agent = a as AgentDefinition;
    if (typeof agent.name !== "string" || !NAME.test(agent.name))
      throw new Error(`${at}.name must be 1-64 letters, digits, ".", "_" or "-", got ${JSON.stringify(agent.name)}`);
    if (seen.has(agent.name)) throw new Error(`${at}.name "${agent.name}" is declared twice`);
    seen.add(agent.name);
    if (typeof agent.model !== "string" || !agent.model.includes("/"))
      throw new Error(`${at}.model must be "provider/modelId"`);
    if (agent.tools !== undefined && (!Array.isArray(agent.tools) || agent.tools.some((t) => typeof t !== "string")))
      throw new Error(`${at}.tools must be an array of tool names`);
    if (agent.approvalPolicy !== undefined) {
      const problem = approvalPolicyProblem(agent.approvalPolicy, `${at}.approvalPolicy`);
      if (problem) throw new Error(problem);
    }
    const budget = budgetProblem(agent.budget);
    if (budget) throw new Error(`${at}: ${budget}`);
    if (
      agent.fallbacks !== undefined &&
      (!Array.isArray(agent.fallbacks) ||
        agent.fallbacks.length > 4 ||
        agent.fallbacks.some((m) => typeof m !== "string" || !m.includes("/")))
    )
      throw new Error(`${at}.fallbacks must be an array of at most 4 "provider/modelId"`);
    const models = agent.overrides?.models;
    if (models !== undefined && (!Array.isArray(models) || models.some((m) => typeof m !== "string")))
      throw new Error(`${at}.overrides.models must be an array of "provider/modelId"`);
  }
  return agents as AgentDefinition[];
}

/** What the console shows of an agent: nothing a caller could not learn by starting it. */
export function describeAgent(agent: AgentDefinition) {
  return {
    name: agent.name,
    description: agent.description ?? "",
    model: agent.model,
    models: [agent.model, ...(agent.overrides?.models ?? []).filter((m) => m !== agent.model)],
    tools: agent.tools,
    session: agent.session !== undefined && agent.session !== false,
    overrides: {
      model: (agent.overrides?.models?.length ?? 0) > 0,
      systemPrompt: agent.overrides?.systemPrompt === true,
      tools: agent.overrides?.tools === true && agent.tools !== undefined,
    },
  };
}

/** The run input for a request by name; throws AgentRequestError for an unknown agent or a refused override. */
export function agentRunOptions(
  agents: readonly AgentDefinition[],
  request: AgentRunRequest,
): AgentRunInput & { taskQueue?: string; workflowId?: string; tenant?: string } {
  const agent = agents.find((a) => a.name === request.agent);
  if (!agent)
    throw new AgentRequestError(
      `no agent "${request.agent}"${agents.length ? ` (configured: ${agents.map((a) => a.name).join(", ")})` : " (the config declares none)"}`,
    );
  if (typeof request.prompt !== "string" || request.prompt.trim() === "")
    throw new AgentRequestError("a prompt is required");
  let model = agent.model;
  if (request.model !== undefined && request.model !== agent.model) {
    if (!agent.overrides?.models?.includes(request.model))
      throw new AgentRequestError(`agent "${agent.name}" does not allow model "${request.model}"`);
    model = request.model;
  }
  let systemPrompt = agent.systemPrompt;
  if (request.systemPrompt !== undefined && request.systemPrompt !== agent.systemPrompt) {
    if (agent.overrides?.systemPrompt !== true)
      throw new AgentRequestError(`agent "${agent.name}" does not allow another system prompt`);
    systemPrompt = request.systemPrompt;
  }
  let tools = agent.tools;
  if (request.tools !== undefined) {
    // A subset only: an agent never gains a tool from a caller.
    const outside = request.tools.filter((t) => !agent.tools?.includes(t));
    if (agent.overrides?.tools !== true || agent.tools === undefined || outside.length > 0)
      throw new AgentRequestError(
        `agent "${agent.name}" does not allow ${outside.length ? `tools ${outside.join(", ")}` : "choosing its tools"}`,
      );
    tools = request.tools;
  }
  const defined = <T extends object>(o: T) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
  return defined({
    model: agent.fallbacks?.length ? [model, ...agent.fallbacks.filter((m) => m !== model)] : model,
    prompt: request.prompt,
    systemPrompt,
    tools,
    session: agent.session,
    maxTurns: agent.maxTurns,
    budget: agent.budget,
    approvalTimeout: agent.approvalTimeout,
    approvalPolicy: agent.approvalPolicy,
    // The agent's policy is a floor: the run judges every call by it too, whatever policy it is given later.
    approvalPolicyFloor: [agent.approvalPolicy ?? AGENT_DEFAULT_FLOOR],
    taskQueue: agent.taskQueue,
    workflowId: request.workflowId,
    tenant: request.tenant,
  });
}
