#!/bin/sh
# Runs once after the Temporal server is healthy: the namespace and the search attributes
# threads keep current (names and types: durable_agui/contract.py SEARCH_ATTRIBUTES).
set -eu
temporal operator namespace describe -n "${TEMPORAL_NAMESPACE}" >/dev/null 2>&1 \
  || temporal operator namespace create -n "${TEMPORAL_NAMESPACE}"
for attribute in ThreadStatus=Keyword AgentName=Keyword PendingToolCalls=Int ThreadLastActivity=Datetime; do
  temporal operator search-attribute create -n "${TEMPORAL_NAMESPACE}" \
    --name "${attribute%%=*}" --type "${attribute#*=}" || true
done
echo "namespace ${TEMPORAL_NAMESPACE} ready"
