/** Tool results made plain JSON and bounded; heartbeat pacing. Pure. */
import { describe, expect, it } from "@jest/globals";
import { capToolResult } from "../../src/worker/activities/result-limits.js";
import { heartbeatIntervalMs } from "../../src/worker/activities/heartbeat.js";
import { normalizeToolResult } from "../../src/worker/activities/tool.js";

describe("small helpers", () => {
  it("heartbeats at a third of the timeout, at most every second", () => {
    expect(heartbeatIntervalMs(undefined)).toBe(1000);
    expect(heartbeatIntervalMs(30000)).toBe(1000);
    expect(heartbeatIntervalMs(1500)).toBe(500);
    expect(heartbeatIntervalMs(10)).toBe(100);
  });
  it("makes tool results plain JSON and refuses malformed ones", () => {
    const result = normalizeToolResult("t", {
      content: [{ type: "text", text: "a" }],
      details: { when: new Date(0) },
      terminate: false,
    });
    expect(result).toEqual({ content: [{ type: "text", text: "a" }], details: { when: "1970-01-01T00:00:00.000Z" } });
    expect(() => normalizeToolResult("t", undefined)).toThrow(/Tool t returned an invalid result/);
    expect(() => normalizeToolResult("t", { content: [{ type: "audio" }] })).toThrow(/invalid content block/);
  });
});

describe("capToolResult", () => {
  const text = (t: string) => ({ type: "text" as const, text: t });
  it("keeps small results as they are", () => {
    const r = { content: [text("short")], details: { a: 1 } };
    expect(capToolResult(r)).toEqual(r);
  });
  it("cuts by lines and by bytes across blocks, with a note", () => {
    const lines = Array.from({ length: 10 }, (_, i) => `line ${i}`).join("\n");
    const out = capToolResult({ content: [text(lines)] }, { maxLines: 3 });
    expect(out.content[0]).toEqual(text("line 0\nline 1\nline 2"));
    expect((out.content[1] as { text: string }).text).toContain(
      "showing the first 3 lines / 20 bytes of 10 lines / 69 bytes",
    );
    const two = capToolResult({ content: [text("a".repeat(60)), text("b".repeat(60))] }, { maxBytes: 100 });
    expect(two.content.map((c) => (c.type === "text" ? c.text.length : 0)).slice(0, 2)).toEqual([60, 40]);
  });
  it("never splits a multi-byte character", () => {
    const out = capToolResult({ content: [text("é".repeat(100))] }, { maxBytes: 51 });
    expect((out.content[0] as { text: string }).text).toBe("é".repeat(25));
  });
  it("replaces oversized images and bounds details", () => {
    const out = capToolResult(
      {
        content: [{ type: "image", mimeType: "image/jpeg", data: "Z".repeat(2000) }],
        details: { big: "q".repeat(500) },
      },
      { maxImageBytes: 1000, maxDetailsBytes: 100 },
    );
    expect(out.content).toEqual([
      text("[Image omitted: image/jpeg of 2.0 KB exceeds the 1000 bytes limit for tool results.]"),
    ]);
    expect(out.details).toMatchObject({ truncated: true, bytes: 510 });
  });
});
