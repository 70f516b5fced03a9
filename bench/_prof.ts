import { openBench, benchWorker, pageScript } from "./common.js";
import { startAgentRun } from "../src/client.js";
const bench = await openBench();
const s = pageScript("prof", 20, 100, { runs: 12 });
const w = await benchWorker(bench, "prof-ours", [s.tool], [s.model]);
await w.runUntil(async () => {
  for (let i = 0; i < 10; i++) {
    const t = Date.now();
    const h = await startAgentRun(bench.client, { taskQueue: "prof-ours", workflowId: `prof-${i}-${Date.now()}`, model: s.model, prompt: "go", maxTurns: 21 });
    await h.result();
    console.log("ms/turn", (Date.now() - t) / 21);
  }
});
await bench.close();
