/** Entry point of a worker process: `node dist/cli/worker-main.js` (the image), `npm run worker`, `jai-agent worker`. */
import { runWorkerProcess, WORKER_USAGE } from "../worker-process/run.js";

runWorkerProcess({ argv: process.argv.slice(2) }).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`jai-agent worker: ${err instanceof Error ? err.message : String(err)}`);
    if (err instanceof TypeError && /option|argument/i.test(err.message)) console.error(WORKER_USAGE);
    process.exit(1);
  },
);
