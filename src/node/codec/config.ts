/**
 * Turning the codec on by configuration: JAI_CODEC_KEYS="id:base64key,..." or
 * JAI_CODEC_KEY_FILE=file (one `id:base64key` a line, `#` comments), the first
 * key current; JAI_CODEC_COMPRESS=1 deflates before encrypting.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { DataConverter } from "@temporalio/common";
import { AesGcmCodec, CodecConfigError, type AesGcmCodecOptions, type CodecKey } from "./aes-gcm.js";
import { blobStorageFromEnv } from "../blobs/config.js";

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

/**
 * Path of the failure converter that moves a failure's message and stack trace into an encoded payload
 * (./failure-converter.cts, built as .cjs): Temporal `require()`s it and bundles it into workflow code.
 */
export const ENCRYPTED_FAILURES_PATH = (() => {
  const cjs = fileURLToPath(new URL("./failure-converter.cjs", import.meta.url));
  return existsSync(cjs) ? cjs : cjs.replace(/\.cjs$/, ".cts");
})();

/** What ./failure-converter.cts leaves in a workflow bundle that holds it. */
const ENCRYPTED_FAILURES_MARKER = "jai-agent:encrypted-failures";

/**
 * The one place a data converter with payload codecs is completed: under a codec, failure messages and stack
 * traces go through it too (Temporal's `DefaultFailureConverter({ encodeCommonAttributes: true })`), else a
 * provider's error text, which can quote the request, would sit in history as plain text. A converter without
 * codecs, or with a failure converter of its own, is returned as it is.
 */
export function withEncryptedFailures(dataConverter: DataConverter): DataConverter;
export function withEncryptedFailures(dataConverter: DataConverter | undefined): DataConverter | undefined;
export function withEncryptedFailures(dataConverter: DataConverter | undefined): DataConverter | undefined {
  if (!dataConverter?.payloadCodecs?.length || dataConverter.failureConverterPath) return dataConverter;
  return { ...dataConverter, failureConverterPath: ENCRYPTED_FAILURES_PATH };
}

/** True when `dataConverter` encrypts failures with ./failure-converter.cts (its workflow bundle must hold it too). */
export const encryptsFailures = (dataConverter: DataConverter | undefined): boolean =>
  dataConverter?.failureConverterPath === ENCRYPTED_FAILURES_PATH;

/** A workflow bundle: its code, or the file holding it. */
type Bundle = { code: string } | { codePath: string };

/** Whether a workflow bundle was built with the failure converter of `withEncryptedFailures`. */
export function bundleEncryptsFailures(bundle: Bundle): boolean {
  const code = "code" in bundle ? bundle.code : readFileSync(bundle.codePath, "utf8");
  return code.includes(ENCRYPTED_FAILURES_MARKER);
}

/** Whether `bundle` would write failures in plain text where `dataConverter` encrypts them. */
export const writesPlainFailures = (bundle: Bundle | undefined, dataConverter: DataConverter | undefined): boolean =>
  bundle !== undefined && encryptsFailures(dataConverter) && !bundleEncryptsFailures(bundle);

/** Refuses a workflow bundle that would write failures in plain text under a payload codec; `who` has the codec. */
export function refusePlainFailures(
  bundle: Bundle | undefined,
  dataConverter: DataConverter | undefined,
  who: string,
): void {
  if (writesPlainFailures(bundle, dataConverter))
    throw new TypeError(
      `${who} has a payload codec but its workflowBundle writes failures in plain text: ` +
        "bundle it with bundleAgentWorkflows(path, { encryptFailures: true })",
    );
}

/**
 * The one place the project builds a data converter from the environment (worker process, CLIs, run API, console,
 * codec server, replay): the codec (failures encrypted too) and External Storage (JAI_BLOB_STORE: payloads over
 * the threshold go to a blob store, history keeps a claim; the SDK encodes before it stores, so what the store holds
 * is encrypted too). Undefined (Temporal's default) when neither is configured.
 */
export function dataConverterFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  options: Pick<AesGcmCodecOptions, "onKeyError"> = {},
): DataConverter | undefined {
  const codec = codecFromEnv(env, options);
  const externalStorage = blobStorageFromEnv(env);
  if (!codec && !externalStorage) return undefined;
  return withEncryptedFailures({
    ...(codec ? { payloadCodecs: [codec] } : {}),
    ...(externalStorage ? { externalStorage } : {}),
  });
}

/** A fresh random key as `id:base64`, for JAI_CODEC_KEYS. */
export function newCodecKey(id: string): string {
  return `${id}:${randomBytes(32).toString("base64")}`;
}
