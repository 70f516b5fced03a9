/** `npm run ensure-tools`: builds the service tests' tools into ~/.cache/jai-tools when missing and prints where they are. */
import { ensureCompose, ensureHadolint, ensureTemporalServer, ensureVersioningServer, findPostgres } from "./tools.js";

const log = (line: string) => console.error(line);
const server = ensureTemporalServer(log);
console.log(
  `temporal server: ${server.server}\ntemporal-sql-tool: ${server.sqlTool}\npostgres schema: ${server.postgresSchema}`,
);
console.log(`temporal server (versioning): ${ensureVersioningServer(log)}`);
console.log(`docker compose: ${ensureCompose(log)}`);
console.log(`hadolint: ${ensureHadolint(log)}`);
console.log(`postgres: ${findPostgres().bin}`);
