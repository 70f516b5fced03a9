/**
 * `npm test`: the type check and the lint run beside jest, not before it. Each uses one core for ~30 s while
 * jest's files spend part of their time waiting on the server's timers and on child processes; in a row they
 * added their whole time to the suite's. A check's output is printed when it ends (jest goes on); the command
 * fails when any of the three fails. Arguments go to jest: `npm test -- test/unit`.
 */
import { spawn } from "node:child_process";

interface Outcome {
  name: string;
  code: number;
}

/** Runs `npm run <script>` with its output held, printed in one piece when it ends. */
function check(script: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn("npm", ["run", "--silent", script], { stdio: ["ignore", "pipe", "pipe"] });
    const output: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => output.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => output.push(chunk));
    child.on("close", (code, signal) => {
      const text = Buffer.concat(output).toString().trimEnd();
      const status = code === 0 ? "passed" : `failed (${signal ?? `exit ${code}`})`;
      process.stdout.write(`\n[npm test] ${script}: ${status}${text ? `\n${text}` : ""}\n`);
      resolve({ name: script, code: code ?? 1 });
    });
  });
}

function jest(args: string[]): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["node_modules/jest/bin/jest.js", ...args], {
      stdio: "inherit",
      env: { ...process.env, NODE_OPTIONS: [process.env.NODE_OPTIONS, "--experimental-vm-modules"].join(" ").trim() },
    });
    child.on("close", (code) => resolve({ name: "jest", code: code ?? 1 }));
  });
}

const outcomes = await Promise.all([check("typecheck"), check("lint"), jest(process.argv.slice(2))]);
const failed = outcomes.filter((o) => o.code !== 0).map((o) => o.name);
if (failed.length) process.stdout.write(`\n[npm test] failed: ${failed.join(", ")}\n`);
process.exit(failed.length ? 1 : 0);
