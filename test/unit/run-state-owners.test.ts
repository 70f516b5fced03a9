/**
 * `RunState` is made of parts, each written by one file (see src/workflows/run-state.ts). This reads every
 * workflow source file and fails when a file other than a part's owner writes one of that part's fields:
 * assigns it (`=`, `+=`, `??=`, ...), counts it (`++`), deletes it, or mutates it in place (`push`, `splice`,
 * `set`, ...), directly or through anything reached from it (`x.approvals.get(id)!.decision = ...`).
 * Other files go through the owner's intent methods. A part's fields are read from its class, so a new field
 * is covered at once. Not caught: a field taken into a local first (`const q = x.steering; q.push(m)`).
 */
import { describe, expect, it } from "@jest/globals";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";

const WORKFLOWS = join(process.cwd(), "src/workflows");

/** Each part's class and the one file that may write its fields. */
const PARTS = [
  { owner: "conversation.ts", className: "Conversation" },
  { owner: "inbox.ts", className: "Inbox" },
  { owner: "tool-batch-state.ts", className: "ToolBatchState" },
  { owner: "routing.ts", className: "ModelRoute" },
  // The run's lifecycle (turns, phase, outcome) and the parts themselves.
  { owner: "run-state.ts", className: "RunState" },
];

/** Methods that change the array, map or set they are called on. */
const MUTATORS = new Set([
  "push",
  "pop",
  "shift",
  "unshift",
  "splice",
  "sort",
  "reverse",
  "fill",
  "copyWithin",
  "set",
  "delete",
  "clear",
  "add",
]);

function parse(fileName: string, text: string): ts.SourceFile {
  return ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
}

/** The property declarations of class `className` (not its getters: those cannot be written). */
function fieldsOf(source: ts.SourceFile, className: string): string[] {
  const fields: string[] = [];
  source.forEachChild((node) => {
    if (!ts.isClassDeclaration(node) || node.name?.text !== className) return;
    for (const member of node.members) {
      if (ts.isPropertyDeclaration(member) && ts.isIdentifier(member.name)) fields.push(member.name.text);
      // Constructor parameter properties (`private readonly publisher`).
      if (ts.isConstructorDeclaration(member))
        for (const p of member.parameters)
          if (ts.getModifiers(p)?.length && ts.isIdentifier(p.name)) fields.push(p.name.text);
    }
  });
  return fields;
}

/** The property names on the way to what is written, innermost first (`a.b.get(x)!.c` → c, get, b). */
function namesAlong(target: ts.Expression): string[] {
  const names: string[] = [];
  let node: ts.Expression = target;
  for (;;) {
    if (ts.isPropertyAccessExpression(node)) {
      names.push(node.name.text);
      node = node.expression;
    } else if (ts.isElementAccessExpression(node) || ts.isNonNullExpression(node) || ts.isParenthesizedExpression(node))
      node = node.expression;
    else if (ts.isCallExpression(node)) node = node.expression;
    else return names;
  }
}

/** Every expression the file writes to (or mutates in place), with its line. */
interface Write {
  target: ts.Expression;
  /** A method call (`push`, `set`, ...): a write only when called on a field, not on a part (`state.tools.clear()`). */
  call: boolean;
  line: number;
  text: string;
}

function writes(source: ts.SourceFile): Write[] {
  const found: Write[] = [];
  const note = (target: ts.Expression, at: ts.Node, call = false) =>
    found.push({
      target,
      call,
      line: source.getLineAndCharacterOfPosition(at.getStart(source)).line + 1,
      text: at.getText(source).split("\n")[0],
    });
  const visit = (node: ts.Node) => {
    if (
      ts.isBinaryExpression(node) &&
      node.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
      node.operatorToken.kind <= ts.SyntaxKind.LastAssignment
    )
      note(node.left, node);
    else if (
      (ts.isPrefixUnaryExpression(node) || ts.isPostfixUnaryExpression(node)) &&
      (node.operator === ts.SyntaxKind.PlusPlusToken || node.operator === ts.SyntaxKind.MinusMinusToken)
    )
      note(node.operand, node);
    else if (ts.isDeleteExpression(node)) note(node.expression, node);
    else if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      MUTATORS.has(node.expression.name.text)
    )
      note(node.expression.expression, node, true);
    node.forEachChild(visit);
  };
  visit(source);
  return found;
}

