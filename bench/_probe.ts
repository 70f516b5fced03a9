import { openBench, benchWorker, pageScript } from "./common.js";
import { openAiSdkPeer } from "./peers.js";
import { startAgentRun } from "../src/client.js";
const bench = await openBench();
const peer = await openAiSdkPeer(bench, "probe-peer");
const s = pageScript("probe", 20, 100, { runs: 10 });
const w = await benchWorker(bench, "probe-ours", [s.tool], [s.model]);
const ms = (e: any) => Number(e.eventTime.seconds) * 1000 + e.eventTime.nanos / 1e6;
function breakdown(events: any[], model: string) {
  const sched = new Map<number, string>();
  const acc: Record<string, number[]> = {};
  const add = (k: string, v: number) => (acc[k] ??= []).push(v);
  let lastClose = 0; let wftSched = 0; let wftStart = 0;
  for (const e of events) {
    const id = Number(e.eventId);
    if (e.activityTaskScheduledEventAttributes) sched.set(id, e.activityTaskScheduledEventAttributes.activityType.name === model ? "model" : "tool");
    if (e.activityTaskStartedEventAttributes) { const k = sched.get(Number(e.activityTaskStartedEventAttributes.scheduledEventId)); const s0 = events.find((x) => Number(x.eventId) === Number(e.activityTaskStartedEventAttributes.scheduledEventId)); add(`${k} pickup`, ms(e) - ms(s0)); }
    if (e.activityTaskCompletedEventAttributes) { const k = sched.get(Number(e.activityTaskCompletedEventAttributes.scheduledEventId)); const st = events.find((x) => Number(x.eventId) === Number(e.activityTaskCompletedEventAttributes.startedEventId)); add(`${k} run`, ms(e) - ms(st)); lastClose = ms(e); }
    if (e.workflowTaskScheduledEventAttributes) { wftSched = ms(e); if (lastClose) add("close→wft sched", wftSched - lastClose); }
    if (e.workflowTaskStartedEventAttributes) { wftStart = ms(e); add("wft pickup", wftStart - wftSched); }
    if (e.workflowTaskCompletedEventAttributes) add("wft run", ms(e) - wftStart);
  }
  const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  return Object.fromEntries(Object.entries(acc).map(([k, v]) => [k, `${med(v).toFixed(1)} (n=${v.length})`]));
}
await w.runUntil(async () => {
  for (let i = 0; i < 3; i++) {
    const id = `probe-${i}-${Date.now()}`;
    const h = await startAgentRun(bench.client, { taskQueue: "probe-ours", workflowId: id, model: s.model, prompt: "go", maxTurns: 21 });
    await h.result();
    const p = await peer.run(`probe-peer-${i}-${Date.now()}`, 20, 100);
    if (i === 0) continue;
    console.log("ours", JSON.stringify(breakdown((await h.workflow.fetchHistory()).events!, "streamAssistantMessage")));
    console.log("peer", JSON.stringify(breakdown((await bench.client.workflow.getHandle(p.workflowId).fetchHistory()).events!, "invokeModel")));
  }
});
await peer.close(); await bench.close();
