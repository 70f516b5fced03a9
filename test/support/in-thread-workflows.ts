/**
 * Jest setup (setupFilesAfterEnv): the test files' in-process workers run workflow code on the thread that runs
 * the worker (Temporal's `debugMode`), as Temporal's replay workers always do. Threaded, each `Worker.create` starts a
 * worker thread that loads the SDK and compiles the 3.3 MB workflow bundle again (~0.25 s of CPU; the suite creates
 * hundreds of workers in its files), and every activation crosses threads. The workflow code, its sandbox and its
 * determinism checks are the same either way; what a thread adds is the deadlock detector (no test relies on it:
 * the workers tests start as processes keep their threads and run exactly as shipped). A test whose subject is the
 * timing of the worker's own requests keeps the thread: `workerOptions: { debugMode: false }`.
 */
import { expect } from "@jest/globals";

// test/unit starts no worker: it does not load the SDK for this (~1 s of CPU a file).
if (!expect.getState().testPath?.includes("/test/unit/")) {
  const { Worker } = await import("@temporalio/worker");
  const create = Worker.create;
  Worker.create = function (options) {
    // A test that says otherwise keeps what it says.
    return create.call(this, { debugMode: true, ...options });
  };
}
