/**
 * `npm start -- --tour` as a person meets it, with no API key: the process prints what to do at each waiting
 * point, and this test does it through the client API — approve, steer, send a session prompt — then reads
 * the transcript. Real dev server, real worker, a real MCP server (Streamable HTTP), a real child workflow.
 */
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { getAgentRun } from "../../src/client/client.js";
import type { AgentRunState } from "../../src/shared/contracts.js";
import { openTestEnv, textOf, within, type TestEnv } from "../support/helpers.js";
import { repoRoot } from "../support/service/processes.js";
import { nodeEntry } from "../support/entry.js";

let env: TestEnv;
let workspace: string;
beforeAll(async () => {
  env = await openTestEnv();
  workspace = mkdtempSync(path.join(os.tmpdir(), "jai-tour-"));
  writeFileSync(path.join(workspace, "README.md"), "# Tour Land\n\nHello.\n");
  writeFileSync(path.join(workspace, "package.json"), "{}\n");
});
afterAll(async () => {
  await env?.close();
  rmSync(workspace, { recursive: true, force: true });
});

/**
 * How long the tour may take to print its next line, or to exit, before the test calls it a hang: a bound, not a
 * verdict. `npm start` builds its bundle and starts its worker first: past 45 s on 2 cores with two busy loops.
 */
const HANG_MS = 240_000;

it("walks a person through parallel tools, an approval, steering, a sub-agent, an MCP tool and a session prompt", async () => {
  const address = process.env.TEMPORAL_ADDRESS!;
  const child = spawn(
    process.execPath,
    [...nodeEntry(path.join(repoRoot, "src/cli/start.ts")), "--address", address, "--tour"],
    {
      cwd: repoRoot,
      env: { ...process.env, NODE_OPTIONS: "", JAI_WORKSPACE: workspace, JAI_MODEL: "", TEMPORAL_ADDRESS: "" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const waiters: (() => void)[] = [];
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    waiters.forEach((w) => w());
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  /** What the tour printed matching `pattern`, once it has (the tour tells the person when to act). */
  const printed = (pattern: RegExp, what: string) =>
    within(
      new Promise<RegExpExecArray>((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(output);
          if (m) resolve(m);
        };
        waiters.push(check);
        check();
        void exited.then((code) => reject(new Error(`npm start exited ${code} before ${what}:\n${output}`)));
      }),
      HANG_MS,
      `${what}:\n${output}`,
    );

  try {
    // The exact command to type, with the run id, the call id and the server it needs.
    const [, id, callId] = await printed(
      new RegExp(`npm run approve -- --address ${address} (\\S+) (\\S+)`),
      "the approve command",
    );
    expect(output).toMatch(/click Approve in the console: http:\/\/127\.0\.0\.1:\d+\/runs\/\S+\/console#token=/);
    const run = getAgentRun(env.client, id);
    // As in the console: the Approve button is there while the call waits (the printed line comes with it).
    let state: AgentRunState;
    while ((state = await run.state()).pendingApprovals.length === 0) await sleep(50);
    expect(state.status).toBe("waiting_for_approval");
    expect(state.pendingApprovals.map((p) => p.toolCallId)).toEqual([callId]);
    await run.approve(callId);

    await printed(/npm run steer -- --address \S+ \S+ "/, "the steer command");
    await run.steer("count these words please");

    await printed(/npm run prompt -- --address \S+ \S+ "/, "the prompt command");
    const answer = await run.prompt("what did you just do?");
    expect(textOf(answer.messages.at(-1))).toContain('You asked "what did you just do?" — a session prompt');

    // The tour closes the session once the prompt is answered: the run ends, and so does the process.
    expect(await within(exited, HANG_MS, `npm start to exit:\n${output}`)).toBe(0);
    expect((await run.result()).stopReason).toBe("stop");

    const messages = await run.transcript();
    const calls = messages.flatMap((m) =>
      m.role === "assistant" ? [m.content.flatMap((c) => (c.type === "toolCall" ? [c.name] : []))] : [],
    );
    // One message asking for two tools (they run concurrently), then one step each.
    expect(calls.filter((c) => c.length > 0)).toEqual([
      ["list_dir", "read_file"],
      ["save_note"],
      ["wait_for_steering"],
      ["helper"],
      ["tour__count_words"],
    ]);
    const result = (name: string) => {
      const m = messages.find((x) => x.role === "toolResult" && x.toolName === name);
      expect(m && m.role === "toolResult" && m.isError).toBe(false);
      return textOf(m);
    };
    expect(result("read_file")).toContain("# Tour Land");
    // The approved call ran: its result, and its effect.
    expect(result("save_note")).toContain(`bytes to ${path.join(workspace, ".jai", "tour-note.md")}`);
    expect(readFileSync(path.join(workspace, ".jai", "tour-note.md"), "utf8")).toContain("README: Tour Land");
    const said = messages.filter((m) => m.role === "assistant").map(textOf);
    expect(said.some((t) => t.includes('You steered me with "count these words please"'))).toBe(true);
    // The sub-agent's answer (from its own child workflow, which listed the workspace itself).
    expect(result("helper")).toMatch(/^Sub-agent report .*the workspace has 3 entries/);
    expect((await getAgentRun(env.client, `${id}/sub-4-0`).result()).stopReason).toBe("stop");
    // The MCP server counted the steering message.
    expect(result("tour__count_words")).toBe("4 words, 24 characters (counted by the MCP server)");
    expect(output).not.toContain("following the run failed");
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}, 600_000);
