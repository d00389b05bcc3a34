# Thin wrappers: each target is one command; the scripts say what they do.
.PHONY: demo test deps lab-test kernels

demo:
	scripts/demo.sh

test:
	scripts/test.sh

deps:
	scripts/deps.sh

lab-test:
	go run ./cmd/rdmalab test --kernel 6.1 ./...

kernels:
	go run ./cmd/rdmalab kernels -fetch 6.1,6.12
