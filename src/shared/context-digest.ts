/**
 * The digest of a model context, computed the same way by the workflow (which
 * means a context) and by the worker (which rebuilt one from its cache, the
 * call's inline messages and references): a worker serves a call only when
 * the two agree. Pure code with no imports, so workflow code can run it
 * deterministically; workers pass Node's SHA-256 for speed (same output).
 *
 * digest = SHA-256 over the message count and each message's SHA-256, where a
 * message's bytes are its canonical JSON (keys sorted, as JSON would encode it)
 * in UTF-8. Key order, and anything JSON drops, cannot cause a false mismatch.
 */

import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";

/** A SHA-256 of a UTF-8 string, as lower-case hex. */
export type Sha256Hex = (text: string) => string;

/** JSON with object keys sorted at every level; values JSON cannot hold are dropped or null, as JSON.stringify does. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (typeof (value as { toJSON?: unknown }).toJSON === "function")
    return canonicalJson((value as { toJSON(): unknown }).toJSON());
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined || typeof v === "function" || typeof v === "symbol" ? "null" : canonicalJson(v))).join(",")}]`;
  const parts: string[] = [];
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined || typeof v === "function" || typeof v === "symbol") continue;
    parts.push(`${JSON.stringify(key)}:${canonicalJson(v)}`);
  }
  return `{${parts.join(",")}}`;
}

const utf8 = new TextEncoder();

/** SHA-256 (`@noble/hashes`, audited, no Node built-ins) of a UTF-8 string (a lone surrogate is U+FFFD). */
export const sha256Hex: Sha256Hex = (text) => bytesToHex(sha256(utf8.encode(text)));

/** The digest of one message. */
export function messageDigest(message: unknown, sha: Sha256Hex = sha256Hex): string {
  return sha(canonicalJson(message));
}

/**
 * The digest of a whole context from its messages' digests, so a caller can
 * keep each message's digest and pay only for new messages.
 */
export function combineDigests(messageDigests: string[], sha: Sha256Hex = sha256Hex): string {
  return sha(`jai-context-v1:${messageDigests.length}:${messageDigests.join("")}`);
}

/** The digest of a context: what the workflow sends with a model call and the worker checks. */
export function contextDigest(messages: unknown[], sha: Sha256Hex = sha256Hex): string {
  return combineDigests(
    messages.map((m) => messageDigest(m, sha)),
    sha,
  );
}
