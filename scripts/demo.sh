#!/usr/bin/env bash
# The main job: boot two VMs with Soft-RoCE joined by a virtual wire, build
# rdmacp statically, send a random file from node 1 to node 0 over RDMA Write,
# check its SHA-256 on both ends, and compare rdmacp's throughput with
# ib_write_bw's in the same boot (rdmalab demo). Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
exec go run ./cmd/rdmalab demo "$@"
