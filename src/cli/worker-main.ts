/** Entry point of a worker process: `node dist/cli/worker-main.js` (the image), `npm run worker`, `jai-agent worker`. */
import { runWorkerProcess, WORKER_USAGE } from "../worker/process/run.js";
import { runCli } from "./program.js";

// A mistake in the flags prints the usage; any other failure one line (no server, a bad value), --debug its stack.
runCli(WORKER_USAGE, () => runWorkerProcess({ argv: process.argv.slice(2) }));
