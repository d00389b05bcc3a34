// Copyright 2026 The rdmago Authors.

package trace

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/rdmanl"
)

// RXEFuncs are the Soft-RoCE (rdma_rxe) functions the tracer can count hits
// of, per QP where the QP can be found from the arguments. Which exist
// depends on the kernel: 6.1 has rxe_responder and rxe_do_task (tasklets),
// 6.12 has rxe_sender/rxe_receiver (work queues) instead. Missing ones are
// skipped. By default only RXEPacketFuncs are counted; Options.RXEAll adds
// the rest, rxe's internal steps.
var RXEFuncs = []string{
	"rxe_post_send",      // ib_post_send (user QPs: the doorbell)
	"rxe_post_recv",      // ib_post_recv (kernel QPs only)
	"rxe_sched_task",     // a QP task is scheduled
	"rxe_run_task",       // a QP task runs inline
	"rxe_requester",      // builds request packets from send WQEs
	"rxe_completer",      // processes ACKs, posts send completions
	"rxe_responder",      // handles incoming requests (6.1)
	"rxe_sender",         // 6.x task wrapper: requester + completer
	"rxe_receiver",       // 6.x task wrapper around the responder
	"rxe_rcv",            // a RoCE packet arrives (BTH dest QPN)
	"rxe_xmit_packet",    // a packet leaves
	"rxe_comp_queue_pkt", // an ACK/response is queued to the completer
	"rxe_resp_queue_pkt", // a request is queued to the responder
	"rxe_cq_post",        // a completion is posted (errors counted apart)
}

// RXEPacketFuncs are the functions of RXEFuncs counted by default: what
// goes into a QP (doorbells), onto the wire and off it (a packet out per
// sending QP, a packet in per destination QP) and out of it (completions,
// errors apart). Two hits per packet; the other functions of RXEFuncs, the
// task scheduling and state machines rxe runs for those packets, add some
// eight more per packet, the most of what tracing costs a busy QP (docs/rdmatrace.md,
// "Overhead").
var RXEPacketFuncs = []string{"rxe_post_send", "rxe_post_recv", "rxe_rcv", "rxe_xmit_packet", "rxe_cq_post"}

// rxeFuncs is RXEFuncs with all, else only RXEPacketFuncs, in RXEFuncs' order.
func rxeFuncs(all bool) []string {
	if all {
		return RXEFuncs
	}
	var out []string
	for _, fn := range RXEFuncs {
		if slices.Contains(RXEPacketFuncs, fn) {
			out = append(out, fn)
		}
	}
	return out
}

// movingQPs names the QPs of qps (RDMA netlink's dump) that may be moving
// packets: those past INIT (RTR, RTS, SQD, SQE, ERR, which still flushes),
// except the special QPs 0 and 1 (SMI, GSI) every port keeps in RTS for
// management datagrams. New attaches fentry programs by default only while
// there are none (Options.RXEFentry).
func movingQPs(qps []rdmanl.QP) []string {
	var out []string
	for _, q := range qps {
		if q.Type == abi.IB_QPT_SMI || q.Type == abi.IB_QPT_GSI || q.State < abi.IB_QPS_RTR {
			continue
		}
		out = append(out, fmt.Sprintf("%s qpn %d (%s, %s)", q.DevName, q.LQPN, q.Type, q.State))
	}
	return out
}

// qpArgFuncs take the QP as a void * (6.1 task functions: rxe_init_task(task,
// qp, func) passes the QP as the task's arg).
var qpArgFuncs = map[string]bool{"rxe_requester": true, "rxe_completer": true, "rxe_responder": true}

// rxePlan is how one rxe function is probed.
type rxePlan struct {
	ID   uint16
	Func string
	QP   *qpnSource
	CQE  *cqeSource
	WQE  *wqeSource // rxe_post_send: where the send ring is
	How  string     // how the QPN is found, or why it is not
}

// planRXE decides, from the rdma_rxe module's BTF (mod, nil when there is
// none), how each function in funcs finds its QPN.
func planRXE(mod typeFinder, funcs []string) []rxePlan {
	plans := make([]rxePlan, 0, len(funcs))
	for i, fn := range funcs {
		p := rxePlan{ID: uint16(i), Func: fn}
		if mod == nil {
			p.How = "no rdma_rxe BTF: counted without QPN"
		} else if err := planOne(mod, &p); err != nil {
			p.QP, p.CQE = nil, nil
			p.How = "counted without QPN: " + err.Error()
		}
		plans = append(plans, p)
	}
	return plans
}

func rxeQPNum(mod typeFinder) (int32, error) { return structOffset(mod, "rxe_qp", "ibqp", "qp_num") }

