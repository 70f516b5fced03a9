/**
 * The Temporal UI's "Awaiting approval" list (the run's current details, markdown) renders as a list: a line
 * right under a paragraph's text is part of that paragraph in the UI's renderer, so the heading and the items are
 * blocks of their own, one item a line. Pure.
 */
import { describe, expect, it } from "@jest/globals";
import { approvalDetails } from "../../src/shared/summary.js";

const pending = [
  { toolCallId: "call-1", toolName: "write_file", args: { path: "a.txt" }, since: "2026-12-03T10:00:00.000Z" },
  { toolCallId: "call-2", toolName: "deploy", args: { env: "prod", force: true }, since: "2026-12-03T10:00:01.000Z" },
];

describe("the approval list in the run's details", () => {
  it("is a heading paragraph, a blank line, then one markdown list item per waiting call", () => {
    const markdown = approvalDetails(pending);
    const [heading, list, ...rest] = markdown.split("\n\n");
    expect(heading).toMatch(/^\**Awaiting approval:?\**$/);
    expect(rest).toEqual([]);
    const items = list.split("\n");
    expect(items).toHaveLength(2);
    for (const item of items) expect(item).toMatch(/^- /);
    expect(items[0]).toContain("`write_file a.txt`");
    expect(items[0]).toContain("`call-1`");
    expect(items[1]).toContain("`call-2`");
  });

  it("keeps a backtick in an argument from breaking out of its code span", () => {
    const [item] = approvalDetails([{ ...pending[0], args: { path: "a`b" } }])
      .split("\n")
      .filter((l) => l.startsWith("- "));
    expect(item.match(/`/g)).toHaveLength(4);
  });
});
