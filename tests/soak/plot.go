package main

import (
	"context"
	"fmt"
	"image/color"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// sample is one point of the timeline, taken every 2 s.
type sample struct {
	t          float64 // seconds since the start
	rss        [3]float64
	goroutines [3]float64
	calls      int64
	faults     int
}

// sampler records the timeline until ctx ends.
func (s *soak) sampler(ctx context.Context) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var sm sample
		sm.t = time.Since(s.start).Seconds()
		for i, r := range s.replicas {
			if pid := r.pid(); pid > 0 {
				if v, ok := rssBytes(pid); ok {
					sm.rss[i] = float64(v)
				}
				mctx, cancel := context.WithTimeout(ctx, time.Second)
				if g, _, err := r.metrics(mctx); err == nil {
					sm.goroutines[i] = g
				}
				cancel()
			}
		}
		sm.calls = s.calls.Load()
		sm.faults = s.faultCount()
		s.mu.Lock()
		s.timeline = append(s.timeline, sm)
		s.mu.Unlock()
	}
}

var replicaColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 255},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 255},
}

// plot draws RSS, goroutines, calls/s and faults over time, one panel each.
func (s *soak) plot(path string) error {
	s.mu.Lock()
	tl := append([]sample(nil), s.timeline...)
	s.mu.Unlock()
	if len(tl) < 2 {
		return fmt.Errorf("no timeline to plot")
	}
	panels := make([][]*plot.Plot, 4)
	mk := func(title, y string) *plot.Plot {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = "seconds"
		p.Y.Label.Text = y
		p.Y.Min = 0
		p.Legend.Top = true
		p.Legend.Left = true
		p.Add(plotter.NewGrid())
		return p
	}
	rss := mk("toolsvc replicas: resident memory", "MiB")
	gor := mk("toolsvc replicas: goroutines (go_goroutines)", "goroutines")
	for i := range 3 {
		var a, b plotter.XYs
		for _, sm := range tl {
			if sm.rss[i] > 0 {
				a = append(a, plotter.XY{X: sm.t, Y: sm.rss[i] / (1 << 20)})
			}
			if sm.goroutines[i] > 0 {
				b = append(b, plotter.XY{X: sm.t, Y: sm.goroutines[i]})
			}
		}
		for _, x := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{rss, a}, {gor, b}} {
			if len(x.xys) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(x.xys)
			if err != nil {
				return err
			}
			sc.GlyphStyle.Color = replicaColors[i]
			sc.GlyphStyle.Radius = vg.Points(1.2)
			x.p.Add(sc)
			x.p.Legend.Add(fmt.Sprintf("replica%d", i), sc)
		}
	}
	cps := mk("calls completed per second", "calls/s")
	var c plotter.XYs
	for i := 1; i < len(tl); i++ {
		dt := tl[i].t - tl[i-1].t
		if dt > 0 {
			c = append(c, plotter.XY{X: tl[i].t, Y: float64(tl[i].calls-tl[i-1].calls) / dt})
		}
	}
	if l, err := plotter.NewLine(c); err == nil {
		cps.Add(l)
	}
	fl := mk("faults injected (cumulative)", "faults")
	var f plotter.XYs
	for _, sm := range tl {
		f = append(f, plotter.XY{X: sm.t, Y: float64(sm.faults)})
	}
	if l, err := plotter.NewLine(f); err == nil {
		l.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}
		fl.Add(l)
	}
	panels[0] = []*plot.Plot{rss}
	panels[1] = []*plot.Plot{gor}
	panels[2] = []*plot.Plot{cps}
	panels[3] = []*plot.Plot{fl}
	img := vgimg.New(10*vg.Inch, 12*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 4, Cols: 1, PadX: vg.Millimeter, PadY: 3 * vg.Millimeter, PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(panels, tiles, dc)
	for i := range panels {
		panels[i][0].Draw(canvases[i][0])
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
