module github.com/rdmago/rdmago

go 1.26.8

require github.com/google/go-cmp v0.7.0

require golang.org/x/sys v0.43.0 // indirect
