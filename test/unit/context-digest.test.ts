/**
 * The workflow's SHA-256 (`@noble/hashes` over the sandbox's TextEncoder) is Node's, byte for byte, for any
 * string: the worker passes Node's own for speed and a call is served only when the two digests agree.
 * Lone surrogates too (both write U+FFFD). The golden histories' replay checks the digests they recorded.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { sha256Hex } from "../../src/shared/context-digest.js";

const node = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

describe("sha256Hex", () => {
  it("equals Node's SHA-256 of the UTF-8 bytes, for any string (lone surrogates too)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (text) => sha256Hex(text) === node(text)),
      { numRuns: 500 },
    );
    for (const text of ["", "abc", "\ud800", "x\udc00y", "😀", "a".repeat(1_000_000)])
      expect(sha256Hex(text)).toBe(node(text));
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });
});
