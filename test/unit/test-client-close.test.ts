/**
 * The tests' client connection (test/support/client-connection.ts) against a gRPC server that answers every call
 * RESOURCE_EXHAUSTED, as a dev server on a busy machine may: a call the SDK is retrying when the connection closes
 * ends CANCELLED instead of throwing "Channel has been shut down" from the retry's timer into whatever test runs
 * next in the same jest worker.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Server, ServerCredentials, status, type ServiceError } from "@grpc/grpc-js";
import { connectTestClient } from "../support/client-connection.js";

let server: Server;
let port: number;
let served = 0;

beforeAll(async () => {
  server = new Server();
  server.register(
    "/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo",
    (_call: unknown, callback: (err: Partial<ServiceError>) => void) => {
      served++;
      callback({ code: status.RESOURCE_EXHAUSTED, details: "busy" });
    },
    (x: Buffer) => x,
    (x: Buffer) => x,
    "unary",
  );
  port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
});

afterAll(() => server.forceShutdown());

/** Runs `body`, then expects nothing was thrown outside it (the SDK's retry throws from a timer). */
async function nothingUncaught(body: () => Promise<void>): Promise<void> {
  const uncaught: unknown[] = [];
  const listener = (err: unknown) => uncaught.push(err);
  process.prependListener("uncaughtException", listener);
  try {
    await body();
    expect(uncaught).toEqual([]);
  } finally {
    process.removeListener("uncaughtException", listener);
  }
}

/** The call's outcome: "answered", or the gRPC status code it ended with. */
const outcomeOf = (call: Promise<unknown>) =>
  call.then(
    () => "answered",
    (err: { code?: number }) => err.code,
  );

describe("the tests' client connection", () => {
  it("a call being retried when the connection closes ends CANCELLED; nothing is thrown afterwards", () =>
    nothingUncaught(async () => {
      const connection = await connectTestClient(`127.0.0.1:${port}`, true);
      const call = outcomeOf(connection.workflowService.getSystemInfo({}));
      // The first answer is in: the SDK waits ~1 s before it retries a RESOURCE_EXHAUSTED.
      while (served === 0) await new Promise((r) => setTimeout(r, 10));
      await connection.close();
      // The call ends only from the retry's timer: by then it found the connection closed, and threw nothing.
      expect(await call).toBe(status.CANCELLED);
      expect(served).toBe(1);
    }));

  it("a call made after the connection closed ends CANCELLED, not with a TypeError from the SDK's retry", () =>
    nothingUncaught(async () => {
      const connection = await connectTestClient(`127.0.0.1:${port}`, true);
      await connection.close();
      const before = served;
      const outcome = await outcomeOf(connection.workflowService.getSystemInfo({}));
      expect(outcome).toBe(status.CANCELLED);
      expect(served).toBe(before);
    }));
});
