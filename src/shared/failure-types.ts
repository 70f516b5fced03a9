/**
 * Failure type names that one side throws and another matches: thrown by
 * activities (most by the classifier, worker/activities/classify.ts), matched by the
 * workflow or the client. A name matched by string in two places is a
 * contract: it lives here.
 */
export const FailureType = {
  /** The provider said the context is too long: the loop compacts once and calls again. */
  ContextOverflow: "ContextOverflow",
  /** No worker-side context matches the call's digest, even read from the workflow: retried. */
  ContextMismatch: "ContextMismatch",
  /** The run's context could not be read from the workflow (no client, or it changed while read). */
  ContextUnavailable: "ContextUnavailable",
  /**
   * The provider says the model does not exist (HTTP 404, not_found_error, model_not_found): not retried. A run
   * with a fallback chain gives the call to its next model; any other run ends with the message as its error.
   */
  ModelGone: "ModelGone",
  /** The stream stopped sending data: retried. */
  ModelStreamInterrupted: "ModelStreamInterrupted",
  /** The model cannot be called at all (unknown API, no key): not retried. */
  ModelUnsupported: "ModelUnsupported",
  /**
   * The model's provider needs an API key and the worker has none (no environment variable, nothing from its
   * getApiKey): not retried, nothing sent. The message names the variables to set and the worker.
   */
  ModelApiKeyMissing: "ModelApiKeyMissing",
  /**
   * This worker has no provider for the model's api (or does not know its "provider/modelId"), while another
   * worker of the queue may: retried for a bounded time, so that one can take it. The message names the model,
   * the api and the worker.
   */
  ModelNotServed: "ModelNotServed",
  /** The run's input names something this worker cannot serve. */
  InvalidRunInput: "InvalidRunInput",
  /** A tool registered in the worker is malformed. */
  InvalidToolConfig: "InvalidToolConfig",
  /** A run asked for `compaction: "worker"` on a worker without a compactor. */
  CompactionUnavailable: "CompactionUnavailable",
} as const;
