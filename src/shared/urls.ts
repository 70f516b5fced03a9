/** URL text read without a try/catch at every caller (Node 20 has no `URL.parse`). Pure: every side uses it. */

/** `text` as a URL; undefined when it is not one. */
export function parseUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** `text` as an http(s) URL; undefined when it is not a URL or has another scheme. */
export function httpUrl(text: string): URL | undefined {
  const url = parseUrl(text);
  return url && (url.protocol === "http:" || url.protocol === "https:") ? url : undefined;
}
