// Copyright 2026 The rdmago Authors.

//go:build !race

package uverbs

const raceBuild = false
