#!/usr/bin/env bash
# Every test: vet and host unit tests, the builds for other systems and
# arm64, then the lab tests (real Soft-RoCE in QEMU) on Debian 12's 6.1 and
# Debian 13's 6.12 kernels, with one node and with two. Installs what it
# needs. Runs everything, then fails if anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

export CGO_ENABLED=0
failed=()
times=()
step() {
	echo "==> $*"
	local t0=$SECONDS
	if ! "$@"; then
		failed+=("$*")
	fi
	times+=("$(printf '%5d s  %s' $((SECONDS - t0)) "$*")")
}

step go vet ./...
# The examples that need an RDMA device (example_lab_test.go, build tag
# rdmalab) run only in the lab; here they must at least compile.
step go vet -tags rdmalab ./...
# staticcheck at a pinned version, fetched by go run (no module dependency).
step go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags rdmalab ./...
# go test ./... includes internal/apirecord: the exported API against api/.
step go test ./...
# A program that imports rdmago builds on its developer's laptop (there the
# library returns ErrNotSupported), and on 64-bit ARM.
for goos in darwin windows freebsd; do
	step env GOOS="$goos" go build ./...
	step env GOOS="$goos" go vet ./...
done
step env GOARCH=arm64 go build ./...
step env GOARCH=arm64 go vet ./...
# examples/ is a module of its own (gRPC-Go over rsocket), outside ./...:
# vetted and host-tested here, its lab tests run in the two-node boots.
step env -C examples go vet ./...
step env -C examples go test ./...
for kernel in 6.1 6.12; do
	for nodes in 1 2; do
		pkgs=(./...)
		((nodes == 1)) || pkgs+=(./examples/...)
		step go run ./cmd/rdmalab test --kernel "$kernel" --nodes "$nodes" "${pkgs[@]}"
	done
done
# The oldest and the newest kernel Debian serves get a smoke set: the verbs
# (RC, UD, SRQ, completion channel, interop with rdma-core), the rdma_cm
# handshake, rsockets and rdmacp's transfer, with one node and with two.
# docs/lab.md's Kernels section says what each kernel lacks.
smoke='^(TestLabSendRecv|TestLabRDMA|TestLabAtomics|TestLabUD|TestLabSRQ|TestLabCompChannel|TestLabPingpongInterop|TestLabTwoNodes|TestLabPingpongTwoNodes|TestLabMWType1|TestLabConnectSendClose|TestLabAcceptPrivateData|TestLabRejectWithPrivateData|TestLabStream|TestLabRstream|TestLabTransfer|TestLabWrongPSK|TestLabCLI)$'
# On 5.10 an atomic across the wire never completes, perftest's ib_atomic_lat
# included (docs/lab.md): uverbs' TestLabTwoNodes, which does one, is left out.
for kernel in 5.10 7.3; do
	run=$smoke
	[ "$kernel" = 5.10 ] && run=${smoke/|TestLabTwoNodes|/|}
	for nodes in 1 2; do
		step go run ./cmd/rdmalab test --kernel "$kernel" --nodes "$nodes" -run "$run" ./uverbs ./cm ./rsocket ./transfer/rdma ./cmd/rdmacp
	done
done

# The instruction clock (rdmalab --icount) boots: one vCPU, because QEMU
# 7.2 with -icount hangs bringing up a second.
step go run ./cmd/rdmalab run --icount --timeout 3m -- sh -c 'n=$(nproc); [ "$n" = 1 ] || { echo "icount guest has $n CPUs, want 1"; exit 1; }'

# Where the time goes, step by step.
echo "==> durations (total $SECONDS s):"
printf '  %s\n' "${times[@]}"

if ((${#failed[@]})); then
	echo "FAILED:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "all tests passed"
