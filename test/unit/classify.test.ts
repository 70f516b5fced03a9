/**
 * classifyModelOutcome, table-tested with provider error bodies as the
 * providers document them (OpenAI error codes, Anthropic HTTP errors and
 * streaming errors): what the body says wins over the HTTP status.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage } from "@jai/ai";
import {
  classifyModelOutcome,
  keyEnvVar,
  providerErrorOf,
  redact,
  retryAfterMs,
  MAX_RETRY_AFTER_MS,
  type CallFacts,
  type ModelOutcome,
} from "../../src/worker/activities/classify.js";

/** The message each SDK makes of an error (OpenAI: `status message`; Anthropic: `status {body}`; in a stream: the message alone). */
function sdkMessage(provider: "openai" | "anthropic", status: number | undefined, body: any): string {
  if (status === undefined) return provider === "openai" ? body.error.message : JSON.stringify(body);
  return provider === "openai" ? `${status} ${body.error.message}` : `${status} ${JSON.stringify(body)}`;
}

function classify(provider: "openai" | "anthropic", status: number | undefined, body: any): ModelOutcome {
  const message = fauxAssistantMessage([], { stopReason: "error", errorMessage: sdkMessage(provider, status, body) });
  return classifyModelOutcome(message, {
    provider,
    modelId: provider === "openai" ? "gpt-4o" : "claude-sonnet-4-5",
    contextWindow: 128000,
    status: status ?? 200,
    providerError: providerErrorOf(body, status === undefined),
  });
}

const outcome = (o: ModelOutcome) =>
  "retry" in o ? `retry ${o.retry.type}` : "overflow" in o && o.overflow ? "overflow" : "final";
const text = (o: ModelOutcome) => ("retry" in o ? o.retry.message : o.message.errorMessage);

const openai = (message: string, type: string, code: string | null, param: string | null = null) => ({
  error: { message, type, param, code },
});
const anthropic = (type: string, message: string) => ({
  type: "error",
  error: { type, message },
  request_id: "req_011CV5J4YZo4J3KLTDZgDN7S",
});

