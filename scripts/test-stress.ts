/**
 * `npm run test:stress`: `npm test` on a machine with no spare core. Busy loops (`while (true) {}` in node child
 * processes), one per core (at least two; `JAI_STRESS_LOOPS` sets how many), eat the CPU while the suite runs, as
 * other work does on a shared CI machine; they are killed when the suite ends, however it ends. A test whose
 * verdict depends on how fast the machine is fails here (docs/testing.md, "No timing luck"). Arguments go to
 * `npm test`, and from there to jest: `npm run test:stress -- test/server/provider-limits.test.ts`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { availableParallelism } from "node:os";

const count = Number(process.env.JAI_STRESS_LOOPS) || Math.max(2, availableParallelism());

// A busy loop that also ends when this script's process is gone (even SIGKILLed): it looks once a second.
const LOOP = `const parent = process.ppid; let next = 0;
while (true) {
  const now = Date.now();
  if (now >= next) { next = now + 1000; try { process.kill(parent, 0); } catch { process.exit(0); } }
}`;

const loops: ChildProcess[] = Array.from({ length: count }, () =>
  spawn(process.execPath, ["-e", LOOP], { stdio: "ignore" }),
);

/** Kills this script's own loops, by their process ids. */
function stopLoops(): void {
  for (const loop of loops) if (loop.exitCode === null && loop.signalCode === null) loop.kill("SIGKILL");
}

process.on("exit", stopLoops);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
  process.on(signal, () => {
    stopLoops();
    process.exit(128 + (signal === "SIGINT" ? 2 : signal === "SIGTERM" ? 15 : 1));
  });

const args = process.argv.slice(2);
process.stdout.write(
  `[test:stress] ${count} busy loops (pids ${loops.map((l) => l.pid).join(", ")}) beside npm test${args.length ? ` -- ${args.join(" ")}` : ""}\n`,
);
const started = Date.now();
const suite = spawn("npm", ["test", ...(args.length ? ["--", ...args] : [])], { stdio: "inherit" });
suite.on("close", (code, signal) => {
  stopLoops();
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  process.stdout.write(`[test:stress] npm test ${code === 0 ? "passed" : "failed"} under load in ${minutes} min\n`);
  process.exit(code ?? (signal ? 1 : 0));
});
