// Copyright 2026 The rdmago Authors.

//go:build race

package uverbs

// raceBuild: built with -race, where the event file's read goes through
// x/sys/unix with the detector's annotations (internal/sys), which
// allocate: allocation counts are not the data path's.
const raceBuild = true
