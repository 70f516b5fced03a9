/**
 * Where the CLIs find Temporal: --address, TEMPORAL_ADDRESS, the `npm run temporal` server, localhost:7233.
 * With JAI_CODEC_KEYS / JAI_CODEC_KEY_FILE set, the client encrypts and decrypts payloads like the workers.
 */
import { Client, Connection } from "@temporalio/client";
import { dataConverterFromEnv } from "../codec/config.js";
import { runningServer } from "./server-state.js";

export function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

export async function connectClient(
  args: string[],
): Promise<{ client: Client; close(): Promise<void>; uiUrl?: string }> {
  const server = await runningServer();
  const address = flag(args, "--address") ?? process.env.TEMPORAL_ADDRESS ?? server?.address ?? "localhost:7233";
  const connection = await Connection.connect({ address });
  const dataConverter = dataConverterFromEnv();
  return {
    client: new Client({ connection, namespace: flag(args, "--namespace") ?? "default", dataConverter }),
    close: () => connection.close(),
    uiUrl: server?.uiUrl,
  };
}
