/**
 * Client-side tools (input `clientTools`, docs/client-tools.md): declared by the run, offered to the model beside
 * the worker's, answered by a client (the waiting and the result's check are the tool batch's: tool-calls.ts,
 * ../client-tools.ts). Here: the declaration's check, and the tools joining a new run's setup once (a continued
 * run carries them in it). Patched: CLIENT_TOOLS_PATCH, asked where they join.
 */
import type { ClientToolDeclaration } from "../../shared/contracts.js";
import { clientToolSpecs } from "../../shared/client-tool-checks.js";
import { featureInput } from "../../shared/feature-inputs.js";
import { CLIENT_TOOLS_PATCH, hasChange } from "../patches.js";
import type { RunSetup } from "../../shared/wire.js";
import type { RunFeature } from "./feature.js";

export const clientToolsFeature: RunFeature = {
  ...featureInput("clientTools"),
  open(input) {
    // Always open: its declarations are checked in every run (a continued run carries its tools in the setup).
    const declared = input.clientTools;
    if (input.continued || !Array.isArray(declared) || declared.length === 0) return {};
    return { setup: (setup) => (hasChange(CLIENT_TOOLS_PATCH) ? withClientTools(setup, declared) : setup) };
  },
};

/**
 * The run's setup with its client tools added (offered to the model like the worker's), or why it cannot have
 * them: a client tool named like a worker tool.
 */
function withClientTools(setup: RunSetup, declared: ClientToolDeclaration[]): RunSetup | string {
  const clash = declared.find((d) => setup.tools.some((t) => t.name === d.name));
  if (clash)
    return `"clientTools": "${clash.name}" is the name of a worker tool; a client tool needs a name of its own`;
  return { ...setup, tools: [...setup.tools, ...clientToolSpecs(declared)] };
}
