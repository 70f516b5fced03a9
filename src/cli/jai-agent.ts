#!/usr/bin/env node
/** The `jai-agent` command: one entry for the worker process and the other CLIs. */
const COMMANDS: Record<string, { module: string; about: string }> = {
  worker: { module: "./worker-main.js", about: "run a worker process (see `jai-agent worker --help`)" },
  bundle: { module: "./bundle.js", about: "prebuild the workflow bundle: jai-agent bundle [file]" },
  start: { module: "./start.js", about: 'one agent run, printed as it happens: jai-agent start "<prompt>"' },
  temporal: { module: "./temporal.js", about: "a local Temporal dev server with its Web UI" },
  replay: { module: "./replay.js", about: "replay a run's history against this code: jai-agent replay <workflowId>" },
  watch: {
    module: "./watch.js",
    about: "print a run as it happens (or replay a finished one): jai-agent watch <workflowId>",
  },
  show: { module: "./show.js", about: "print a run's transcript from its history: jai-agent show <workflowId>" },
  "codec-server": {
    module: "./codec-server.js",
    about: "decrypt payloads for the Temporal UI (codec server protocol)",
  },
};

const name = process.argv[2];
const command = name ? COMMANDS[name] : undefined;
if (!command) {
  console.error(
    `usage: jai-agent <command> [args]\n\n${Object.entries(COMMANDS)
      .map(([n, c]) => `  ${n.padEnd(12)} ${c.about}`)
      .join("\n")}`,
  );
  process.exit(name === "--help" || name === "-h" ? 0 : 2);
}
// Each command reads its own arguments from process.argv.slice(2).
process.argv.splice(2, 1);
await import(command.module);
