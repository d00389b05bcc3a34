// Copyright 2026 The rdmago Authors.

package rdmanl

import "os"

func labtestNetdev() string { return os.Getenv("RDMALAB_NETDEV") }
