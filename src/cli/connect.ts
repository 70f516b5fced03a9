/**
 * The CLIs' Temporal client, configured like the worker process: Temporal's environment configuration
 * (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE + temporal.toml;
 * see src/node/connection.ts), --address / --namespace over it, else the `npm run temporal` dev
 * server, else localhost:7233. With JAI_CODEC_KEYS / JAI_CODEC_KEY_FILE set, payloads are encrypted and
 * decrypted like the workers do; without them, an encrypted payload is an error naming its key id and
 * JAI_CODEC_KEYS (not the SDK's `Unknown encoding: binary/encrypted`).
 */
import { connect as tcpConnect } from "node:net";
import { Client, Connection } from "@temporalio/client";
import type { DataConverter } from "@temporalio/common";
import { NoKeysCodec } from "../node/codec/aes-gcm.js";
import { dataConverterFromEnv } from "../node/codec/config.js";
import { temporalTarget, type TemporalTarget } from "../node/connection.js";
import { runningServer } from "../node/server-state.js";
import { NoServerError, noServer } from "./program.js";

/** The environment's data converter, or one whose codec only names the missing keys of encrypted payloads. */
export function cliDataConverter(env: NodeJS.ProcessEnv = process.env): DataConverter {
  const converter = dataConverterFromEnv(env) ?? {};
  // The blob store (JAI_BLOB_STORE) rides along either way.
  return converter.payloadCodecs?.length ? converter : { ...converter, payloadCodecs: [new NoKeysCodec()] };
}

export interface CliClient {
  client: Client;
  close(): Promise<void>;
  /** The `npm run temporal` server's Web UI, when that is the server used. */
  uiUrl?: string;
  /** Where it connected (address, namespace, TLS / API key; never the key itself). */
  target: TemporalTarget;
}

/** A client from flags (`address`, `namespace`) and the environment. */
export async function connectCli(
  options: { address?: string; namespace?: string } = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<CliClient> {
  // Codec keys first: a bad key set is reported before any connection is made.
  const dataConverter = cliDataConverter(env);
  const configured = options.address ?? env.TEMPORAL_ADDRESS;
  const server = configured ? undefined : await runningServer();
  const target = temporalTarget(env, {
    address: options.address,
    namespace: options.namespace,
    fallbackAddress: server?.address,
  });
  const address = target.connectionOptions.address;
  // Nothing listening fails in milliseconds and says so, instead of the client's 10 s wait and a transport error.
  await probeServer(address);
  const connection = await Connection.connect(target.connectionOptions).catch((err: unknown) => {
    throw noServer(err, address) ?? err;
  });
  return {
    client: new Client({ connection, namespace: target.namespace, dataConverter }),
    close: () => connection.close(),
    uiUrl: server && server.address === target.connectionOptions.address ? server.uiUrl : undefined,
    target,
  };
}

/** `fn` with a client from `connectCli`, closed once `fn` is done, however it ends. */
export async function withCliClient<T>(
  options: { address?: string; namespace?: string },
  fn: (client: Client) => Promise<T>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<T> {
  const { client, close } = await connectCli(options, env);
  try {
    return await fn(client);
  } finally {
    await close();
  }
}

/**
 * Whether anything listens at "host:port": a refused connection or a name that does not resolve is a
 * NoServerError at once; a slow answer is left to the client's own timeout.
 */
export async function probeServer(address: string, timeoutMs = 3000): Promise<void> {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(address);
  if (!m) return;
  await new Promise<void>((resolve, reject) => {
    const socket = tcpConnect({ host: m[1], port: Number(m[2]) });
    const done = (err?: NoServerError) => {
      socket.destroy();
      if (err) reject(err);
      else resolve();
    };
    socket.setTimeout(timeoutMs, () => done());
    socket.once("connect", () => done());
    socket.once("error", (err) => done(noServer(err, address)));
  });
}
