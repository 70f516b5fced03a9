/** Makes sure a Temporal CLI is available (builds it into the cache folder when missing) and prints its path. */
import { findTemporalCli } from "../src/node/dev-server.js";

const cli = findTemporalCli({ log: (line) => console.error(line) });
if (cli) console.log(cli);
else console.error("No Temporal CLI found or built; tests will try @temporalio/testing's download (needs internet).");
