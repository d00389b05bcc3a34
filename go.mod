module github.com/rdmago/rdmago

go 1.26.8

require github.com/google/go-cmp v0.7.0

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	golang.org/x/sys v0.43.0 // indirect
)
