#!/bin/sh
# Runs once after the Temporal server is healthy: the namespace and the search attributes
# threads keep current (names and types: durable_agui/core/contract/ids.py SEARCH_ATTRIBUTES).
#
#   TEMPORAL_ADDRESS=host:7233 TEMPORAL_NAMESPACE=default sh deploy/temporal-setup.sh
#
# TEMPORAL_ADDRESS is required (the temporal CLI would otherwise pick localhost:7233, which
# may be another server); the CLI comes from PATH, or from this checkout's .venv.
set -eu
: "${TEMPORAL_ADDRESS:?set TEMPORAL_ADDRESS to the Temporal frontend to register on (host:port)}"
: "${TEMPORAL_NAMESPACE:=default}"
export TEMPORAL_ADDRESS
command -v temporal >/dev/null 2>&1 || PATH="$(dirname "$0")/../.venv/bin:${PATH}"
temporal operator namespace describe -n "${TEMPORAL_NAMESPACE}" >/dev/null 2>&1 \
  || temporal operator namespace create -n "${TEMPORAL_NAMESPACE}"
for attribute in ThreadStatus=Keyword AgentName=Keyword PendingToolCalls=Int ThreadLastActivity=Datetime ThreadOwner=Keyword ThreadTags=KeywordList; do
  temporal operator search-attribute create -n "${TEMPORAL_NAMESPACE}" \
    --name "${attribute%%=*}" --type "${attribute#*=}" || true
done
echo "namespace ${TEMPORAL_NAMESPACE} on ${TEMPORAL_ADDRESS} ready"
