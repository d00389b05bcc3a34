// Copyright 2026 The rdmago Authors.

//go:build race

package sys

// raceEnabled: built with -race (see RawRead).
const raceEnabled = true
