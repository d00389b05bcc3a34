// Copyright 2026 The rdmago Authors.

package uverbs_test

import (
	"github.com/rdmago/rdmago/oob"
	"github.com/rdmago/rdmago/uverbs"
)

func init() {
	uverbs.OOBClient = oob.Client
	uverbs.OOBServer = oob.Server
}
