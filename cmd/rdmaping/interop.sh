#!/bin/sh
# rdmaping against rdma-core's C tools, both roles, in the Soft-RoCE lab
# (non-bare: the host's root, so the host's rping, udaddy, rdma_server and
# rdma_client run in the guest). From the repository root:
#
#   mkdir -p out && cd out && CGO_ENABLED=0 go build -o rdmaping ../cmd/rdmaping
#   go run ../cmd/rdmalab run [--kernel 6.12] -- sh ../cmd/rdmaping/interop.sh          # one node
#   go run ../cmd/rdmalab run [--kernel 6.12] --nodes 2 -- sh ../cmd/rdmaping/interop.sh # node 0 serves, node 1 connects
#
# The same runs are a Go test: go run ./cmd/rdmalab test [--nodes 2] -run Interop -v ./cmd/rdmaping/
set -u
R=./rdmaping
[ -x "$R" ] || { echo "build rdmaping into the current directory first" >&2; exit 2; }
NODE=${RDMALAB_NODE:-0}; NODES=${RDMALAB_NODES:-1}
SRV=$RDMALAB_ADDR; [ "$NODES" = 2 ] && [ "$NODE" = 1 ] && SRV=$RDMALAB_PEER
fail=0
serve() { [ "$NODES" = 1 ] || [ "$NODE" = 0 ]; }
connect() { [ "$NODES" = 1 ] || [ "$NODE" = 1 ]; }
# retry CMD...: run a client until it succeeds (the server may still be starting), at most 40 times.
retry() { i=0; until "$@"; do i=$((i+1)); [ $i -ge 40 ] && return 1; sleep 0.5; done; }
# case NAME SERVER-CMD CLIENT-CMD
case_() {
	name=$1; s=$2; c=$3
	if serve; then sh -c "$s" > "srv.$name.log" 2>&1 & sp=$!; fi
	if connect; then
		if retry sh -c "$c > cli.$name.log 2>&1"; then echo "$name: client ok"; else echo "$name: CLIENT FAILED"; cat "cli.$name.log"; fail=1; fi
	fi
	if serve; then
		if wait $sp; then echo "$name: server ok"; else echo "$name: SERVER FAILED"; cat "srv.$name.log"; fail=1; fi
	fi
}
case_ rping-go-server     "$R -s -a $SRV -p 7301 -C 3 -v"         "rping -c -a $SRV -p 7301 -C 3 -v -V"
case_ rping-c-server      "rping -s -a $SRV -p 7302 -C 3 -v"       "$R -c -a $SRV -p 7302 -C 3 -v -V"
case_ udaddy-c-server     "udaddy"                                 "$R --ud -c -a $SRV"
case_ udaddy-go-server    "$R --ud -s -a $SRV"                     "udaddy -s $SRV"
case_ rdma_server-c       "rdma_server -s $SRV -p 7311"            "$R --mode rdmacs -c -a $SRV -p 7311"
case_ rdma_server-go      "$R --mode rdmacs -s -a $SRV -p 7312"    "rdma_client -s $SRV -p 7312"
exit $fail
