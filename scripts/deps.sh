#!/usr/bin/env bash
# Installs what rdmago's demo and tests need on Debian 12 (or 13), as root:
# QEMU and rdma-core's C tools (run inside the lab guests), xz (Debian 13's
# kernel modules are xz-compressed). The lab kernels themselves are fetched
# with apt by rdmalab. chromium (headless) is the browser `go test
# ./tools/timeline` opens the rdmatrace timeline page in. Idempotent: apt is skipped when everything is present.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1; }
pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

have qemu-system-x86_64 || need+=(qemu-system-x86)
have ibv_devinfo || need+=(ibverbs-utils)
have rping || need+=(rdmacm-utils)
have ib_write_bw || need+=(perftest)
pkg rdma-core || need+=(rdma-core)
pkg ibverbs-providers || need+=(ibverbs-providers)
have xz || need+=(xz-utils)
have nc.traditional || need+=(netcat-traditional) # rdmacat interop under librspreload
have curl || need+=(curl)
have civetweb || need+=(civetweb) # a C HTTP server for rsocket's interop under librspreload
have dpkg-deb || need+=(dpkg)
have chromium || need+=(chromium)
have tshark || need+=(tshark) # ibpkt's decoder is checked against Wireshark's dissector
have strace || need+=(strace)   # rdmatrace's C-program traces are checked against strace
have pkill || need+=(procps)    # the demo stops its spare ib_write_bw server

if ((${#need[@]})); then
	if [[ $(id -u) != 0 ]]; then
		echo "deps: missing ${need[*]}; run as root or: sudo apt-get install ${need[*]}" >&2
		exit 1
	fi
	echo "deps: installing ${need[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${need[@]}"
fi

if ! have go; then
	echo "deps: Go is not installed: rdmago needs the Go toolchain named in go.mod (https://go.dev/dl/)" >&2
	exit 1
fi
# The examples module's dependencies (gRPC-Go), fetched by go as any module.
go -C "$(dirname "$0")/../examples" mod download
