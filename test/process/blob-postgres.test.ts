/**
 * The PostgreSQL blob driver (issue 56) against a throwaway PostgreSQL on its own port (as the cluster suite starts
 * one): the table is made on first use, a retried or concurrent store of the same payload is one row, a lost row
 * is a BlobNotFoundError naming run and claim, the sweeper's view (owners, removal, sizes), and a database that is
 * down is an error within the connect timeout, never a hang.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Payload } from "@temporalio/common";
import { BlobNotFoundError, parseClaim, PostgresBlobDriver } from "../../src/node/blobs/drivers.js";
import { startPostgres, type Postgres } from "../support/cluster/postgres.js";
import { freeLowPort } from "../support/cluster/temporal-server.js";

const payload = (text: string): Payload => ({
  metadata: { encoding: Buffer.from("json/plain") },
  data: Buffer.from(JSON.stringify(text)),
});
const target = (id: string) => ({ kind: "workflow" as const, namespace: "default", id, runId: `${id}-run` });

let pg: Postgres;
let url: string;
const drivers: PostgresBlobDriver[] = [];
const driver = (table?: string) => {
  const d = new PostgresBlobDriver(url, { table });
  drivers.push(d);
  return d;
};

beforeAll(async () => {
  pg = startPostgres(await freeLowPort(new Set()));
  url = `postgres://${pg.user}@127.0.0.1:${pg.port}/postgres`;
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(drivers.map((d) => d.close()));
  pg?.stop();
});

describe("PostgresBlobDriver", () => {
  it("stores and reads back 5 MB, one row however often or however concurrently it is stored", async () => {
    const a = driver();
    const b = driver();
    const big = payload("p".repeat(5 * 1024 * 1024));
    const claims = await Promise.all([
      a.store({ target: target("wf-1") }, [big]),
      b.store({ target: target("wf-1") }, [big]),
      a.store({ target: target("wf-1") }, [big]),
    ]);
    expect(new Set(claims.map(([c]) => c.claimData.key)).size).toBe(1);
    const [back] = await b.retrieve({}, claims[0]);
    expect(Buffer.from(back.data!).equals(Buffer.from(big.data!))).toBe(true);
    expect(await a.stats()).toEqual({ blobs: 1, bytes: parseClaim(a.name, claims[0][0].claimData).bytes });
  }, 60_000);

  it("a lost row is a BlobNotFoundError naming the run and the claim; the sweeper's view of owners and removal", async () => {
    const d = driver("jai_blobs_sweep");
    const [kept] = await d.store({ target: target("wf-kept") }, [payload("kept")]);
    const [lost, gone] = await d.store({ target: target("wf-gone") }, [payload("lost"), payload("gone")]);
    await d.removeBlob(parseClaim(d.name, lost.claimData));
    const err = (await d.retrieve({}, [lost]).catch((e: unknown) => e)) as BlobNotFoundError;
    expect(err).toBeInstanceOf(BlobNotFoundError);
    expect(err.workflowId).toBe("wf-gone");
    expect(err.runId).toBe("wf-gone-run");
    expect(err.message).toContain(lost.claimData.key);
    expect(err.message).toContain("table jai_blobs_sweep");
    const owners: string[] = [];
    for await (const o of d.owners()) owners.push(o.workflowId);
    expect(owners.sort()).toEqual(["wf-gone", "wf-kept"]);
    expect(await d.removeOwner({ namespace: "default", workflowId: "wf-gone" })).toEqual({
      blobs: 1,
      bytes: parseClaim(d.name, gone.claimData).bytes,
    });
    expect((await d.retrieve({}, [kept])).length).toBe(1);
    await expect(d.retrieve({}, [gone])).rejects.toBeInstanceOf(BlobNotFoundError);
  }, 60_000);

  it("a database that is not there is an error within the connect timeout, not a hang", async () => {
    const down = new PostgresBlobDriver(
      `postgres://postgres@127.0.0.1:${await freeLowPort(new Set([pg.port]))}/postgres`,
    );
    drivers.push(down);
    const started = Date.now();
    await expect(down.store({ target: target("wf-x") }, [payload("x")])).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 30_000);
});
