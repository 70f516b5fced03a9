/**
 * Structural validation of a run's input. Pure and deterministic: the workflow
 * runs it first thing and the client runs it before starting, so both reject
 * the same input with the same message naming the field.
 */
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const ROLES = ["user", "assistant", "toolResult"];

function checkModel(model: unknown): string | undefined {
  if (typeof model === "string") {
    const slash = model.indexOf("/");
    if (slash <= 0 || slash === model.length - 1) return `"model" must be "provider/modelId" or a Model object, got "${model}"`;
    return undefined;
  }
  if (!isObject(model)) return `"model" must be "provider/modelId" or a Model object`;
  for (const key of ["id", "api", "provider"]) {
    if (typeof model[key] !== "string" || model[key] === "") return `"model.${key}" must be a non-empty string`;
  }
  return undefined;
}

function checkContent(content: unknown, field: string): string | undefined {
  if (typeof content === "string") return undefined;
  if (!Array.isArray(content)) return `"${field}" must be a string or an array of content blocks`;
  for (let i = 0; i < content.length; i++) {
    const block = content[i];
    if (!isObject(block) || typeof block.type !== "string") return `"${field}[${i}]" must be a content block with a "type"`;
  }
  return undefined;
}

function checkMessage(message: unknown, field: string): string | undefined {
  if (!isObject(message)) return `"${field}" must be a message object`;
  if (typeof message.role !== "string" || !ROLES.includes(message.role)) {
    return `"${field}.role" must be one of ${ROLES.join(", ")}`;
  }
  if (message.role === "toolResult" && typeof message.toolCallId !== "string") return `"${field}.toolCallId" must be a string`;
  return checkContent(message.content, `${field}.content`);
}

function checkPrompt(prompt: unknown): string | undefined {
  if (typeof prompt === "string") return prompt.length === 0 ? `"prompt" must not be empty` : undefined;
  if (Array.isArray(prompt)) {
    if (prompt.length === 0) return `"prompt" must not be an empty list`;
    for (let i = 0; i < prompt.length; i++) {
      const problem = checkMessage(prompt[i], `prompt[${i}]`);
      if (problem) return problem;
    }
    const last = prompt[prompt.length - 1] as { role: string };
    if (last.role === "assistant") return `"prompt" must not end with an assistant message: the model needs a user message or tool result to answer`;
    return undefined;
  }
  const problem = checkMessage(prompt, "prompt");
  if (problem) return problem;
  return (prompt as { role: string }).role === "user" ? undefined : `"prompt.role" must be "user" for a single message`;
}

function checkOptional(input: Record<string, unknown>): string | undefined {
  if (input.systemPrompt !== undefined && typeof input.systemPrompt !== "string") return `"systemPrompt" must be a string`;
  if (input.tools !== undefined) {
    if (!Array.isArray(input.tools) || input.tools.some((t) => typeof t !== "string")) return `"tools" must be an array of tool names`;
  }
  if (input.toolExecution !== undefined && input.toolExecution !== "parallel" && input.toolExecution !== "sequential") {
    return `"toolExecution" must be "parallel" or "sequential"`;
  }
  if (input.maxTurns !== undefined) {
    const n = input.maxTurns;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1) return `"maxTurns" must be a positive integer`;
  }
  if (input.modelActivity !== undefined && !isObject(input.modelActivity)) return `"modelActivity" must be an object`;
  const timeout = input.approvalTimeout;
  if (timeout !== undefined && typeof timeout !== "string" && typeof timeout !== "number") return `"approvalTimeout" must be a duration`;
  const limits = input.toolResultLimits;
  if (limits !== undefined) {
    if (!isObject(limits)) return `"toolResultLimits" must be an object`;
    for (const [key, value] of Object.entries(limits)) {
      if (!["maxBytes", "maxLines", "maxImageBytes", "maxDetailsBytes"].includes(key)) return `"toolResultLimits.${key}" is not a known limit`;
      if (typeof value !== "number" || !Number.isInteger(value) || value < 1) return `"toolResultLimits.${key}" must be a positive integer`;
    }
  }
  const budget = input.contextBudgetTokens;
  if (budget !== undefined && (typeof budget !== "number" || !Number.isInteger(budget) || budget < 1)) return `"contextBudgetTokens" must be a positive integer`;
  if (input.compaction !== undefined && input.compaction !== "truncate-tool-results" && input.compaction !== "worker") {
    return `"compaction" must be "truncate-tool-results" or "worker"`;
  }
  const can = input.continueAsNew;
  if (can !== undefined) {
    if (!isObject(can)) return `"continueAsNew" must be an object`;
    const n = can.afterTurns;
    if (n !== undefined && (typeof n !== "number" || !Number.isInteger(n) || n < 1)) return `"continueAsNew.afterTurns" must be a positive integer`;
  }
  return checkSession(input.session);
}

/** Checks a message a person sends in (steer, follow-up, prompt): text or a user message. */
export function validateUserInput(value: unknown, field = "message"): string | undefined {
  if (typeof value === "string") return value.length === 0 ? `"${field}" must not be empty` : undefined;
  const problem = checkMessage(value, field);
  if (problem) return problem;
  return (value as { role: string }).role === "user" ? undefined : `"${field}.role" must be "user"`;
}

function checkSession(session: unknown): string | undefined {
  if (session === undefined || typeof session === "boolean") return undefined;
  if (!isObject(session)) return `"session" must be a boolean or { idleTimeout }`;
  const t = session.idleTimeout;
  if (t !== undefined && typeof t !== "string" && typeof t !== "number") return `"session.idleTimeout" must be a duration`;
  return undefined;
}

/** Returns a message naming the first bad field, or undefined when the input is usable. */
export function validateRunInput(input: unknown): string | undefined {
  if (!isObject(input)) return "run input must be an object";
  return checkModel(input.model) ?? checkPrompt(input.prompt) ?? checkOptional(input);
}

