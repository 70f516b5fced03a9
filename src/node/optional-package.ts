/**
 * Packages only an optional feature needs (the MCP SDK for `mcpServers`, OpenTelemetry's SDK for traces) are
 * optional peer dependencies: a project that never uses the feature never installs them. The feature loads them on
 * first use through `loadOptional`, and a missing one is a clear error naming the package and how to add it.
 */

/** A feature was asked for, and a package it needs is not installed. */
export class MissingPackageError extends Error {
  constructor(
    /** The package to install. */
    readonly packageName: string,
    /** What asked for it. */
    readonly feature: string,
  ) {
    super(`${feature} needs the package ${packageName}, which is not installed: npm install ${packageName}`);
    this.name = "MissingPackageError";
  }
}

/** The package a module-not-found error names, if it is one of `packages` (or a path inside one). */
function missingOf(err: unknown, packages: readonly string[]): string | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return undefined;
  const message = String((err as Error).message);
  return packages.find((p) => message.includes(`'${p}'`) || message.includes(`'${p}/`) || message.includes(`${p}/`));
}

/** Loads what `feature` needs; a missing package of `packages` becomes a MissingPackageError naming it. */
export async function loadOptional<T>(
  feature: string,
  packages: readonly string[],
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const missing = missingOf(err, packages);
    throw missing ? new MissingPackageError(missing, feature) : err;
  }
}

/** `loadOptional` for a synchronous load (a `require.resolve`). */
export function resolveOptional<T>(feature: string, packages: readonly string[], load: () => T): T {
  try {
    return load();
  } catch (err) {
    const missing = missingOf(err, packages);
    throw missing ? new MissingPackageError(missing, feature) : err;
  }
}

/** The MCP client SDK (`mcpServers`). */
export const MCP_PACKAGES = ["@modelcontextprotocol/sdk"] as const;
/** OpenTelemetry's SDK and Temporal's OpenTelemetry interceptors (traces). */
export const TRACING_PACKAGES = [
  "@temporalio/interceptors-opentelemetry",
  "@opentelemetry/sdk-trace-base",
  "@opentelemetry/resources",
  "@opentelemetry/core",
  "@opentelemetry/context-async-hooks",
  "@opentelemetry/exporter-trace-otlp-http",
] as const;
