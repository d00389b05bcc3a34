// Copyright 2026 The rdmago Authors.

package trace

// defaultUCMResp lists the ucma commands whose responses the return probe
// reads. Filled from package abi (rdma_user_cm.h) once it is ported.
var defaultUCMResp []respRead
