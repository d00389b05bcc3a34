module github.com/rdmago/rdmago

go 1.26.8

require (
	github.com/cilium/ebpf v0.22.0
	github.com/google/go-cmp v0.7.0
	golang.org/x/sys v0.49.0
)

require golang.org/x/net v0.48.0
