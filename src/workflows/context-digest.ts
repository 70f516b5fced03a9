/**
 * The digest of a model context, computed the same way by the workflow (which
 * means a context) and by the worker (which rebuilt one from its cache, the
 * call's inline messages and references): a worker serves a call only when
 * the two agree. Pure code with no imports, so workflow code can run it
 * deterministically; workers pass Node's SHA-256 for speed (same output).
 *
 * digest = SHA-256 over the message count and each message's SHA-256, where a
 * message's bytes are its canonical JSON (keys sorted, as JSON would encode it)
 * in UTF-8. Key order, and anything JSON drops, cannot cause a false mismatch.
 */

/** A SHA-256 of a UTF-8 string, as lower-case hex. */
export type Sha256Hex = (text: string) => string;

/** JSON with object keys sorted at every level; values JSON cannot hold are dropped or null, as JSON.stringify does. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (typeof (value as { toJSON?: unknown }).toJSON === "function")
    return canonicalJson((value as { toJSON(): unknown }).toJSON());
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined || typeof v === "function" || typeof v === "symbol" ? "null" : canonicalJson(v))).join(",")}]`;
  const parts: string[] = [];
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined || typeof v === "function" || typeof v === "symbol") continue;
    parts.push(`${JSON.stringify(key)}:${canonicalJson(v)}`);
  }
  return `{${parts.join(",")}}`;
}

/** The UTF-8 length of `text`, as {@link encodeUtf8} writes it (a lone surrogate is U+FFFD, 3 bytes). */
function utf8Length(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) {
      n += 1;
      continue;
    }
    // Three bytes for one unit, or four for a surrogate pair's two; a lone surrogate is U+FFFD, three bytes.
    n += 2;
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
  }
  return n;
}

/** Writes `text` as UTF-8 (a lone surrogate becomes U+FFFD, as TextEncoder and Node do) into `out`, which has room for {@link utf8Length} bytes. */
function encodeUtf8(text: string, out: Uint8Array): void {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      out[n++] = c;
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
      } else c = 0xfffd;
    } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x800) {
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 63);
    } else if (c < 0x10000) {
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 63);
      out[n++] = 0x80 | (c & 63);
    } else {
      out[n++] = 0xf0 | (c >> 18);
      out[n++] = 0x80 | ((c >> 12) & 63);
      out[n++] = 0x80 | ((c >> 6) & 63);
      out[n++] = 0x80 | (c & 63);
    }
  }
}

const K = Int32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

// The message schedule, reused by every digest (digests are synchronous). No byte buffer is kept between calls:
// in Temporal's sandbox each workflow has its own copy of this module, so a retained buffer would cost every
// cached run its size.
const w = new Int32Array(64);

/** SHA-256 (FIPS 180-4) of a UTF-8 string, in plain JavaScript. */
export const sha256Hex: Sha256Hex = (text) => {
  // One buffer of exactly the UTF-8 bytes and the padding after them: 0x80, zeros (a new buffer is zeroed), the
  // 8-byte bit length.
  const length = utf8Length(text);
  const end = ((length + 9 + 63) >> 6) << 6;
  const bytes = new Uint8Array(end);
  encodeUtf8(text, bytes);
  bytes[length] = 0x80;
  const bitsHigh = Math.floor(length / 0x20000000);
  const bitsLow = (length << 3) >>> 0;
  bytes[end - 8] = bitsHigh >>> 24;
  bytes[end - 7] = bitsHigh >>> 16;
  bytes[end - 6] = bitsHigh >>> 8;
  bytes[end - 5] = bitsHigh;
  bytes[end - 4] = bitsLow >>> 24;
  bytes[end - 3] = bitsLow >>> 16;
  bytes[end - 2] = bitsLow >>> 8;
  bytes[end - 1] = bitsLow;
  let h0 = 0x6a09e667 | 0;
  let h1 = 0xbb67ae85 | 0;
  let h2 = 0x3c6ef372 | 0;
  let h3 = 0xa54ff53a | 0;
  let h4 = 0x510e527f | 0;
  let h5 = 0x9b05688c | 0;
  let h6 = 0x1f83d9ab | 0;
  let h7 = 0x5be0cd19 | 0;
  for (let offset = 0; offset < end; offset += 64) {
    for (let t = 0, i = offset; t < 16; t++, i += 4)
      w[t] = (bytes[i] << 24) | (bytes[i + 1] << 16) | (bytes[i + 2] << 8) | bytes[i + 3];
    for (let t = 16; t < 64; t++) {
      const x = w[t - 15];
      const y = w[t - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[t] = (w[t - 16] + s0 + w[t - 7] + s1) | 0;
    }
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    let f = h5;
    let g = h6;
    let h = h7;
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (h + S1 + ch + K[t] + w[t]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + S0 + maj) | 0;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
    h5 = (h5 + f) | 0;
    h6 = (h6 + g) | 0;
    h7 = (h7 + h) | 0;
  }
  return [h0, h1, h2, h3, h4, h5, h6, h7].map((x) => (x >>> 0).toString(16).padStart(8, "0")).join("");
};

/** The digest of one message. */
export function messageDigest(message: unknown, sha: Sha256Hex = sha256Hex): string {
  return sha(canonicalJson(message));
}

/**
 * The digest of a whole context from its messages' digests, so a caller can
 * keep each message's digest and pay only for new messages.
 */
export function combineDigests(messageDigests: string[], sha: Sha256Hex = sha256Hex): string {
  return sha(`jai-context-v1:${messageDigests.length}:${messageDigests.join("")}`);
}

/** The digest of a context: what the workflow sends with a model call and the worker checks. */
export function contextDigest(messages: unknown[], sha: Sha256Hex = sha256Hex): string {
  return combineDigests(
    messages.map((m) => messageDigest(m, sha)),
    sha,
  );
}