func planOne(mod typeFinder, p *rxePlan) error {
	proto, err := findFunc(mod, p.Func)
	if err != nil {
		return err
	}
	for i, param := range proto.Params {
		target := pointee(param.Type)
		switch {
		case target == "rxe_qp" || (target == "void" && qpArgFuncs[p.Func]):
			off, err := rxeQPNum(mod)
			if err != nil {
				return err
			}
			p.QP = &qpnSource{Arg: i, Off: off}
			p.How = fmt.Sprintf("arg %d (%s) ->ibqp.qp_num @%d", i, param.Name, off)
			return nil
		case target == "ib_qp":
			off, err := structOffset(mod, "ib_qp", "qp_num")
			if err != nil {
				return err
			}
			p.QP = &qpnSource{Arg: i, Off: off}
			p.How = fmt.Sprintf("arg %d (%s) ->qp_num @%d", i, param.Name, off)
			if p.Func == "rxe_post_send" {
				if w, err := planWQE(mod, i); err == nil {
					p.WQE = w
					p.How += fmt.Sprintf("; the last WQE from ->sq.queue@%d ->buf@%d", w.SQQueue, w.QueueBuf)
				} else {
					p.How += "; WQEs not read: " + err.Error()
				}
			}
			return nil
		case target == "rxe_task":
			field := "qp" // 6.4+: struct rxe_task { ... struct rxe_qp *qp; }
			toQP, err := structOffset(mod, "rxe_task", field)
			if err != nil {
				field = "arg" // 6.1: void *arg, the QP
				if toQP, err = structOffset(mod, "rxe_task", field); err != nil {
					return err
				}
			}
			off, err := rxeQPNum(mod)
			if err != nil {
				return err
			}
			p.QP = &qpnSource{Arg: i, Derefs: []int32{toQP}, Off: off}
			p.How = fmt.Sprintf("arg %d (%s) ->%s@%d ->ibqp.qp_num @%d", i, param.Name, field, toQP, off)
			return nil
		case target == "sk_buff" && p.Func == "rxe_rcv":
			// SKB_TO_PKT(skb) is skb->cb; rxe_udp_encap_recv set pkt->hdr to the BTH.
			cb, err := structOffset(mod, "sk_buff", "cb")
			if err != nil {
				return err
			}
			hdr, err := structOffset(mod, "rxe_pkt_info", "hdr")
			if err != nil {
				return err
			}
			p.QP = &qpnSource{Arg: i, Derefs: []int32{cb + hdr}, Off: 4, BE24: true}
			p.How = fmt.Sprintf("arg %d (%s) ->cb@%d rxe_pkt_info.hdr@%d -> BTH dest QP", i, param.Name, cb, hdr)
			return nil
		case target == "rxe_cq" && p.Func == "rxe_cq_post":
			c := &cqeSource{CQArg: i, CQEArg: i + 1}
			for _, f := range []struct {
				dst  *int32
				name string
				path []string
			}{
				{&c.IsUser, "rxe_cq", []string{"is_user"}},
				{&c.UStatus, "rxe_cqe", []string{"uibwc", "status"}},
				{&c.UQPN, "rxe_cqe", []string{"uibwc", "qp_num"}},
				{&c.KStatus, "rxe_cqe", []string{"ibwc", "status"}},
				{&c.KQP, "rxe_cqe", []string{"ibwc", "qp"}},
				{&c.IBQPNum, "ib_qp", []string{"qp_num"}},
				{&c.UWC, "rxe_cqe", []string{"uibwc"}},
			} {
				if *f.dst, err = structOffset(mod, f.name, f.path...); err != nil {
					return err
				}
			}
			p.CQE = c
			p.How = fmt.Sprintf("cqe (is_user@%d): uibwc.qp_num@%d or ibwc.qp@%d->qp_num@%d; status!=0 counted as errors; user CQs' completions recorded",
				c.IsUser, c.UQPN, c.KQP, c.IBQPNum)
			return nil
		}
	}
	return fmt.Errorf("no argument leads to a QP")
}

// planWQE finds the send ring of the struct ib_qp in argument arg (the
// struct rxe_qp that embeds it).
func planWQE(mod typeFinder, arg int) (*wqeSource, error) {
	ibqp, err := structOffset(mod, "rxe_qp", "ibqp")
	if err != nil {
		return nil, err
	}
	q, err := structOffset(mod, "rxe_qp", "sq", "queue")
	if err != nil {
		return nil, err
	}
	buf, err := structOffset(mod, "rxe_queue", "buf")
	if err != nil {
		return nil, err
	}
	return &wqeSource{QPArg: arg, SQQueue: q - ibqp, QueueBuf: buf}, nil
}

// moduleSymbols reads /proc/kallsyms-format text and returns the function
// names of module mod ("rdma_rxe"), or of the core kernel when mod is "".
func moduleSymbols(r io.Reader, mod string) (map[string]bool, error) {
	syms := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || (f[1] != "t" && f[1] != "T") {
			continue
		}
		m := ""
		if len(f) >= 4 {
			m = strings.Trim(f[3], "[]")
		}
		if m == mod {
			syms[f[2]] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read kallsyms: %w", err)
	}
	return syms, nil
}
