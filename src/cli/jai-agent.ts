#!/usr/bin/env node
/** The `jai-agent` command: one entry for the worker process and the other CLIs. */

/** The commands of src/cli/runs.ts, by the name it takes as its first argument (`runs` is its `list`). */
const RUNS_COMMANDS: Record<string, string> = {
  runs: "list agent runs: jai-agent runs [--status running|waiting|failed|completed|cancelled] [--limit N] [--json]",
  state: "a run's status and pending approvals: jai-agent state <id> [--json]",
  approve: "let a tool call waiting for approval run: jai-agent approve <id> <toolCallId|--all> [--remember]",
  "tool-result": "submit a client tool's result: jai-agent tool-result <id> <toolCallId> <json|-> [--error]",
  policy: "replace a run's approval policy: jai-agent policy <id> <json|->",
  deny: "refuse a tool call waiting for approval: jai-agent deny <id> <toolCallId> [--reason text]",
  steer: "steer a running run: jai-agent steer <id> <message>",
  "follow-up": "queue a message for when the run would stop: jai-agent follow-up <id> <message>",
  prompt: "send a session run a prompt: jai-agent prompt <id> <message>",
  cancel: "cancel a run: jai-agent cancel <id> [--wait]",
};

/** `args` go before the user's: one module serves several commands. */
const COMMANDS: Record<string, { module: string; about: string; args?: string[] }> = {
  worker: { module: "./worker-main.js", about: "run a worker process (see `jai-agent worker --help`)" },
  bundle: {
    module: "./bundle.js",
    about: "prebuild the workflow bundle: jai-agent bundle [file] [--encrypt-failures]",
  },
  start: {
    module: "./start.js",
    about:
      'one agent run, printed as it happens: jai-agent start [--tenant <name>] "<prompt>"; a configured agent on the workers: jai-agent start --agent <name> [--config <module>] [--tenant <name>] "<prompt>"',
  },
  temporal: { module: "./temporal.js", about: "a local Temporal dev server with its Web UI" },
  replay: { module: "./replay.js", about: "replay a run's history against this code: jai-agent replay <workflowId>" },
  watch: {
    module: "./watch.js",
    about: "print a run as it happens (or replay a finished one): jai-agent watch <workflowId>",
  },
  show: { module: "./show.js", about: "print a run's transcript from its history: jai-agent show <workflowId>" },
  ...Object.fromEntries(
    Object.entries(RUNS_COMMANDS).map(([name, about]) => [name, { module: "./runs.js", args: [name], about }]),
  ),
  schedule: {
    module: "./schedule.js",
    about: "agent runs on Temporal Schedules: jai-agent schedule create|list|describe|pause|unpause|trigger|delete",
  },
  "codec-server": {
    module: "./codec-server.js",
    about: "decrypt payloads for the Temporal UI (codec server protocol)",
  },
};

const USAGE = `usage: jai-agent <command> [args]   (jai-agent <command> --help: the command's own)

${Object.entries(COMMANDS)
  .map(([n, c]) => `  ${n.padEnd(12)} ${c.about}`)
  .join("\n")}

Exit codes: 0 done, 1 failed (one line naming the fix), 2 bad usage; --debug adds a failure's stack trace.`;

const name = process.argv[2];
const command = name ? COMMANDS[name] : undefined;
if (name === "--help" || name === "-h" || name === "help") {
  console.log(USAGE);
  process.exit(0);
}
if (!command) {
  console.error(`${name ? `unknown command "${name}"` : "missing command"}\n${USAGE}`);
  process.exit(2);
}
// Each command reads its own arguments from process.argv.slice(2).
process.argv.splice(2, 1, ...(command.args ?? []));
await import(command.module);
