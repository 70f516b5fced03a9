/**
 * The built-in payload codec: AES-256-GCM from Node's crypto, a random 96-bit
 * nonce per payload, the key id in the payload's metadata (and bound to the
 * ciphertext as associated data), several keys so they rotate, and optional
 * compression before encryption. Temporal only ever stores the ciphertext.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { Payload, PayloadCodec, SerializationContext } from "@temporalio/common";
import proto from "@temporalio/proto";

const { temporal } = proto;

/** `encoding` of a payload this codec made. */
export const ENCRYPTED_ENCODING = "binary/encrypted";
/** Metadata key naming the key a payload was encrypted with. */
export const KEY_ID_METADATA = "encryption-key-id";
/** Metadata key naming the cipher (and the compression applied before it). */
export const CIPHER_METADATA = "encryption-cipher";
const CIPHER = "AES256-GCM";
const CIPHER_DEFLATE = "AES256-GCM+deflate";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** One AES-256 key and the id written next to what it encrypts. */
export interface CodecKey {
  /** Short, non-secret name (e.g. "2026-11"); stored in every payload's metadata. */
  id: string;
  /** 32 bytes. */
  key: Uint8Array;
}

/**
 * A payload this process cannot decrypt: its key is not loaded (`reason:
 * "missing-key"`), or the key with that id does not open it (`"wrong-key"`:
 * another key under the same id, or a tampered payload). Never a garbage decode.
 */
export class CodecKeyError extends Error {
  constructor(
    /** The key id the payload names. */
    readonly keyId: string,
    /** Why it cannot be decrypted. */
    readonly reason: "missing-key" | "wrong-key" | "malformed",
    /** The key ids this process has. */
    readonly loadedKeyIds: string[],
  ) {
    super(
      reason === "missing-key" && loadedKeyIds.length === 0
        ? `payload encrypted with key "${keyId}", and this process has no codec keys: set JAI_CODEC_KEYS (or JAI_CODEC_KEY_FILE) with key "${keyId}"`
        : reason === "missing-key"
          ? `payload encrypted with key "${keyId}", which this process does not have (loaded: ${loadedKeyIds.join(", ")}); add it to JAI_CODEC_KEYS / JAI_CODEC_KEY_FILE as an old key`
          : reason === "wrong-key"
            ? `payload encrypted with key "${keyId}" does not decrypt with the key loaded under that id: the key material differs (or the payload was altered)`
            : `payload marked as encrypted with key "${keyId}" is malformed (too short for a nonce and tag)`,
    );
    this.name = "CodecKeyError";
  }
}

/** A key set that cannot be used: names what is wrong. */
export class CodecConfigError extends Error {
  override name = "CodecConfigError";
}

export interface AesGcmCodecOptions {
  /** Keys; the first encrypts new payloads, all of them decrypt. */
  keys: CodecKey[];
  /** Deflate each payload before encrypting it (only kept when smaller). Default false: see the README on compression and length. */
  compress?: boolean;
  /**
   * Called with every payload that cannot be decrypted, before the error is thrown (the worker
   * process logs it loudly: in a workflow task Temporal retries such a failure until the key is there).
   */
  onKeyError?: (error: CodecKeyError, context?: SerializationContext) => void;
}

const utf8 = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null | undefined) => (b ? Buffer.from(b).toString("utf8") : undefined);

export class AesGcmCodec implements PayloadCodec {
  readonly currentKeyId: string;
  private readonly keys = new Map<string, Buffer>();
  private readonly compress: boolean;
  private readonly onKeyError?: AesGcmCodecOptions["onKeyError"];

