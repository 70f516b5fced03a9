/**
 * The schemas a run brings (typed `output`, client tools' `parameters` and `result`; docs/security.md): checked at
 * declaration, local `$ref`s only and RE2 patterns (../run-schemas.ts). A run recorded before the check accepted
 * them, and replays so. Patched: RUN_SCHEMAS_PATCH, asked only when the input has some.
 */
import { patched } from "@temporalio/workflow";
import { RUN_SCHEMAS_PATCH } from "../patches.js";
import { featureInput } from "../../shared/feature-inputs.js";
import type { RunFeature } from "./feature.js";

export const runSchemasFeature: RunFeature = {
  ...featureInput("runSchemas"),
  open: (input) =>
    !input.continued && (input.output !== undefined || input.clientTools !== undefined) && patched(RUN_SCHEMAS_PATCH)
      ? {}
      : undefined,
};
