/** Whether `v` is a plain JSON object (not null, not an array): what run inputs and updates are checked against. */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
