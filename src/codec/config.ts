/**
 * Turning the codec on by configuration: JAI_CODEC_KEYS="id:base64key,..." or
 * JAI_CODEC_KEY_FILE=file (one `id:base64key` a line, `#` comments), the first
 * key current; JAI_CODEC_COMPRESS=1 deflates before encrypting.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { DataConverter } from "@temporalio/common";
import { AesGcmCodec, CodecConfigError, type AesGcmCodecOptions, type CodecKey } from "./aes-gcm.js";

/** Parses `id:base64key` entries separated by commas or new lines; `source` names where they came from in errors. */
export function parseCodecKeys(text: string, source: string): CodecKey[] {
  const entries = text
    .split(/[\n,]/)
    .map((line) => line.replace(/#.*$/, "").trim())
    .filter(Boolean);
  if (entries.length === 0)
    throw new CodecConfigError(`${source}: no keys (expected "id:base64key" entries, the current one first)`);
  return entries.map((entry, i) => {
    const at = entry.indexOf(":");
    if (at <= 0) throw new CodecConfigError(`${source}: entry ${i + 1} is not "id:base64key"`);
    const id = entry.slice(0, at).trim();
    const encoded = entry.slice(at + 1).trim();
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(encoded)) throw new CodecConfigError(`${source}: key "${id}" is not base64`);
    return { id, key: Buffer.from(encoded, "base64") };
  });
}

const on = (value: string | undefined) => value !== undefined && /^(1|true|on|yes)$/i.test(value.trim());

/** The codec the environment asks for, or undefined when neither JAI_CODEC_KEYS nor JAI_CODEC_KEY_FILE is set. */
export function codecFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  options: Pick<AesGcmCodecOptions, "onKeyError"> = {},
): AesGcmCodec | undefined {
  const inline = env.JAI_CODEC_KEYS?.trim();
  const file = env.JAI_CODEC_KEY_FILE?.trim();
  if (inline && file)
    throw new CodecConfigError("set JAI_CODEC_KEYS or JAI_CODEC_KEY_FILE, not both (which key would be current?)");
  let keys: CodecKey[];
  if (inline) keys = parseCodecKeys(inline, "JAI_CODEC_KEYS");
  else if (file) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new CodecConfigError(
        `JAI_CODEC_KEY_FILE=${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      );
    }
    keys = parseCodecKeys(text, `JAI_CODEC_KEY_FILE=${file}`);
  } else return undefined;
  return new AesGcmCodec({ keys, compress: on(env.JAI_CODEC_COMPRESS), ...options });
}

/** A data converter with the environment's codec, or undefined (Temporal's default) when none is configured. */
export function dataConverterFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  options: Pick<AesGcmCodecOptions, "onKeyError"> = {},
): DataConverter | undefined {
  const codec = codecFromEnv(env, options);
  return codec ? { payloadCodecs: [codec] } : undefined;
}

/** A fresh random key as `id:base64`, for JAI_CODEC_KEYS. */
export function newCodecKey(id: string): string {
  return `${id}:${randomBytes(32).toString("base64")}`;
}
