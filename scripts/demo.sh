#!/usr/bin/env bash
# The main job, for now: boot two VMs with Soft-RoCE joined by a virtual wire
# and run an RDMA ping across them (rdmalab demo). Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
exec go run ./cmd/rdmalab demo "$@"
