/**
 * What a worker serves, in one place: `createAgentWorker`, `AgentPlugin` and
 * the worker process's config file all take these fields, with the same
 * meaning and defaults.
 */
import type { DataConverter } from "@temporalio/common";
import type { WorkerOptions } from "@temporalio/worker";
import type { Api, Model } from "@jai/ai";
import type { ApiKeyResolver, ContextCompactor, ProviderLimits } from "./activities/index.js";
import type { AgentDefinition } from "../shared/agents.js";
import type { TenantsConfig } from "../shared/tenants.js";
import type { EventTapOptions } from "./events/tap.js";
import type { McpServerConfig } from "./mcp/config.js";
import type { AgentEventSink, AgentTool } from "../shared/contracts.js";
import type { WebhookOptions } from "./webhooks/deliver.js";

/** What any worker that serves agent runs is given: tools, models, keys, events, its context cache and compaction. */
export interface AgentServeOptions {
  /** Tools the runs may call. */
  tools?: AgentTool<any>[];
  /** Extra models a run may name as "provider/modelId" (e.g. a local server or the faux provider). */
  models?: Model<Api>[];
  /**
   * Base URLs (e.g. a self-hosted vLLM or a company proxy) where a run may point a model object of one of
   * @jai/ai's built-in APIs, besides the base URLs of `models` and @jai/ai's catalogue. Without it a run's model
   * object is served only when it is one of those models at its own base URL, headers and api; anything else is
   * refused at setup (`InvalidRunInput`, naming the field), and the model activity never sends a request, nor the
   * key, elsewhere. The worker process adds `JAI_ALLOWED_MODEL_BASE_URLS` / `--allowed-model-base-urls`.
   * Contract: every provider key `getApiKey` resolves may be sent to these URLs (a run names the provider):
   * list only endpoints you trust with them; each is a plain http(s) URL (no credentials, query or fragment;
   * a `TypeError` at worker creation), compared after dropping a trailing slash.
   */
  allowedModelBaseUrls?: string[];
  /** API keys per provider; default: @jai/ai's environment variables. */
  getApiKey?: ApiKeyResolver;
  /** Receives every AgentEvent of every run served here (logging, metrics, a UI). */
  onEvent?: AgentEventSink;
  /**
   * Live events for `handle.events()` in any process, token deltas included (docs/streaming.md): the worker keeps
   * its runs' events in a bounded tap, serves them with the run API, and names that server in its Temporal
   * identity, where clients find it. Default on: 127.0.0.1 at a free port, token JAI_HTTP_TOKEN else minted
   * (`AgentWorker.events.token`). `false`: none (clients rebuild events from transcripts, without deltas).
   */
  events?: boolean | AgentEventsServeOptions;
  /** At most this many runs' model contexts in memory; default: as many as `contextCacheBytes` allows. 0 disables the cache. */
  contextCacheSize?: number;
  /** Byte budget of the model-context cache (JSON bytes of cached messages and tool outputs); default 256 MB. */
  contextCacheBytes?: number;
  /** Compaction for runs started with `compaction: "worker"` (e.g. an LLM summary). */
  compactContext?: ContextCompactor;
  /**
   * Caps on this worker's model calls, by provider name (`"*"`: each provider not named): `maxConcurrent` calls at
   * once (a stream counts until it ends) and `requestsPerSecond` (spaced evenly), retries included. A call waits
   * in the worker for its turn, heartbeating, and may be cancelled meanwhile. An error answer with Retry-After
   * (429, 5xx) pauses every call of the worker to that provider, then one call probes before the rest go.
   * Per worker: for a fleet-wide quota give each worker its share (docs/provider-limits.md). Contract: positive
   * numbers, `maxConcurrent` an integer; anything else is a `ProviderLimitsError` (a TypeError) naming the field,
   * at worker creation. The worker process adds `JAI_PROVIDER_LIMITS` / `--provider-limits` (JSON).
   */
  providerLimits?: ProviderLimits;
}

/** What a worker the agent creates itself (`createAgentWorker`, the worker process) is given besides. */
export interface AgentWorkerServeOptions extends AgentServeOptions {
  /**
   * MCP servers whose tools runs may call, named `<server>__<tool>`. Each worker
   * opens its own connection (a stdio server is a child process of the worker).
   */
  mcpServers?: McpServerConfig[];
  /** Completion webhooks: signing secrets by name, each bound to the origins it signs for (else `JAI_WEBHOOK_SECRET_<NAME>` + `JAI_WEBHOOK_ORIGINS_<NAME>`), whether private hosts may be reached. */
  webhooks?: WebhookOptions;
  /**
   * Data converter (e.g. `{ payloadCodecs: [codec] }` for encryption) for the worker and the client its
   * activities use to read a run's context; default `workerOptions.dataConverter`, else Temporal's.
   */
  dataConverter?: DataConverter;
  /**
   * Send each run's model calls to this worker's own task queue while it answers them, so they find
   * the context in its cache (default true). Off: model calls go to the shared queue. Turn it off on a
   * server with eager activity execution (`system.enableActivityEagerExecution`): there a call on the
   * shared queue goes straight to the worker completing the run's workflow task, the one that holds the
   * run (and its context), skipping matching — a routed call cannot (README, "Eager dispatch").
   */
  routeModelCalls?: boolean;
  /**
   * At most this many workflow tasks from the shared queue at once, of `maxConcurrentWorkflowTaskExecutions`
   * (default 40). Such a task is nearly always a run this worker does not hold, which it replays first. When a
   * worker dies the survivors get all its runs at once: uncapped, each takes dozens together, replays them side by
   * side on one workflow thread, and the last ones outlive their workflow task timeout (counted from when the task
   * was taken) and are replayed again elsewhere. Capped, the rest wait in the server's queue, where no timeout
   * runs (docs/lab/scaling.md). Default: no cap. Contract: an integer from 1 to the slots - 1 (a `RangeError`),
   * and not with `workerOptions.tuner` (a `TypeError`).
   */
  maxConcurrentReplays?: number;
  /** Any other Temporal worker option (concurrency limits, interceptors, tuning, ...). */
  workerOptions?: Partial<WorkerOptions>;
}

/** Where and how a worker serves its runs' live events (and the run API); see `AgentServeOptions.events`. */
export interface AgentEventsServeOptions {
  /** Where it listens; default 127.0.0.1. Anywhere else needs a token. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /**
   * Bearer token clients send; default JAI_HTTP_TOKEN, else one minted at start. A client sends its token
   * (`JAI_HTTP_TOKEN`) to a server found in history only on a host in its `JAI_EVENTS_TRUSTED_HOSTS`.
   * `false` (or JAI_HTTP_TOKEN=off): none, on loopback only.
   */
  token?: string | false;
  /** Host names it answers to besides loopback and its address; default JAI_HTTP_ALLOWED_HOSTS. */
  allowedHosts?: string[];
  /** Base URL of the Temporal UI, linked from the run console. */
  temporalUiUrl?: string;
  /** Named agents the run API and the console start by name (src/shared/agents.ts). */
  agents?: AgentDefinition[];
  /** Per-tenant limits of the run API's starts (src/shared/tenants.ts, docs/tenants.md). */
  tenants?: TenantsConfig;
  /** Bounds of the in-memory event log (default 4 MB per run, 500 runs). */
  tap?: EventTapOptions;
}
