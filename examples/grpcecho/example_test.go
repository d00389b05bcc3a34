// Copyright 2026 The rdmago Authors.

package grpcecho_test

import (
	"context"
	"fmt"
	"net"

	"github.com/rdmago/rdmago/examples/grpcecho"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The service served and called over TCP on the loopback; over RDMA the
// listener is rsocket.Listen's and the client's dial option
// grpcecho.WithRSocket (the lab tests do that between two machines).
func Example() {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	s := grpc.NewServer()
	grpcecho.Register(s, grpcecho.Service{})
	go s.Serve(l)
	defer s.Stop()

	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cc.Close()
	reply, err := grpcecho.Call(ctx, cc, []byte("hello"))
	fmt.Printf("%s %v\n", reply, err)

	st, err := grpcecho.Stream(ctx, cc)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range []string{"one", "two"} {
		b := []byte(m)
		st.Send(&b)
	}
	st.CloseSend()
	for {
		m, err := st.Recv()
		if err != nil {
			break
		}
		fmt.Printf("%q ", *m)
	}
	fmt.Println()
	// Output:
	// hello <nil>
	// "one" "two"
}
