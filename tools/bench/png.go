// Copyright 2026 The rdmago Authors.

package bench

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"strings"
)

// bw.png: bandwidth against message size, rdmago solid and perftest dashed,
// one panel per topology, with the min–max spread of the repetitions as
// error bars. Drawn with the standard library only: lines by Bresenham and
// a built-in 5×7 pixel font.

var (
	white     = color.RGBA{255, 255, 255, 255}
	black     = color.RGBA{0, 0, 0, 255}
	gridGrey  = color.RGBA{225, 225, 225, 255}
	axisGrey  = color.RGBA{90, 90, 90, 255}
	testColor = map[string]color.RGBA{
		"write_bw": {31, 119, 180, 255},
		"read_bw":  {44, 160, 44, 255},
		"send_bw":  {214, 39, 40, 255},
	}
)

type canvas struct{ img *image.RGBA }

func (c canvas) set(x, y int, col color.RGBA) {
	if image.Pt(x, y).In(c.img.Rect) {
		c.img.SetRGBA(x, y, col)
	}
}

func (c canvas) fill(r image.Rectangle, col color.RGBA) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c.set(x, y, col)
		}
	}
}

// line draws from (x0,y0) to (x1,y1), thick pixels wide, dashed if dash > 0
// (dash pixels on, dash off).
func (c canvas) line(x0, y0, x1, y1 int, col color.RGBA, thick, dash int) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	err := dx + dy
	for step := 0; ; step++ {
		if dash == 0 || (step/dash)%2 == 0 {
			for t := 0; t < thick; t++ {
				for u := 0; u < thick; u++ {
					c.set(x0+t-thick/2, y0+u-thick/2, col)
				}
			}
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * err
		if e2 >= dy {
			err += dy
			x0 += sx
		}
		if e2 <= dx {
			err += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// font5x7 holds the glyphs the chart uses: each row is 5 bits, the top bit
// the leftmost pixel. Text is drawn in upper case.
var font5x7 = map[rune][7]uint8{
	'A': {14, 17, 17, 31, 17, 17, 17}, 'B': {30, 17, 17, 30, 17, 17, 30}, 'C': {14, 17, 16, 16, 16, 17, 14},
	'D': {30, 17, 17, 17, 17, 17, 30}, 'E': {31, 16, 16, 30, 16, 16, 31}, 'F': {31, 16, 16, 30, 16, 16, 16},
	'G': {14, 17, 16, 23, 17, 17, 15}, 'H': {17, 17, 17, 31, 17, 17, 17}, 'I': {14, 4, 4, 4, 4, 4, 14},
	'J': {7, 2, 2, 2, 2, 18, 12}, 'K': {17, 18, 20, 24, 20, 18, 17}, 'L': {16, 16, 16, 16, 16, 16, 31},
	'M': {17, 27, 21, 21, 17, 17, 17}, 'N': {17, 17, 25, 21, 19, 17, 17}, 'O': {14, 17, 17, 17, 17, 17, 14},
	'P': {30, 17, 17, 30, 16, 16, 16}, 'Q': {14, 17, 17, 17, 21, 18, 13}, 'R': {30, 17, 17, 30, 20, 18, 17},
	'S': {15, 16, 16, 14, 1, 1, 30}, 'T': {31, 4, 4, 4, 4, 4, 4}, 'U': {17, 17, 17, 17, 17, 17, 14},
	'V': {17, 17, 17, 17, 17, 10, 4}, 'W': {17, 17, 17, 21, 21, 21, 10}, 'X': {17, 17, 10, 4, 10, 17, 17},
	'Y': {17, 17, 10, 4, 4, 4, 4}, 'Z': {31, 1, 2, 4, 8, 16, 31},
	'0': {14, 17, 19, 21, 25, 17, 14}, '1': {4, 12, 4, 4, 4, 4, 14}, '2': {14, 17, 1, 2, 4, 8, 31},
	'3': {31, 2, 4, 2, 1, 17, 14}, '4': {2, 6, 10, 18, 31, 2, 2}, '5': {31, 16, 30, 1, 1, 17, 14},
	'6': {6, 8, 16, 30, 17, 17, 14}, '7': {31, 1, 2, 4, 8, 8, 8}, '8': {14, 17, 17, 14, 17, 17, 14},
	'9': {14, 17, 17, 15, 1, 2, 12},
	' ': {}, '.': {0, 0, 0, 0, 0, 12, 12}, '_': {0, 0, 0, 0, 0, 0, 31}, '-': {0, 0, 0, 31, 0, 0, 0},
	'/': {1, 1, 2, 4, 8, 16, 16}, '(': {2, 4, 8, 8, 8, 4, 2}, ')': {8, 4, 2, 2, 2, 4, 8},
	'[': {14, 8, 8, 8, 8, 8, 14}, ']': {14, 2, 2, 2, 2, 2, 14}, ':': {0, 12, 12, 0, 12, 12, 0},
	',': {0, 0, 0, 0, 12, 4, 8}, '=': {0, 0, 31, 0, 31, 0, 0}, '%': {24, 25, 2, 4, 8, 19, 3},
	'+': {0, 4, 4, 31, 4, 4, 0}, '<': {2, 4, 8, 16, 8, 4, 2}, '>': {8, 4, 2, 1, 2, 4, 8},
}

const glyphW, glyphH = 6, 8 // with spacing

// text draws s (upper-cased) with its top-left corner at (x, y), each font
// pixel scale×scale. Runes without a glyph are drawn as '?'-less gaps.
func (c canvas) text(x, y int, s string, col color.RGBA, scale int) {
	for i, r := range strings.ToUpper(s) {
		g := font5x7[r]
		for row := 0; row < 7; row++ {
			for bit := 0; bit < 5; bit++ {
				if g[row]&(1<<(4-bit)) != 0 {
					c.fill(image.Rect(x+(i*glyphW+bit)*scale, y+row*scale, x+(i*glyphW+bit+1)*scale, y+(row+1)*scale), col)
				}
			}
		}
	}
}

func textWidth(s string, scale int) int { return len([]rune(s)) * glyphW * scale }

// sizeLabel is a short message size: 64, 4K, 1M.
func sizeLabel(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// bwChart draws bw.png from the report's bandwidth cases.
func bwChart(r *Report) ([]byte, error) {
	var topos []int
	for _, n := range r.Topologies {
		for _, c := range r.Cases {
			if c.Nodes == n && isBW(c.Test) && !slices.Contains(topos, n) {
				topos = append(topos, n)
			}
		}
	}
	const W, panelH, scale = 900, 430, 2
	H := 20 + max(1, len(topos))*panelH
	c := canvas{image.NewRGBA(image.Rect(0, 0, W, H))}
	c.fill(c.img.Rect, white)
	if len(topos) == 0 {
		c.text(20, 20, "NO BANDWIDTH CASES", black, scale)
	}
	for i, n := range topos {
		drawPanel(c, r, n, image.Rect(0, 10+i*panelH, W, 10+(i+1)*panelH), scale)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, c.img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func drawPanel(c canvas, r *Report, nodes int, area image.Rectangle, scale int) {
	title := "BW AVERAGE VS MESSAGE SIZE - " + strings.ToUpper(topoName(nodes))
	c.text(area.Min.X+20, area.Min.Y+8, title, black, scale)
	plot := image.Rect(area.Min.X+90, area.Min.Y+60, area.Max.X-200, area.Max.Y-60)
	var cases []*benchCase
	var sizes []int
	ymax := 0.0
	for _, cs := range r.Cases {
		if cs.Nodes != nodes || !isBW(cs.Test) {
			continue
		}
		cases = append(cases, cs)
		if !slices.Contains(sizes, cs.Size) {
			sizes = append(sizes, cs.Size)
		}
		ymax = max(ymax, cs.Stats.GoMax, cs.Stats.CMax)
	}
	slices.Sort(sizes)
	ymax = niceCeil(ymax * 1.05)
	lx0, lx1 := math.Log2(float64(sizes[0])), math.Log2(float64(sizes[len(sizes)-1]))
	if lx1-lx0 < 1 {
		lx0, lx1 = lx0-1, lx1+1
	}
	px := func(size int) int {
		f := (math.Log2(float64(size)) - lx0) / (lx1 - lx0)
		return plot.Min.X + 20 + int(f*float64(plot.Dx()-40))
	}
	py := func(v float64) int { return plot.Max.Y - int(v/ymax*float64(plot.Dy())) }

	// Grid, axes, ticks.
	for k := 0; k <= 5; k++ {
		v := ymax * float64(k) / 5
		y := py(v)
		c.line(plot.Min.X, y, plot.Max.X, y, gridGrey, 1, 0)
		lbl := fmt.Sprintf("%.4g", v)
		c.text(plot.Min.X-10-textWidth(lbl, scale), y-7, lbl, axisGrey, scale)
	}
	for _, s := range sizes {
		x := px(s)
		c.line(x, plot.Min.Y, x, plot.Max.Y, gridGrey, 1, 0)
		lbl := sizeLabel(s)
		c.text(x-textWidth(lbl, scale)/2, plot.Max.Y+10, lbl, axisGrey, scale)
	}
	c.line(plot.Min.X, plot.Max.Y, plot.Max.X, plot.Max.Y, axisGrey, 2, 0)
	c.line(plot.Min.X, plot.Min.Y, plot.Min.X, plot.Max.Y, axisGrey, 2, 0)
	c.text(plot.Min.X-80, plot.Min.Y-30, "MB/S (MIB/S)", axisGrey, scale)
	c.text(plot.Min.X+plot.Dx()/2-textWidth("MESSAGE SIZE (BYTES)", scale)/2, plot.Max.Y+34, "MESSAGE SIZE (BYTES)", axisGrey, scale)

	// Series: per test, rdmago solid with filled dots, C dashed with
	// hollow squares; error bars from min to max.
	var tests []string
	for _, cs := range cases {
		if !slices.Contains(tests, cs.Test) {
			tests = append(tests, cs.Test)
		}
	}
	for _, t := range tests {
		col, ok := testColor[t]
		if !ok {
			col = black
		}
		for tool := 0; tool < 2; tool++ {
			var pts [][2]int // x, y
			for _, s := range sizes {
				for _, cs := range cases {
					if cs.Test != t || cs.Size != s {
						continue
					}
					v, lo, hi := cs.Stats.GoMedian, cs.Stats.GoMin, cs.Stats.GoMax
					if tool == 1 {
						v, lo, hi = cs.Stats.CMedian, cs.Stats.CMin, cs.Stats.CMax
					}
					if v <= 0 {
						continue
					}
					x := px(s) + (tool*2-1)*4 // side by side
					c.line(x, py(lo), x, py(hi), col, 1, 0)
					c.line(x-4, py(lo), x+4, py(lo), col, 1, 0)
					c.line(x-4, py(hi), x+4, py(hi), col, 1, 0)
					pts = append(pts, [2]int{x, py(v)})
				}
			}
			for k := 1; k < len(pts); k++ {
				dash := 0
				if tool == 1 {
					dash = 7
				}
				c.line(pts[k-1][0], pts[k-1][1], pts[k][0], pts[k][1], col, 3, dash)
			}
			for _, p := range pts {
				if tool == 0 {
					c.fill(image.Rect(p[0]-4, p[1]-4, p[0]+5, p[1]+5), col)
				} else {
					r := image.Rect(p[0]-5, p[1]-5, p[0]+6, p[1]+6)
					c.fill(r, col)
					c.fill(r.Inset(2), white)
				}
			}
		}
	}

	// Legend.
	lx, ly := plot.Max.X+20, plot.Min.Y
	for i, t := range tests {
		col := testColor[t]
		y := ly + i*60
		c.text(lx, y, t, col, scale)
		c.line(lx, y+26, lx+40, y+26, col, 3, 0)
		c.fill(image.Rect(lx+16, y+22, lx+25, y+31), col)
		c.text(lx+48, y+20, "RDMAGO", black, scale)
		c.line(lx, y+46, lx+40, y+46, col, 3, 7)
		c.text(lx+48, y+40, "PERFTEST", black, scale)
	}
}
