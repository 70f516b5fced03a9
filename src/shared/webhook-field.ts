/** The `webhook` field of a run input. Pure (no Node modules): the workflow checks it too. */

/** A run's webhook as the caller gives it (plain JSON, in history: no secret, only its name). */
export interface WebhookTarget {
  /** Where the outcome is POSTed (http or https). */
  url: string;
  /** Name of the signing secret in the worker's config (`webhooks.secrets`) or environment (`JAI_WEBHOOK_SECRET_<NAME>`). */
  secretName: string;
}

/** What is wrong with a webhook field, naming it; undefined when fine. Pure: also runs in workflow code. */
export function checkWebhookField(value: unknown, field = "webhook"): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return `"${field}" must be { url, secretName }`;
  const { url, secretName } = value as Record<string, unknown>;
  if (typeof url !== "string" || !/^https?:\/\/[^/?#\s]+/i.test(url))
    return `"${field}.url" must be an http or https URL`;
  if (typeof secretName !== "string" || !/^[A-Za-z0-9_.-]{1,64}$/.test(secretName))
    return `"${field}.secretName" must be 1-64 letters, digits, "_", "." or "-"`;
  return undefined;
}
