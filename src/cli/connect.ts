/** Where the CLIs find Temporal: --address, TEMPORAL_ADDRESS, the `npm run temporal` server, localhost:7233. */
import { Client, Connection } from "@temporalio/client";
import { runningServer } from "./server-state.js";

export function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

export async function connectClient(args: string[]): Promise<{ client: Client; close(): Promise<void>; uiUrl?: string }> {
  const server = await runningServer();
  const address = flag(args, "--address") ?? process.env.TEMPORAL_ADDRESS ?? server?.address ?? "localhost:7233";
  const connection = await Connection.connect({ address });
  return { client: new Client({ connection, namespace: flag(args, "--namespace") ?? "default" }), close: () => connection.close(), uiUrl: server?.uiUrl };
}
