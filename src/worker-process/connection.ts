/**
 * Where a worker or client process connects: Temporal's environment
 * configuration (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
 * TEMPORAL_TLS_*, TEMPORAL_PROFILE + temporal.toml / TEMPORAL_CONFIG_FILE), so a
 * local server, a self-hosted cluster with mTLS and Temporal Cloud need no code change.
 */
import { loadClientConnectConfig } from "@temporalio/envconfig";
import type { NativeConnectionOptions } from "@temporalio/worker";

export interface TemporalTarget {
  /** Connection options for `NativeConnection.connect` (and, being a superset, `Connection.connect`). */
  connectionOptions: NativeConnectionOptions & { address: string };
  /** Namespace; "default" unless configured. */
  namespace: string;
  /** What to print about it (never the API key). */
  describe: string;
}

/** Reads Temporal's environment configuration; `overrides` (e.g. from flags) win. */
export function temporalTarget(env: NodeJS.ProcessEnv = process.env, overrides: { address?: string; namespace?: string } = {}): TemporalTarget {
  let loaded;
  try {
    loaded = loadClientConnectConfig({ overrideEnvVars: env as Record<string, string> });
  } catch (err) {
    const missingDefaultFile = (err as NodeJS.ErrnoException).code === "ENOENT" && !env.TEMPORAL_CONFIG_FILE;
    if (!missingDefaultFile) throw new Error(`Temporal environment configuration: ${(err as Error).message}`);
    // No temporal.toml in the default place: environment variables alone.
    loaded = loadClientConnectConfig({ overrideEnvVars: env as Record<string, string>, disableFile: true });
  }
  const address = overrides.address ?? loaded.connectionOptions.address ?? "localhost:7233";
  const namespace = overrides.namespace ?? loaded.namespace ?? "default";
  const o = loaded.connectionOptions;
  const tls = o.tls ? (typeof o.tls === "object" && o.tls.clientCertPair ? "mTLS" : "TLS") : "plaintext";
  const auth = o.apiKey ? ", API key" : "";
  return { connectionOptions: { ...o, address }, namespace, describe: `${address} namespace "${namespace}" (${tls}${auth})` };
}
