/**
 * The message types of `@jai/ai` as TypeBox schemas, for input that arrives
 * from outside (start prompts, steering, follow-ups, session prompts). A
 * malformed message accepted once is sent to the provider on every later call
 * and poisons the run (a session for good), so it is refused at the door.
 *
 * Pure: TypeBox's value checker has no I/O and no clock, so the workflow's
 * update validators and the client run the same check.
 */
import { Type, type TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

const NonEmpty = Type.String({ minLength: 1 });

const TextContent = Type.Object({
  type: Type.Literal("text"),
  text: NonEmpty,
  textSignature: Type.Optional(Type.String()),
});
const ImageContent = Type.Object({
  type: Type.Literal("image"),
  data: Type.String({ minLength: 1, pattern: "^[A-Za-z0-9+/=\\s]+$" }),
  mimeType: Type.String({ pattern: "^image/[a-z0-9.+-]+$" }),
});
const ThinkingContent = Type.Object({
  type: Type.Literal("thinking"),
  thinking: Type.String(),
  thinkingSignature: Type.Optional(Type.String()),
  redacted: Type.Optional(Type.Boolean()),
});
const ToolCall = Type.Object({
  type: Type.Literal("toolCall"),
  id: NonEmpty,
  name: NonEmpty,
  arguments: Type.Record(Type.String(), Type.Unknown()),
  thoughtSignature: Type.Optional(Type.String()),
});
const Timestamp = Type.Optional(Type.Number());

/** A user message: text, or a non-empty list of text and image blocks. */
export const UserMessageSchema = Type.Object({
  role: Type.Literal("user"),
  content: Type.Union([NonEmpty, Type.Array(Type.Union([TextContent, ImageContent]), { minItems: 1 })]),
  timestamp: Timestamp,
});

const Usage = Type.Object({
  input: Type.Number(),
  output: Type.Number(),
  cacheRead: Type.Number(),
  cacheWrite: Type.Number(),
  totalTokens: Type.Number(),
  cost: Type.Object({
    input: Type.Number(),
    output: Type.Number(),
    cacheRead: Type.Number(),
    cacheWrite: Type.Number(),
    total: Type.Number(),
  }),
});

/** An assistant message of a transcript a run continues from. */
export const AssistantMessageSchema = Type.Object({
  role: Type.Literal("assistant"),
  content: Type.Array(Type.Union([TextContent, ThinkingContent, ToolCall])),
  api: NonEmpty,
  provider: NonEmpty,
  model: NonEmpty,
  responseId: Type.Optional(Type.String()),
  usage: Usage,
  stopReason: Type.Union(["stop", "length", "toolUse", "error", "aborted"].map((s) => Type.Literal(s))),
  errorMessage: Type.Optional(Type.String()),
  timestamp: Timestamp,
});

/** A tool result of a transcript a run continues from. */
export const ToolResultMessageSchema = Type.Object({
  role: Type.Literal("toolResult"),
  toolCallId: NonEmpty,
  toolName: NonEmpty,
  content: Type.Array(Type.Union([TextContent, ImageContent])),
  details: Type.Optional(Type.Unknown()),
  isError: Type.Boolean(),
  timestamp: Timestamp,
});

const schemas: Record<string, TSchema> = {
  user: UserMessageSchema,
  assistant: AssistantMessageSchema,
  toolResult: ToolResultMessageSchema,
};

const blockSchemas: Record<string, Record<string, TSchema>> = {
  user: { text: TextContent, image: ImageContent },
  toolResult: { text: TextContent, image: ImageContent },
  assistant: { text: TextContent, thinking: ThinkingContent, toolCall: ToolCall },
};

function firstError(schema: TSchema, value: unknown, field: string): string {
  const first = Value.Errors(schema, value).First();
  const path = first?.path ? `${field}${first.path.replace(/\/(\d+)/g, "[$1]").replace(/\//g, ".")}` : field;
  return `"${path}": ${first?.message ?? "does not match the message schema"}`;
}

/** Why `value` is not a valid message (naming the path under `field`), or undefined. */
export function messageProblem(value: unknown, field: string, roles: string[] = ["user"]): string | undefined {
  const role = typeof value === "object" && value !== null ? (value as { role?: unknown }).role : undefined;
  if (typeof role !== "string" || !roles.includes(role))
    return `"${field}.role" must be ${roles.map((r) => `"${r}"`).join(" or ")}`;
  const schema = schemas[role];
  if (Value.Check(schema, value)) return undefined;
  // A union's error names only the union: name the content block that is wrong, and what is wrong with it.
  const content = (value as { content?: unknown }).content;
  if (Array.isArray(content)) {
    const allowed = blockSchemas[role];
    for (let i = 0; i < content.length; i++) {
      const type = (content[i] as { type?: unknown } | null)?.type;
      const block = typeof type === "string" ? allowed[type] : undefined;
      if (!block)
        return `"${field}.content[${i}].type" must be ${Object.keys(allowed)
          .map((t) => `"${t}"`)
          .join(" or ")}`;
      if (!Value.Check(block, content[i])) return firstError(block, content[i], `${field}.content[${i}]`);
    }
    if (content.length === 0 && role === "user") return `"${field}.content" must not be empty`;
  }
  return firstError(schema, value, field);
}
