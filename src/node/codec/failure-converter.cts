/**
 * The failure converter of runs under a payload codec: Temporal's own, with a
 * failure's message and stack trace moved into its `encodedAttributes` payload
 * (which the codec then encrypts), so a provider's error text, which can quote
 * the request, never sits in history as plain text. Readers with the keys get
 * both back (the SDK, `decodeHistory`, the UI through the codec server).
 *
 * Temporal loads it by path: `require()`d by workers and clients, bundled by
 * webpack into the workflow code. So it is plain CommonJS with no TypeScript
 * syntax: jest, tsx and webpack load this source as it is, and tsc emits it as
 * dist/codec/failure-converter.cjs. See `withEncryptedFailures` (config.ts).
 */
"use strict";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { DefaultFailureConverter } = require("@temporalio/common");

/** Names this module in a workflow bundle: a bundle holding it encrypts the failures its workflows write. */
exports.marker = "jai-agent:encrypted-failures";
exports.failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
