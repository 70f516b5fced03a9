/**
 * Where a worker or client process connects: Temporal's environment
 * configuration (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
 * TEMPORAL_TLS_*, TEMPORAL_PROFILE + temporal.toml / TEMPORAL_CONFIG_FILE), so a
 * local server, a self-hosted cluster with mTLS and Temporal Cloud need no code change.
 */
import { existsSync } from "node:fs";
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

/**
 * Reads Temporal's environment configuration; `overrides` (e.g. from flags) win. `fallbackAddress` (e.g. a local
 * dev server) is used when neither the overrides nor the configuration name an address, before localhost:7233.
 */
export function temporalTarget(
  env: NodeJS.ProcessEnv = process.env,
  overrides: { address?: string; namespace?: string; fallbackAddress?: string } = {},
): TemporalTarget {
  // The library reads a missing TEMPORAL_CONFIG_FILE as "no file": a typo would silently mean localhost.
  if (env.TEMPORAL_CONFIG_FILE && !existsSync(env.TEMPORAL_CONFIG_FILE)) {
    throw new Error(
      `Temporal environment configuration: TEMPORAL_CONFIG_FILE=${env.TEMPORAL_CONFIG_FILE} does not exist`,
    );
  }
  let loaded;
  try {
    loaded = loadClientConnectConfig({ overrideEnvVars: env as Record<string, string> });
  } catch (err) {
    throw new Error(`Temporal environment configuration: ${(err as Error).message}`);
  }
  const address =
    overrides.address ?? loaded.connectionOptions.address ?? overrides.fallbackAddress ?? "localhost:7233";
  const namespace = overrides.namespace ?? loaded.namespace ?? "default";
  const o = loaded.connectionOptions;
  const tls = o.tls ? (typeof o.tls === "object" && o.tls.clientCertPair ? "mTLS" : "TLS") : "plaintext";
  const auth = o.apiKey ? ", API key" : "";
  return {
    connectionOptions: { ...o, address },
    namespace,
    describe: `${address} namespace "${namespace}" (${tls}${auth})`,
  };
}