/** RunState's fields that hold a part (`inbox = new Inbox()`): calling a method on one is an intent method. */
function partFields(read: (file: string) => string): Set<string> {
  const classes = new Set(PARTS.map((p) => p.className));
  const parts = new Set<string>();
  parse("run-state.ts", read("run-state.ts")).forEachChild((node) => {
    if (!ts.isClassDeclaration(node) || node.name?.text !== "RunState") return;
    for (const member of node.members) {
      const init = ts.isPropertyDeclaration(member) ? member.initializer : undefined;
      if (init && ts.isNewExpression(init) && ts.isIdentifier(init.expression) && classes.has(init.expression.text))
        parts.add((member.name as ts.Identifier).text);
    }
  });
  return parts;
}

/** Field name → the file that owns it. */
function owners(read: (file: string) => string): Map<string, string> {
  const byField = new Map<string, string>();
  for (const { owner, className } of PARTS) {
    const fields = fieldsOf(parse(owner, read(owner)), className);
    if (fields.length === 0) throw new Error(`no class ${className} with fields in ${owner}`);
    for (const field of fields) {
      // Two parts with a field of the same name: a write could not be told apart.
      if (byField.has(field)) throw new Error(`field "${field}" is in ${byField.get(field)} and ${owner}`);
      byField.set(field, owner);
    }
  }
  return byField;
}

/** Writes in `file` to a field another file owns. */
function strayWrites(file: string, text: string, byField: Map<string, string>, parts: Set<string>): string[] {
  const stray: string[] = [];
  for (const { target, call, line, text: code } of writes(parse(file, text))) {
    // The innermost field written is whose it is: `state.inbox.closed = x` writes the inbox, not RunState's `inbox`.
    const name = namesAlong(target).find((n) => byField.has(n));
    if (call && name !== undefined && parts.has(name)) continue;
    const owner = name === undefined ? undefined : byField.get(name);
    if (owner && owner !== file) stray.push(`${file}:${line} writes "${name}" (owned by ${owner}): ${code}`);
  }
  return stray;
}

const read = (file: string) => readFileSync(join(WORKFLOWS, file), "utf8");

describe("RunState: each part is written by its owner only", () => {
  it("no workflow file writes a field of a part it does not own", () => {
    const byField = owners(read);
    const parts = partFields(read);
    expect([...parts].sort()).toEqual(["conversation", "inbox", "route", "tools"]);
    // The run features (features/) too: a feature writes the run's parts through their owners' methods as well.
    const files = readdirSync(WORKFLOWS, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
    expect(files).toEqual(expect.arrayContaining(PARTS.map((p) => p.owner)));
    const stray = files.flatMap((file) => strayWrites(file, read(file), byField, parts));
    expect(stray).toEqual([]);
  });

  it("the check sees the writes it must refuse (and lets the owner and other objects be)", () => {
    const byField = owners(read);
    const parts = partFields(read);
    const stray = (code: string, file = "agent-run.ts") => strayWrites(file, code, byField, parts);
    expect(stray("state.inbox.closed = true;")).toHaveLength(1);
    expect(stray("run.state.inbox.steering.push(message);")).toHaveLength(1);
    expect(stray("state.turn++;")).toHaveLength(1);
    expect(stray("state.conversation.usage = addUsage(state.conversation.usage, u);")).toHaveLength(1);
    expect(stray("run.state.tools.approvals.get(id)!.decision = { approved: true };")).toHaveLength(1);
    expect(stray("delete state.route.queue;")).toHaveLength(1);
    expect(stray("state.tools.approvals.clear();")).toHaveLength(1);
    expect(stray("state.inbox = new Inbox();")).toHaveLength(1);
    // Reads, intent methods, the owner's own writes and other objects' fields are fine.
    expect(stray("const n = state.inbox.steering.length; state.inbox.steer(m); state.conversation.add(m);")).toEqual(
      [],
    );
    expect(stray("state.tools.clear(); state.add(m);")).toEqual([]);
    expect(stray("this.closed = true; this.steering.push(m);", "inbox.ts")).toEqual([]);
    expect(stray("batch.outputs[i] = output; carry.loop = { ...loop };")).toEqual([]);
  });
});
