/**
 * The client connection a test file opens and closes. A call the SDK is retrying when the file closes its
 * connection (an abandoned long poll, say, that the server answered RESOURCE_EXHAUSTED on a busy machine) is retried
 * on a timer; after the close that timer throws "Channel has been shut down" into whatever test runs next in the
 * same jest worker (seen in a fresh-clone CI under two busy loops). Here a call made or retried after the close
 * ends as CANCELLED instead, before it reaches the closed channel.
 */
import { InterceptingCall, Metadata, status, type Interceptor } from "@grpc/grpc-js";
import { Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from "@temporalio/client";

/** A call that goes nowhere: what sits below a call ended before it started. */
const nowhere = new Proxy({} as ConstructorParameters<typeof InterceptingCall>[0], { get: () => () => undefined });

/** Connects (or, `lazy`, connects at the first call) with the guard below the SDK's retries. */
export async function connectTestClient(address: string, lazy = false): Promise<Connection> {
  let closed = false;
  const afterClose: Interceptor = (options, nextCall) =>
    closed
      ? new InterceptingCall(nowhere, {
          start(_metadata, listener) {
            setImmediate(() => {
              // As grpc-js ends a unary call that got no message: a null message first (the SDK's retry
              // interceptor keeps its callback then, and calls it on a final status), the status after.
              listener.onReceiveMessage(null);
              listener.onReceiveStatus({
                code: status.CANCELLED,
                details: "the test's client connection was closed",
                metadata: new Metadata(),
              });
            });
          },
          sendMessage() {},
          halfClose() {},
          cancel() {},
        })
      : new InterceptingCall(nextCall(options));
  const options = { address, interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), afterClose] };
  const connection = lazy ? Connection.lazy(options) : await Connection.connect(options);
  const close = connection.close.bind(connection);
  connection.close = async () => {
    closed = true;
    await close();
  };
  return connection;
}
