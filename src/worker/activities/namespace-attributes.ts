/**
 * Whether a namespace has the agent's search attributes, asked once per
 * namespace through the operator service. A namespace without them (or a
 * server that will not say, e.g. a key without operator rights) still serves
 * runs: the worker warns once and the runs skip their upserts.
 */
import type { Client } from "@temporalio/client";
import {
  AGENT_SEARCH_ATTRIBUTES,
  cliSearchAttributeSpecs,
  UPSERTED_SEARCH_ATTRIBUTES,
} from "../../shared/search-attributes.js";
import type { SearchAttributeCheck } from "./setup.js";

/** Re-asked after this long, so attributes registered while the worker runs are picked up. */
const RECHECK_MS = 5 * 60_000;

export function searchAttributeCheck(
  client: () => Client | undefined,
  warn: (line: string) => void = console.warn,
): SearchAttributeCheck {
  const known = new Map<string, { at: number; answer: Promise<boolean> }>();
  const warned = new Set<string>();
  return (namespace) => {
    const cached = known.get(namespace);
    if (cached && Date.now() - cached.at < RECHECK_MS) return cached.answer;
    const answer = ask(client(), namespace).then(({ missing, error }) => {
      if ((missing.length > 0 || error) && !warned.has(namespace)) {
        warned.add(namespace);
        const why = error ? `could not list them (${error})` : `missing: ${missing.join(", ")}`;
        warn(
          `jai-agent: namespace "${namespace}" lacks the agent search attributes (${why}); runs work but cannot be searched by them. ` +
            `Register them with: ${cliSearchAttributeSpecs()
              .map(
                (spec) =>
                  `temporal operator search-attribute create --namespace ${namespace} --name ${spec.replace("=", " --type ")}`,
              )
              .join(" && ")}`,
        );
      }
      // AgentTenant is set by starters only (a start without it still works): the run's upserts need the others.
      return !error && !missing.some((name) => UPSERTED_SEARCH_ATTRIBUTES.some((k) => k.name === name));
    });
    known.set(namespace, { at: Date.now(), answer });
    return answer;
  };
}

async function ask(client: Client | undefined, namespace: string): Promise<{ missing: string[]; error?: string }> {
  if (!client) return { missing: [], error: "the worker has no client" };
  try {
    const { customAttributes } = await client.connection.operatorService.listSearchAttributes({ namespace });
    const have = new Set(Object.keys(customAttributes ?? {}));
    return { missing: AGENT_SEARCH_ATTRIBUTES.map((k) => k.name).filter((name) => !have.has(name)) };
  } catch (err) {
    return { missing: [], error: err instanceof Error ? err.message : String(err) };
  }
}
