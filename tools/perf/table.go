// Copyright 2026 The rdmago Authors.

package perf

import (
	"fmt"
	"io"
)

// The report layout is perftest 4.5's (RESULT_* and REPORT_* in
// src/perftest_parameters.h), tabs included, so rdmaperf's and perftest's
// tables line up and parse the same way.
const (
	resultLine   = "---------------------------------------------------------------------------------------\n"
	resultFmt    = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
	resultFmtG   = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
	reportFmt    = " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n"
	reportFmtExt = " %-7d    %d           %-7.6f            %-7.6f            %-7.6f\n"

	resultFmtLat    = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"
	reportFmtLat    = " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n"
	resultFmtLatDur = " #bytes        #iterations       t_avg[usec]    tps average\n"
	reportFmtLatDur = " %-7d       %d            %-7.2f        %-7.2f\n"

	resultFmtConn = " #conns     t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]\n"
	reportFmtConn = " %-7d    %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\n"
)

// WriteBWHeader prints the bandwidth table's header.
func WriteBWHeader(w io.Writer, gbits bool) {
	fmt.Fprint(w, resultLine)
	if gbits {
		fmt.Fprint(w, resultFmtG)
	} else {
		fmt.Fprint(w, resultFmt)
	}
}

// WriteBWLine prints one bandwidth line (print_full_bw_report). Like perftest
// it switches to six decimals below 0.1 Gb/sec.
func WriteBWLine(w io.Writer, s BWStats) {
	f := reportFmt
	if s.Gbits && s.Average < 0.1 {
		f = reportFmtExt
	}
	fmt.Fprintf(w, f, s.Size, s.Iters, s.Peak, s.Average, s.MsgRate)
}

// WriteLatHeader prints the latency table's header; duration runs have
// perftest's shorter -D layout.
func WriteLatHeader(w io.Writer, duration bool) {
	fmt.Fprint(w, resultLine)
	if duration {
		fmt.Fprint(w, resultFmtLatDur)
	} else {
		fmt.Fprint(w, resultFmtLat)
	}
}

// WriteLatLine prints one latency line (print_report_lat or
// print_report_lat_duration).
func WriteLatLine(w io.Writer, s LatStats, duration bool) {
	if duration {
		fmt.Fprintf(w, reportFmtLatDur, s.Size, s.Iters, s.Avg, s.TPS)
		return
	}
	fmt.Fprintf(w, reportFmtLat, s.Size, s.Iters, s.Min, s.Max, s.Typical, s.Avg, s.Stdev, s.P99, s.P999)
}

// WriteConnHeader and WriteConnLine print conn_time's table: the time from
// starting a Dial to the connection being established, per connection.
func WriteConnHeader(w io.Writer) {
	fmt.Fprint(w, resultLine)
	fmt.Fprint(w, resultFmtConn)
}

// WriteConnLine prints the summary of n connection setups (microseconds).
func WriteConnLine(w io.Writer, s Summary) {
	fmt.Fprintf(w, reportFmtConn, s.N, s.Min, s.Max, s.Median, s.Mean, s.Stdev)
}

// WriteEnd closes a table.
func WriteEnd(w io.Writer) { fmt.Fprint(w, resultLine) }
