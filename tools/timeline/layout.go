// Copyright 2026 The rdmago Authors.

package timeline

import (
	"math"
	"sort"
)

// gapPixels is the extra space between rows Δt ns apart: logarithmic, so
// that a 10 µs step and a 1 s pause both show without a 1 s transfer
// becoming miles long or a 10 ms handshake a line.
func gapPixels(dt int64) float64 {
	if dt <= 1000 {
		return 0
	}
	return math.Min(90, 14*math.Log10(float64(dt)/1000))
}

// layout gives every item its rows: items in time order get one row each,
// spaced by gapPixels; the end of a packet's arrow or a run is placed on
// the same time scale between the rows.
func layout(m *Model) {
	y := topMargin
	ts := make([]int64, len(m.Items))
	ys := make([]float64, len(m.Items))
	for i := range m.Items {
		if i > 0 {
			y += rowHeight + gapPixels(m.Items[i].T-m.Items[i-1].T)
		}
		m.Items[i].Y = y
		ts[i], ys[i] = m.Items[i].T, y
	}
	for i := range m.Items {
		it := &m.Items[i]
		if it.Kind == ItemPacket || it.Kind == ItemRun {
			it.Y2 = math.Max(it.Y, yAt(ts, ys, it.T2))
		}
		if it.T0 != 0 {
			it.Y0 = math.Min(it.Y, yAt(ts, ys, it.T0))
		}
	}
	m.Height = y + 2*rowHeight
	for _, it := range m.Items {
		m.Height = math.Max(m.Height, it.Y2+2*rowHeight)
	}
}

// yAt is the row of time t: linear between the rows around it.
func yAt(ts []int64, ys []float64, t int64) float64 {
	if len(ts) == 0 {
		return topMargin
	}
	i := sort.Search(len(ts), func(i int) bool { return ts[i] >= t })
	switch {
	case i == 0:
		return ys[0]
	case i == len(ts):
		return ys[len(ys)-1] + rowHeight
	case ts[i] == t:
		return ys[i]
	}
	f := float64(t-ts[i-1]) / float64(ts[i]-ts[i-1])
	return ys[i-1] + f*(ys[i]-ys[i-1])
}
