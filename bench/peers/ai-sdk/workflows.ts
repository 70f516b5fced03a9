/**
 * The peer's agent, the way Temporal's AI SDK integration documents it:
 * `generateText` in the workflow, the model through the plugin's activity,
 * the tool as an activity of its own. Bundled by the peer's own worker (its
 * plugin preloads the Web API polyfills `ai` needs).
 */
import { generateText, jsonSchema, stepCountIs, tool } from "ai";
import { temporalProvider } from "@temporalio/ai-sdk/workflow";
import { proxyActivities } from "@temporalio/workflow";

// The timeout of the integration's own sample (a lost completion is noticed after it).
const { fetchPage } = proxyActivities<{ fetchPage(input: { n: number; bytes: number }): Promise<string> }>({
  startToCloseTimeout: "1 minute",
});

export async function peerAgentRun(input: { prompt: string; maxSteps: number; bytes: number }): Promise<number> {
  const result = await generateText({
    model: temporalProvider.languageModel("scripted"),
    prompt: input.prompt,
    tools: {
      fetch_page: tool({
        description: "returns a page",
        inputSchema: jsonSchema<{ n: number }>({
          type: "object",
          properties: { n: { type: "number" } },
          required: ["n"],
        }),
        execute: (args: { n: number }) => fetchPage({ ...args, bytes: input.bytes }),
      }),
    },
    stopWhen: stepCountIs(input.maxSteps),
  });
  return result.steps.length;
}