describe("classifyModelOutcome by what the provider says", () => {
  it.each([
    // OpenAI: 429 means two things; the code tells which.
    [
      "openai",
      429,
      openai(
        "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
        "insufficient_quota",
        "insufficient_quota",
      ),
      "final",
      /out of credit.*You exceeded your current quota/,
    ],
    [
      "openai",
      429,
      openai(
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        null,
      ),
      "final",
      /out of credit/,
    ],
    [
      "openai",
      429,
      openai("Your organization has no prepaid credits left.", "insufficient_quota", "credit_balance_exhausted"),
      "final",
      /out of credit/,
    ],
    [
      "openai",
      429,
      openai("Your project reached its monthly spend limit.", "insufficient_quota", "project_spend_limit_exceeded"),
      "final",
      /out of credit/,
    ],
    [
      "openai",
      429,
      openai(
        "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.",
        "tokens",
        "rate_limit_exceeded",
      ),
      "retry ModelRateLimited",
      /rate limited/,
    ],
    [
      "openai",
      429,
      openai("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
      "retry ModelRateLimited",
      /rate limited/,
    ],
    [
      "openai",
      400,
      openai(
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 245630 tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
        "messages",
      ),
      "overflow",
      /^Context overflow/,
    ],
    [
      "openai",
      400,
      openai(
        "Invalid 'messages[2].content': string too long.",
        "invalid_request_error",
        "string_above_max_length",
        "messages[2].content",
      ),
      "overflow",
      /^Context overflow/,
    ],
    [
      "openai",
      400,
      openai("Invalid value for 'temperature'.", "invalid_request_error", null, "temperature"),
      "final",
      /rejected the request \(HTTP 400/,
    ],
    [
      "openai",
      401,
      openai(
        "Incorrect API key provided: sk-proj-********wxyz. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
      ),
      "final",
      /Authentication failed for provider "openai".*OPENAI_API_KEY/,
    ],
    [
      "openai",
      403,
      openai(
        "Country, region, or territory not supported",
        "request_forbidden",
        "unsupported_country_region_territory",
      ),
      "final",
      /refused access/,
    ],
    [
      "openai",
      404,
      openai(
        "The model `gpt-9` does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
      ),
      "final",
      /Model "gpt-4o" not found/,
    ],
    [
      "openai",
      500,
      openai("The server had an error while processing your request. Sorry about that!", "server_error", null),
      "retry ModelUnavailable",
      /unavailable: HTTP 500/,
    ],
    [
      "openai",
      503,
      openai("The engine is currently overloaded, please try again later.", "server_error", null),
      "retry ModelOverloaded",
      /overloaded/,
    ],
    // Inside a stream that began with HTTP 200 (`data: {"error": …}`).
    [
      "openai",
      undefined,
      openai("Invalid 'tools[0].function.name': string does not match pattern.", "invalid_request_error", null),
      "final",
      /rejected the request \(in the stream: .*tools\[0\]/,
    ],
    [
      "openai",
      undefined,
      openai("The server had an error while processing your request. Sorry about that!", "server_error", null),
      "retry ModelUnavailable",
      /in the stream/,
    ],
    [
      "openai",
      undefined,
      openai(
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        "insufficient_quota",
      ),
      "final",
      /out of credit/,
    ],
    // Anthropic: error types per the HTTP errors page.
    [
      "anthropic",
      400,
      anthropic("invalid_request_error", "prompt is too long: 205351 tokens > 200000 maximum"),
      "overflow",
      /^Context overflow/,
    ],
    [
      "anthropic",
      413,
      anthropic("request_too_large", "Request exceeds the maximum allowed number of bytes."),
      "overflow",
      /^Context overflow/,
    ],
    [
      "anthropic",
      400,
      anthropic(
        "invalid_request_error",
        "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
      ),
      "final",
      /rejected the request.*credit balance is too low/,
    ],
    [
      "anthropic",
      402,
      anthropic("billing_error", "Your credit balance is too low to access the Anthropic API."),
      "final",
      /out of credit/,
    ],
    [
      "anthropic",
      429,
      anthropic("billing_error", "Your credit balance is too low to access the Anthropic API."),
      "final",
      /out of credit/,
    ],
    [
      "anthropic",
      401,
      anthropic("authentication_error", "invalid x-api-key"),
      "final",
      /Authentication failed for provider "anthropic".*ANTHROPIC_API_KEY/,
    ],
    [
      "anthropic",
      403,
      anthropic("permission_error", "Your API key does not have permission to use the specified resource."),
      "final",
      /refused access to model "claude-sonnet-4-5"/,
    ],
    ["anthropic", 404, anthropic("not_found_error", "model: claude-9"), "final", /not found at provider "anthropic"/],
    [
      "anthropic",
      429,
      anthropic("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
      "retry ModelRateLimited",
      /rate limited/,
    ],
    ["anthropic", 500, anthropic("api_error", "Internal server error"), "retry ModelUnavailable", /unavailable/],
    ["anthropic", 504, anthropic("timeout_error", "Request timed out"), "retry ModelUnavailable", /unavailable/],
    ["anthropic", 529, anthropic("overloaded_error", "Overloaded"), "retry ModelOverloaded", /overloaded/],
    // Inside a stream (`event: error`).
    ["anthropic", undefined, anthropic("overloaded_error", "Overloaded"), "retry ModelOverloaded", /in the stream/],
    [
      "anthropic",
      undefined,
      anthropic("api_error", "Internal server error"),
      "retry ModelUnavailable",
      /in the stream/,
    ],
    [
      "anthropic",
      undefined,
      anthropic("invalid_request_error", "messages.1.content.0: unexpected tool_use_id"),
      "final",
      /rejected the request \(in the stream: .*unexpected tool_use_id/,
    ],
  ] as ["openai" | "anthropic", number | undefined, unknown, string, RegExp][])(
    "%s HTTP %s %j → %s",
    (provider, status, body, expected, message) => {
      const o = classify(provider, status, body);
      expect(outcome(o)).toBe(expected);
      expect(text(o)).toMatch(message);
      if ("retry" in o) expect(o.retry.nonRetryable).toBe(false);
    },
  );

  it("reads error objects of both shapes, and none from bodies without one", () => {
    expect(providerErrorOf(openai("m", "t", "c"))).toEqual({ type: "t", code: "c", message: "m" });
    expect(providerErrorOf(anthropic("overloaded_error", "Overloaded"), true)).toEqual({
      type: "overloaded_error",
      message: "Overloaded",
      inStream: true,
    });
    expect(providerErrorOf({ error: "model is loading" })).toEqual({ message: "model is loading" });
    expect(providerErrorOf({ choices: [] })).toBeUndefined();
    expect(providerErrorOf(undefined)).toBeUndefined();
  });
});

describe("redact", () => {
  const key = "gsk_7Qm2ZxP9vR4tL8nW1cY6bK3hJ5dF0aE";

  it("removes the key, any 8+ character piece of it, and its base64 and URL-encoded forms", () => {
    const b64 = Buffer.from(key).toString("base64");
    const echoed = [
      `invalid key ${key}`,
      `key ending ${key.slice(-12)}`,
      `key starting ${key.slice(0, 8)}…`,
      `basic ${b64}`,
      `urlsafe ${Buffer.from(key).toString("base64url")}`,
      `auth header ${Buffer.from(`Authorization: Bearer ${key}`).toString("base64")}`,
      `user:${Buffer.from(`x:${key}`).toString("base64")}`,
      `query ${encodeURIComponent(`${key}&/+`)}`,
    ].join("\n");
    const out = redact(echoed, [key]);
    for (let i = 0; i + 8 <= key.length; i++) expect(out).not.toContain(key.slice(i, i + 8));
    expect(out).not.toContain(b64.slice(4, 16));
    expect(out).toContain("key ending [redacted]");
    expect(out).toContain("invalid key [redacted]");
  });

  it("leaves text that shares only short pieces with the key, and short keys' surroundings alone", () => {
    expect(redact("gsk_7Qm is short", [key])).toBe("gsk_7Qm is short");
    expect(redact("nothing secret here", [key])).toBe("nothing secret here");
    expect(redact("a key-shaped gsk_abcdefghijklmnop", [])).toBe("a key-shaped [redacted key]");
  });
});

describe("classifyModelOutcome", () => {
  const failed = (errorMessage: string) => fauxAssistantMessage([], { stopReason: "error", errorMessage });
  const facts = (more: Partial<CallFacts> = {}): CallFacts => ({
    provider: "anthropic",
    modelId: "claude-x",
    contextWindow: 200000,
    ...more,
  });
  const retryType = (o: ModelOutcome) => ("retry" in o ? o.retry.type : undefined);
  const finalText = (o: ModelOutcome) => ("message" in o ? o.message.errorMessage : undefined);

  it("returns success and aborts as they are", () => {
    const ok = fauxAssistantMessage("fine");
    expect(classifyModelOutcome(ok, facts({ status: 200 }))).toEqual({ message: ok });
    expect("message" in classifyModelOutcome(fauxAssistantMessage([], { stopReason: "aborted" }), facts())).toBe(true);
  });

  it.each([
    [429, "ModelRateLimited"],
    [529, "ModelOverloaded"],
    [500, "ModelUnavailable"],
    [502, "ModelUnavailable"],
    [503, "ModelUnavailable"],
    [408, "ModelUnavailable"],
  ])("makes HTTP %i a retryable %s", (status, type) => {
    const outcome = classifyModelOutcome(failed(`${status} oops`), facts({ status }));
    expect(retryType(outcome)).toBe(type);
    expect("retry" in outcome && outcome.retry.nonRetryable).toBe(false);
    expect("retry" in outcome && outcome.retry.message).toContain(`HTTP ${status}`);
  });

  it("reads the status from the SDK's message when no response was recorded", () => {
    expect(retryType(classifyModelOutcome(failed("429 Too Many Requests"), facts()))).toBe("ModelRateLimited");
    expect(finalText(classifyModelOutcome(failed("400 bad field"), facts()))).toMatch(
      /rejected the request \(HTTP 400/,
    );
  });

  it("honours retry-after and retry-after-ms", () => {
    const outcome = classifyModelOutcome(failed("slow down"), facts({ status: 429, headers: { "retry-after": "7" } }));
    expect("retry" in outcome && outcome.retry.nextRetryDelay).toBe(7000);
    expect(retryAfterMs({ "retry-after-ms": "1500", "retry-after": "9" })).toBe(1500);
    expect(retryAfterMs({ "retry-after": new Date(10_000).toUTCString() }, 4_000)).toBe(6000);
    expect(retryAfterMs({ "retry-after": "soon" })).toBeUndefined();
  });

  it("caps what a Retry-After sets at a minute: a provider (or proxy) cannot park a call, or a fallback chain, for a day", () => {
    for (const header of ["86400", new Date(Date.UTC(2031, 0, 1)).toUTCString()]) {
      const outcome = classifyModelOutcome(
        failed("slow down"),
        facts({ status: 429, headers: { "retry-after": header } }),
      );
      expect("retry" in outcome && outcome.retry.nextRetryDelay).toBe(MAX_RETRY_AFTER_MS);
    }
    expect(MAX_RETRY_AFTER_MS).toBe(60_000);
  });

  it("makes 401/403 name the provider and the env var, never the key", () => {
    const key = "sk-ant-SENTINEL-123456789";
    const text = finalText(
      classifyModelOutcome(failed(`401 invalid x-api-key ${key}`), facts({ status: 401, secrets: [key] })),
    );
    expect(text).toMatch(/Authentication failed for provider "anthropic"/);
    expect(text).toContain("ANTHROPIC_API_KEY");
    expect(text).not.toContain("SENTINEL");
    expect(keyEnvVar("my-llm")).toBe("MY_LLM_API_KEY");
    expect(redact("Incorrect API key provided: sk-proj-abc123***wxyz")).toBe(
      "Incorrect API key provided: [redacted key]",
    );
  });

  it("ends the turn on 400 with the provider's message, on 404 naming the model, on context overflow clearly", () => {
    expect(finalText(classifyModelOutcome(failed("messages: field required"), facts({ status: 400 })))).toMatch(
      /anthropic\/claude-x rejected the request \(HTTP 400: messages: field required\)/,
    );
    expect(finalText(classifyModelOutcome(failed("no such model"), facts({ status: 404 })))).toMatch(
      /Model "claude-x" not found at provider "anthropic"/,
    );
    expect(
      finalText(
        classifyModelOutcome(failed("prompt is too long: 250000 tokens > 200000 maximum"), facts({ status: 400 })),
      ),
    ).toMatch(
      /^Context overflow: the conversation no longer fits anthropic\/claude-x's context window \(200000 tokens\)/,
    );
  });

  it("retries streams cut or corrupted after a 200, and connections that never answered", () => {
    expect(retryType(classifyModelOutcome(failed("read ECONNRESET"), facts({ status: 200 })))).toBe(
      "ModelStreamInterrupted",
    );
    expect(retryType(classifyModelOutcome(failed("terminated"), facts({ status: 200 })))).toBe(
      "ModelStreamInterrupted",
    );
    expect(retryType(classifyModelOutcome(failed("Unexpected token } in JSON"), facts({ status: 200 })))).toBe(
      "ModelStreamInterrupted",
    );
    expect(retryType(classifyModelOutcome(failed("Overloaded"), facts({ status: 200 })))).toBe("ModelOverloaded");
    expect(
      retryType(
        classifyModelOutcome(failed("503 connection failed"), facts({ networkError: "fetch failed: ECONNREFUSED" })),
      ),
    ).toBe("ModelUnavailable");
    // The fetch layer saw the body break even when the SDK's message says nothing useful.
    expect(
      retryType(classifyModelOutcome(failed("{}"), facts({ status: 200, bodyError: "terminated: UND_ERR_SOCKET" }))),
    ).toBe("ModelStreamInterrupted");
  });

  it("returns other errors as data", () => {
    expect(finalText(classifyModelOutcome(failed("something odd"), facts({ status: 200 })))).toBe("something odd");
  });
});
