package fleetbench

import (
	"fmt"
	"io"
	"strings"
)

// Growth prints, for each size of a curve, its figures per 1,000 clusters, so a reader sees
// which grow linearly (a flat column) and which faster; the join is per 1,000 clusters added
// to reach the size.
func Growth(w io.Writer, rs []Result) {
	fmt.Fprintf(w, "%-8s %8s %12s %14s %16s %12s %10s\n", "clusters", "added", "join_s/1k", "hub_cpu/1k", "hub_rss_mib/1k", "api_rss/1k", "etcd/1k")
	for _, r := range rs {
		k := float64(r.Clusters) / 1000
		fmt.Fprintf(w, "%-8d %8d %12.1f %14.3f %16.0f %12.0f %10.1f\n", r.Clusters, r.Added, r.JoinS/(float64(max(1, r.Added))/1000),
			r.SteadyHubCPU/k, r.HubRSSMiB/k, r.APIServerRSSMiB/k, r.EtcdDBMiB/k)
	}
}

// series is one line of the plot.
type series struct {
	name, colour string
	value        func(Result) float64
}

// SVG plots the memory figures (MiB, left axis) and the steady hub CPU (millicores, same
// scale) against the fleet size.
func SVG(rs []Result) string {
	const w, h, left, bottom, top, right = 720, 420, 70, 50, 30, 190
	lines := []series{
		{"hub RSS (MiB)", "#1f77b4", func(r Result) float64 { return r.HubRSSMiB }},
		{"kube-apiserver RSS (MiB)", "#ff7f0e", func(r Result) float64 { return r.APIServerRSSMiB }},
		{"etcd db (MiB)", "#2ca02c", func(r Result) float64 { return r.EtcdDBMiB }},
		{"hub steady CPU (millicores)", "#d62728", func(r Result) float64 { return r.SteadyHubCPU * 1000 }},
	}
	maxX, maxY := 0.0, 0.0
	for _, r := range rs {
		maxX = max(maxX, float64(r.Clusters))
		for _, l := range lines {
			maxY = max(maxY, l.value(r))
		}
	}
	if maxY == 0 {
		maxY = 1
	}
	maxY *= 1.1
	px := func(x float64) float64 { return left + x/maxX*float64(w-left-right) }
	py := func(y float64) float64 { return float64(h-bottom) - y/maxY*float64(h-bottom-top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">Hub cost by fleet size (make bench-fleet)</text>`+"\n", left)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, h-bottom)
	for i := 0; i <= 4; i++ {
		y := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%.0f</text>`+"\n", left-6, py(y)+4, y)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#ddd"/>`+"\n", left, py(y), w-right, py(y))
	}
	for _, r := range rs {
		fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%d</text>`+"\n", px(float64(r.Clusters)), h-bottom+18, r.Clusters)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">managed clusters</text>`+"\n", (left+w-right)/2, h-12)
	for i, l := range lines {
		var pts []string
		for _, r := range rs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(float64(r.Clusters)), py(l.value(r))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", l.colour, strings.Join(pts, " "))
		for _, p := range pts {
			xy := strings.Split(p, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", xy[0], xy[1], l.colour)
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			w-right+10, top+i*20, l.colour, w-right+28, top+i*20+10, l.name)
	}
	b.WriteString("</svg>\n")
	return b.String()
}
