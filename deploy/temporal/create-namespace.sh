#!/bin/sh
# Registers the namespace the workers use and the agent's search attributes (run by the admin-tools container
# once the server is healthy). Keep the attribute list in step with src/shared/search-attributes.ts.
set -eu
ns="${DEFAULT_NAMESPACE:-default}"
if temporal operator namespace describe --namespace "$ns" >/dev/null 2>&1; then
  echo "namespace $ns exists"
else
  temporal operator namespace create --namespace "$ns" --retention "${NAMESPACE_RETENTION:-7d}"
fi
existing="$(temporal operator search-attribute list --namespace "$ns" 2>/dev/null || true)"
for spec in AgentStatus=Keyword AgentStopReason=Keyword AgentModel=Keyword AgentTools=KeywordList AgentTurns=Int AgentTotalTokens=Int AgentCostUsd=Double AgentSummary=Text AgentTenant=Keyword; do
  name="${spec%%=*}"
  if printf '%s\n' "$existing" | grep -qw "$name"; then
    echo "search attribute $name exists"
  else
    temporal operator search-attribute create --namespace "$ns" --name "$name" --type "${spec#*=}"
  fi
done
