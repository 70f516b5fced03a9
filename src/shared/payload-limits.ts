/**
 * Byte budgets of everything that can enter history from outside: the start
 * input, each update, what is queued, and what continue-as-new carries.
 * Temporal refuses any payload over 2 MB by terminating the run, so every
 * budget here stays well under it, and is counted in UTF-8 bytes of the JSON
 * (what Temporal stores), not in UTF-16 string length.
 *
 * Pure and deterministic: the workflow and the client check with the same code.
 */

/** The budgets, in UTF-8 bytes of JSON. */
export const BUDGETS = {
  /** The start input's `prompt` (a message, or a transcript to continue from). */
  promptBytes: 1_000_000,
  /** The start input without its prompt: system prompt, model, options. */
  inputBytes: 256_000,
  /** One message sent by `steer`, `followUp` or `prompt`. */
  messageBytes: 256_000,
  /** Everything queued and not yet in the transcript: steering, follow-ups, session prompts not yet taken up. */
  queuedBytes: 512_000,
  /** A continue-as-new input as a whole (Temporal's limit is 2 MB). */
  carryBytes: 1_800_000,
} as const;

/** UTF-8 length of a string, without Buffer or TextEncoder (workflow code). */
export function utf8Bytes(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Bytes `value` takes as JSON (0 for undefined). */
export function jsonBytes(value: unknown): number {
  return utf8Bytes(JSON.stringify(value) ?? "");
}

/** 1234567 → "1,234,567" (no Intl in workflow code). */
export const formatCount = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");

/** `"prompt" is 3,145,740 bytes (UTF-8 JSON); the limit is 1,000,000 bytes`, or undefined when within. */
export function overBudget(field: string, bytes: number, limit: number): string | undefined {
  return bytes > limit
    ? `"${field}" is ${formatCount(bytes)} bytes (UTF-8 JSON); the limit is ${formatCount(limit)} bytes`
    : undefined;
}
