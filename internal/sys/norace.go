// Copyright 2026 The rdmago Authors.

//go:build !race

package sys

const raceEnabled = false