  constructor(options: AesGcmCodecOptions) {
    if (options.keys.length === 0) throw new CodecConfigError("the codec needs at least one key");
    for (const { id, key } of options.keys) {
      if (!/^[A-Za-z0-9._-]{1,64}$/.test(id))
        throw new CodecConfigError(`codec key id "${id}" must be 1-64 characters of A-Z a-z 0-9 . _ -`);
      if (key.length !== 32)
        throw new CodecConfigError(
          `codec key "${id}" is ${key.length} bytes; AES-256 needs 32 (e.g. \`openssl rand -base64 32\`)`,
        );
      if (this.keys.has(id)) throw new CodecConfigError(`codec key id "${id}" is given twice`);
      this.keys.set(id, Buffer.from(key));
    }
    this.currentKeyId = options.keys[0].id;
    this.compress = options.compress ?? false;
    this.onKeyError = options.onKeyError;
  }

  /** Ids of the loaded keys, current first. */
  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.encrypt(p));
  }

  async decode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    try {
      return payloads.map((p) => (text(p.metadata?.encoding) === ENCRYPTED_ENCODING ? this.decrypt(p) : p));
    } catch (err) {
      if (err instanceof CodecKeyError) this.onKeyError?.(err, context);
      throw err;
    }
  }

  private encrypt(payload: Payload): Payload {
    let plain: Uint8Array = temporal.api.common.v1.Payload.encode(payload).finish();
    let cipher = CIPHER;
    if (this.compress) {
      const packed = deflateRawSync(plain);
      if (packed.length < plain.length) {
        plain = packed;
        cipher = CIPHER_DEFLATE;
      }
    }
    const id = this.currentKeyId;
    const nonce = randomBytes(NONCE_BYTES);
    const aes = createCipheriv("aes-256-gcm", this.keys.get(id)!, nonce);
    // The key id and cipher are authenticated: a payload relabelled with another id fails instead of decoding to garbage.
    aes.setAAD(utf8(`${id}\n${cipher}`));
    const body = Buffer.concat([aes.update(plain), aes.final()]);
    return {
      metadata: { encoding: utf8(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: utf8(id), [CIPHER_METADATA]: utf8(cipher) },
      data: Buffer.concat([nonce, body, aes.getAuthTag()]),
    };
  }

  private decrypt(payload: Payload): Payload {
    const id = text(payload.metadata?.[KEY_ID_METADATA]) ?? "(none)";
    const cipher = text(payload.metadata?.[CIPHER_METADATA]) ?? CIPHER;
    const key = this.keys.get(id);
    if (!key) throw new CodecKeyError(id, "missing-key", this.keyIds);
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < NONCE_BYTES + TAG_BYTES || (cipher !== CIPHER && cipher !== CIPHER_DEFLATE))
      throw new CodecKeyError(id, "malformed", this.keyIds);
    let plain: Buffer;
    try {
      const aes = createDecipheriv("aes-256-gcm", key, data.subarray(0, NONCE_BYTES));
      aes.setAAD(utf8(`${id}\n${cipher}`));
      aes.setAuthTag(data.subarray(data.length - TAG_BYTES));
      plain = Buffer.concat([aes.update(data.subarray(NONCE_BYTES, data.length - TAG_BYTES)), aes.final()]);
    } catch {
      throw new CodecKeyError(id, "wrong-key", this.keyIds);
    }
    if (cipher === CIPHER_DEFLATE) plain = inflateRawSync(plain);
    const inner = temporal.api.common.v1.Payload.decode(plain);
    return { metadata: inner.metadata, data: inner.data };
  }
}

/**
 * The codec of a client without keys (the CLIs when neither JAI_CODEC_KEYS nor JAI_CODEC_KEY_FILE is set):
 * passes payloads through, and meets an encrypted one with a CodecKeyError naming its key id and JAI_CODEC_KEYS
 * instead of the SDK's bare `Unknown encoding: binary/encrypted`.
 */
export class NoKeysCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads;
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    for (const p of payloads)
      if (text(p.metadata?.encoding) === ENCRYPTED_ENCODING)
        throw new CodecKeyError(text(p.metadata?.[KEY_ID_METADATA]) ?? "(none)", "missing-key", []);
    return payloads;
  }
}
