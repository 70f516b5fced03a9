/**
 * `npm start -- "<prompt>"`: one agent run, printed as it happens. Uses the
 * server at --address / TEMPORAL_ADDRESS, else the dev server of `npm run
 * temporal` when it is up, else an embedded one on the same SQLite file, so
 * every run stays visible in the UI afterwards. Ctrl-C cancels the run (a
 * second Ctrl-C terminates it): the run never outlives this process's worker.
 * `npm start -- --tour`: the offline tour (src/demo/tour.ts), a session run that
 * waits for the person at each step and says what to type.
 * `npm start -- --agent <name> "<prompt>"`: a named agent of the worker's config module, run by the worker
 * process (src/cli/start-agent.ts).
 */
import { tenantProblem } from "../shared/tenants.js";
import { budgetProblem } from "../shared/budget-checks.js";
import type { AgentBudget } from "../shared/contracts.js";
import { parseCli, runCli, UsageError } from "./program.js";

const USAGE = `usage: npm start -- [--address host:port] [--tenant <name>] [--budget '<json>'] "<prompt>" | --tour | --agent <name> "<prompt>"
  (jai-agent start ...): one agent run in this process, printed as it happens; Ctrl-C cancels it
  server: --address, TEMPORAL_ADDRESS, the \`npm run temporal\` server, else an embedded one on .jai/temporal.db
  model: JAI_MODEL=provider/modelId with its API key, else the offline demo model
  --tenant <name>    who the run is for (1-64 letters, digits, ".", "_", "-"; docs/tenants.md)
  --budget '<json>'  what the run may spend, e.g. '{"maxToolCalls":5,"maxCostUsd":0.5}' (docs/budgets.md)
  --tour             the offline tour: a session that waits for you at each step
  --agent <name>     a named agent of the worker's config module (jai-agent start --agent x --help)
  --debug            a failure's stack trace`;

async function main(): Promise<void> {
  // A named agent of the worker's config module: started on the worker process's queue, no worker here.
  if (process.argv.slice(2).some((a) => a === "--agent" || a.startsWith("--agent="))) {
    const { startByAgent } = await import("./start-agent.js");
    process.exit(await startByAgent(process.argv.slice(2)));
  }
  const parsed = parseCli(process.argv.slice(2), {
    address: { type: "string" },
    tour: { type: "boolean" },
    tenant: { type: "string" },
    budget: { type: "string" },
  });
  const { positionals } = parsed;
  const values = parsed.values as { address?: string; tour?: boolean; tenant?: string; budget?: string };
  const tour = values.tour === true;
  const badTenant = values.tenant === undefined ? undefined : tenantProblem(values.tenant);
  if (badTenant) throw new UsageError(`--tenant: ${badTenant}`);
  // --budget '{"maxToolCalls":5,"maxDuration":"2m"}': what the run may spend (docs/budgets.md).
  let budget: AgentBudget | undefined;
  if (values.budget !== undefined) {
    try {
      budget = JSON.parse(values.budget) as AgentBudget;
    } catch {
      throw new UsageError(`--budget must be JSON, e.g. '{"maxToolCalls":5,"maxCostUsd":0.5}'`);
    }
    const bad = budgetProblem(budget);
    if (bad) throw new UsageError(`--budget: ${bad}`);
  }
  const prompt = positionals.join(" ").trim();
  if (!prompt && !tour) throw new UsageError("missing <prompt>");
  // The run itself (the worker, the server, the client) is loaded only now: --help and a mistake answer at once.
  const { startRun } = await import("./start-run.js");
  await startRun({ address: values.address, tour, tenant: values.tenant, budget, prompt });
}

runCli(USAGE, main);
