#!/usr/bin/env bash
# Every test: vet and host unit tests, then the lab tests (real Soft-RoCE in
# QEMU) on Debian 12's 6.1 and Debian 13's 6.12 kernels, with one node and with
# two. Installs what it needs. Runs everything, then fails if anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

export CGO_ENABLED=0
failed=()
step() {
	echo "==> $*"
	if ! "$@"; then
		failed+=("$*")
	fi
}

step go vet ./...
step go test ./...
for kernel in 6.1 6.12; do
	for nodes in 1 2; do
		step go run ./cmd/rdmalab test --kernel "$kernel" --nodes "$nodes" ./...
	done
done

if ((${#failed[@]})); then
	echo "FAILED:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "all tests passed"
