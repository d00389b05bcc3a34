// Copyright 2026 The rdmago Authors.

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rdmago/rdmago/internal/escape"
	"github.com/rdmago/rdmago/transfer"
)

func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs: cannot fail
	}
	fmt.Fprintf(w, "%s\n", b)
}

// isTerminal reports whether w is a terminal (a character device: progress
// bars go there only, not to files or pipes).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && fi.Mode()&os.ModeDevice != 0
}

// progress draws a one-line bar: percentage, bytes, rate over the last
// seconds, ETA and the current item; at most ten times a second.
type progress struct {
	w       io.Writer
	on      bool
	last    time.Time
	samples []sample
	p       transfer.Progress
	drawn   bool
	now     func() time.Time
}

type sample struct {
	t    time.Time
	done int64
}

func newProgress(w io.Writer, on bool) *progress {
	return &progress{w: w, on: on, now: time.Now}
}

func (b *progress) update(p transfer.Progress) {
	if !b.on {
		return
	}
	b.p = p
	now := b.now()
	if len(b.samples) == 0 || now.Sub(b.samples[len(b.samples)-1].t) >= 100*time.Millisecond {
		b.samples = append(b.samples, sample{now, p.Done})
		for len(b.samples) > 2 && now.Sub(b.samples[0].t) > 3*time.Second {
			b.samples = b.samples[1:]
		}
	}
	if now.Sub(b.last) < 100*time.Millisecond && !(p.Finished && p.Item == p.Items-1) {
		return
	}
	b.last = now
	fmt.Fprint(b.w, "\r"+b.line()+"\x1b[K")
	b.drawn = true
}

func (b *progress) rate() float64 {
	if len(b.samples) < 2 {
		return 0
	}
	first, last := b.samples[0], b.samples[len(b.samples)-1]
	dt := last.t.Sub(first.t).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(last.done-first.done) / dt
}

func (b *progress) line() string {
	p := b.p
	pct := 100.0
	if p.Total > 0 {
		pct = 100 * float64(p.Done) / float64(p.Total)
	}
	const width = 24
	fill := int(pct / 100 * width)
	bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
	if fill < width {
		bar = bar[:fill] + ">" + bar[fill+1:]
	}
	rate := b.rate()
	eta := "-"
	if rate > 0 && p.Total > p.Done {
		eta = humanDuration(time.Duration(float64(p.Total-p.Done) / rate * float64(time.Second)))
	}
	name := escape.Text(p.Name)
	if len(name) > 30 {
		i := len(name) - 29
		for i < len(name) && !utf8.RuneStart(name[i]) {
			i++
		}
		name = "…" + name[i:]
	}
	return fmt.Sprintf("%3.0f%% [%s] %s / %s  %s  ETA %s  %d/%d %s",
		pct, bar, humanBytes(p.Done), humanBytes(p.Total), humanRate(rate), eta, p.Item+1, p.Items, name)
}

// finish ends the bar's line.
func (b *progress) finish() {
	if b.on && b.drawn {
		fmt.Fprint(b.w, "\r"+b.line()+"\x1b[K\n")
	}
}
