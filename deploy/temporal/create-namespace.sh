#!/bin/sh
# Registers the namespace the workers use (run by the admin-tools container once the server is healthy).
set -eu
ns="${DEFAULT_NAMESPACE:-default}"
if temporal operator namespace describe --namespace "$ns" >/dev/null 2>&1; then
  echo "namespace $ns exists"
else
  temporal operator namespace create --namespace "$ns" --retention "${NAMESPACE_RETENTION:-7d}"
fi
