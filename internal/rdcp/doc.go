// Package rdcp is the wire format of rdmacp's file protocol (package
// transfer): the control messages (magic "RDCP"), their encoder and
// length-checked decoders, the immediate of a data write, the names a FILE
// may carry. Package transfer speaks it; its tests, transfer/rdma's and
// cmd/rdmacp's tests use it to play a hostile or foreign peer. It is
// internal: transfer's users never see a message.
package rdcp
