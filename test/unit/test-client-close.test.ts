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

describe("the tests' client connection", () => {
  it("a call being retried when the connection closes ends CANCELLED; nothing is thrown afterwards", async () => {
    const uncaught: unknown[] = [];
    const listener = (err: unknown) => uncaught.push(err);
    process.prependListener("uncaughtException", listener);
    try {
      const connection = await connectTestClient(`127.0.0.1:${port}`, true);
      const call = connection.workflowService.getSystemInfo({}).then(
        () => "answered",
        (err: { code?: number }) => err.code,
      );
      // The first answer is in: the SDK waits ~1 s before it retries a RESOURCE_EXHAUSTED.
      while (served === 0) await new Promise((r) => setTimeout(r, 10));
      await connection.close();
      // The call ends only from the retry's timer: by then it found the connection closed, and threw nothing.
      expect(await call).toBe(status.CANCELLED);
      expect(uncaught).toEqual([]);
      expect(served).toBe(1);
    } finally {
      process.removeListener("uncaughtException", listener);
    }
  });

  it("a call made after the connection closed ends CANCELLED, not with a TypeError from the SDK's retry", async () => {
    const uncaught: unknown[] = [];
    const listener = (err: unknown) => uncaught.push(err);
    process.prependListener("uncaughtException", listener);
    try {
      const connection = await connectTestClient(`127.0.0.1:${port}`, true);
      await connection.close();
      const before = served;
      const outcome = await connection.workflowService.getSystemInfo({}).then(
        () => "answered",
        (err: { code?: number }) => err.code,
      );
      expect(outcome).toBe(status.CANCELLED);
      expect(uncaught).toEqual([]);
      expect(served).toBe(before);
    } finally {
      process.removeListener("uncaughtException", listener);
    }
  });
});
