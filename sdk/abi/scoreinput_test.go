package abi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// randomFleet builds n clusters whose label/claim cardinality is card (driving the
// id width) and whose resources fit int32 unless big is set.
func randomFleet(rng *rand.Rand, n, card int, big bool) ClusterList {
	out := make(ClusterList, n)
	for i := range out {
		c := Cluster{Name: fmt.Sprintf("c%d", i), Labels: map[string]string{}, Claims: map[string]string{},
			Allocatable: map[string]int64{}, Capacity: map[string]int64{}}
		if rng.IntN(5) != 0 {
			c.Labels["env"] = fmt.Sprintf("e%d", rng.IntN(card))
		}
		if rng.IntN(3) != 0 {
			c.Labels["zone"] = fmt.Sprintf("z%d", rng.IntN(card))
		}
		if rng.IntN(4) != 0 {
			c.Claims["region"] = fmt.Sprintf("r%d", rng.IntN(card))
		}
		if rng.IntN(6) != 0 {
			v := rng.Int64N(128000)
			if big {
				v = rng.Int64() - rng.Int64()
			}
			c.Allocatable["cpu"] = v
		}
		c.Capacity["memory"] = rng.Int64N(1 << 40)
		if rng.IntN(2) == 0 {
			c.AddOnScores = []AddOnScore{{ResourceName: "gpu", ScoreName: "free", Value: rng.Int64N(201) - 100}}
		}
		if rng.IntN(3) != 0 {
			c.Decisions = rng.Int64N(40)
		}
		c.Selected = rng.IntN(4) == 0
		out[i] = c
	}
	return out
}

var fullDecl = PrioritizerInputs{
	ClusterNames: true,
	Labels:       []string{"env", "zone", "never-set"},
	Claims:       []string{"region"},
	Resources:    []ResourceInput{{Kind: ResourceAllocatable, Name: "cpu"}, {Kind: ResourceCapacity, Name: "memory"}},
	AddOnScores:  []AddOnScoreInput{{ResourceName: "gpu", ScoreName: "free"}},
}

// placementDecl is fullDecl plus both placement inputs.
var placementDecl = func() PrioritizerInputs {
	d := fullDecl
	d.Decisions, d.Selected = true, true
	return d
}()

// checkRoundTrip decodes an encoding of fleet and compares every cell.
func checkRoundTrip(t *testing.T, decl *PrioritizerInputs, fleet ClusterList) *ScoreInput {
	t.Helper()
	b, err := EncodeScoreInput(nil, decl, fleet)
	if err != nil {
		t.Fatal(err)
	}
	in, err := DecodeScoreInput(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.CheckDeclared(decl); err != nil {
		t.Fatal(err)
	}
	if in.Len() != len(fleet) {
		t.Fatalf("Len %d, want %d", in.Len(), len(fleet))
	}
	for _, key := range decl.Labels {
		col := in.LabelColumn(key)
		ids := col.IDs(nil)
		for i, c := range fleet {
			want, wantOK := c.Labels[key]
			got, ok := col.Get(i)
			if got != want || ok != wantOK {
				t.Fatalf("label %s of cluster %d: %q %v, want %q %v", key, i, got, ok, want, wantOK)
			}
			if ids[i] != col.ID(i) {
				t.Fatalf("AppendIDs[%d] = %d, ID = %d", i, ids[i], col.ID(i))
			}
			if ok && i < 50 { // StringID scans the table: sample it
				if id, found := in.StringID(want); !found || id != col.ID(i) {
					t.Fatalf("StringID(%q) = %d %v, cell id %d", want, id, found, col.ID(i))
				}
			}
		}
	}
	for _, name := range decl.Claims {
		col := in.ClaimColumn(name)
		for i, c := range fleet {
			want, wantOK := c.Claims[name]
			if got, ok := col.Get(i); got != want || ok != wantOK {
				t.Fatalf("claim %s of cluster %d: %q %v, want %q %v", name, i, got, ok, want, wantOK)
			}
		}
	}
	for _, r := range decl.Resources {
		col := in.ResourceColumn(r.Kind, r.Name)
		vals := col.Values(nil)
		for i := range fleet {
			want, wantOK := fleet.Resource(i, r.Kind, r.Name)
			got, ok := col.Get(i)
			if got != want || ok != wantOK {
				t.Fatalf("resource %s/%s of cluster %d: %d %v, want %d %v", r.Kind, r.Name, i, got, ok, want, wantOK)
			}
			if (vals[i] != NoValue) != ok || (ok && vals[i] != got) {
				t.Fatalf("AppendValues[%d] = %d, Get = %d %v", i, vals[i], got, ok)
			}
		}
	}
	for _, a := range decl.AddOnScores {
		col := in.AddOnScoreColumn(a.ResourceName, a.ScoreName)
		for i := range fleet {
			want, wantOK := fleet.AddOnScore(i, a.ResourceName, a.ScoreName)
			if got, ok := col.Get(i); got != want || ok != wantOK {
				t.Fatalf("add-on score of cluster %d: %d %v, want %d %v", i, got, ok, want, wantOK)
			}
		}
	}
	for i, c := range fleet {
		if decl.ClusterNames && in.Name(i) != c.Name {
			t.Fatalf("name of cluster %d: %q, want %q", i, in.Name(i), c.Name)
		}
	}
	checkPlacement(t, decl, fleet, in)
	return in
}

// checkPlacement compares the decision counts and selection of in with fleet's,
// or checks they read as absent when not declared.
func checkPlacement(t *testing.T, decl *PrioritizerInputs, fleet ClusterList, in *ScoreInput) {
	t.Helper()
	if in.HasDecisions() != decl.Decisions || in.HasSelection() != decl.Selected {
		t.Fatalf("decisions sent=%v selection sent=%v, declared %v %v", in.HasDecisions(), in.HasSelection(), decl.Decisions, decl.Selected)
	}
	counts, sel := in.DecisionCounts(make([]int64, 2)), in.Selection(nil)
	if !decl.Decisions {
		if len(counts) != 0 || in.MaxDecisionCount() != 0 {
			t.Fatalf("undeclared decision counts read as %v, max %d", counts, in.MaxDecisionCount())
		}
	} else if len(counts) != len(fleet) {
		t.Fatalf("%d decision counts for %d clusters", len(counts), len(fleet))
	}
	if !decl.Selected && len(sel) != 0 {
		t.Fatalf("undeclared selection reads as %v", sel)
	} else if decl.Selected && len(sel) != len(fleet) {
		t.Fatalf("%d selection flags for %d clusters", len(sel), len(fleet))
	}
	top := int64(0)
	for i, c := range fleet {
		wantCount, wantSel := c.Decisions, c.Selected
		if !decl.Decisions {
			wantCount = 0
		}
		if !decl.Selected {
			wantSel = false
		}
		top = max(top, wantCount)
		if got := in.DecisionCount(i); got != wantCount || (decl.Decisions && counts[i] != wantCount) {
			t.Fatalf("decision count of cluster %d: %d (DecisionCounts %v), want %d", i, got, counts, wantCount)
		}
		if got := in.Selected(i); got != wantSel || (decl.Selected && sel[i] != wantSel) {
			t.Fatalf("selection of cluster %d: %v, want %v", i, got, wantSel)
		}
	}
	if in.MaxDecisionCount() != top {
		t.Fatalf("max decision count %d, want %d (a ClusterList's own maximum)", in.MaxDecisionCount(), top)
	}
}

func TestScoreInputRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name      string
		n, card   int
		big       bool
		wantWidth uint64
	}{
		{"empty", 0, 1, false, 1},
		{"one-byte ids", 300, 20, false, 1},
		{"two-byte ids", 3000, 400, false, 2},
		{"four-byte ids", 40000, 100000, true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fleet := randomFleet(rng, tc.n, tc.card, tc.big)
			for _, decl := range []*PrioritizerInputs{&fullDecl, &placementDecl} {
				in := checkRoundTrip(t, decl, fleet)
				if in.w != tc.wantWidth {
					t.Fatalf("id width %d, want %d", in.w, tc.wantWidth)
				}
			}
		})
	}
}

// placementOnly is a PlacementSource that knows more clusters than the candidates.
type placementOnly struct {
	ClusterList
	max int64
}

func (p placementOnly) MaxDecisionCount() int64 { return p.max }

// attributesOnly hides ClusterList's PlacementSource methods.
type attributesOnly struct{ ClusterSource }

func TestPlacementInputs(t *testing.T) {
	fleet := ClusterList{
		{Name: "a", Decisions: 3, Selected: true},
		{Name: "b"},
		{Name: "c", Decisions: 1 << 40},
		{Name: "d", Decisions: 7, Selected: true},
	}
	for _, tc := range []struct {
		name         string
		decl         PrioritizerInputs
		src          ClusterSource
		max          int64
		counts       []int64
		sel          []bool
		sectionBytes uint64
	}{
		{"decisions only", PrioritizerInputs{Decisions: true}, fleet, math.MaxUint32, []int64{3, 0, math.MaxUint32, 7}, nil, 24}, // 4·5 bytes, padded
		{"selected only", PrioritizerInputs{Selected: true}, fleet, 0, nil, []bool{true, false, false, true}, 8},
		{"both", PrioritizerInputs{Decisions: true, Selected: true}, fleet[:2], 3, []int64{3, 0}, []bool{true, false}, 16 + 8},
		{"a larger maximum elsewhere", PrioritizerInputs{Decisions: true}, placementOnly{fleet[:2], 9}, 9, []int64{3, 0}, nil, 16},
		{"a smaller maximum stands for the candidates'", PrioritizerInputs{Decisions: true}, placementOnly{fleet[:2], -5}, 3, []int64{3, 0}, nil, 16},
		{"no clusters", PrioritizerInputs{Decisions: true, Selected: true}, placementOnly{nil, 4}, 4, []int64{}, []bool{}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := EncodeScoreInput(nil, &tc.decl, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := EncodeScoreInput(nil, &PrioritizerInputs{}, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := uint64(len(b) - len(plain)); got != tc.sectionBytes {
				t.Errorf("placement sections take %d bytes, want %d", got, tc.sectionBytes)
			}
			in, err := DecodeScoreInput(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := in.CheckDeclared(&tc.decl); err != nil {
				t.Fatal(err)
			}
			if got := in.MaxDecisionCount(); got != tc.max {
				t.Errorf("max decision count %d, want %d", got, tc.max)
			}
			if got := in.DecisionCounts(nil); !slices.Equal(got, tc.counts) && !(len(got) == 0 && len(tc.counts) == 0) {
				t.Errorf("decision counts %v, want %v", got, tc.counts)
			}
			if got := in.Selection(nil); !slices.Equal(got, tc.sel) && !(len(got) == 0 && len(tc.sel) == 0) {
				t.Errorf("selection %v, want %v", got, tc.sel)
			}
		})
	}

	for _, decl := range []PrioritizerInputs{{Decisions: true}, {Selected: true, Labels: []string{"env"}}} {
		_, err := EncodeScoreInput(nil, &decl, attributesOnly{fleet})
		if err == nil || !strings.Contains(err.Error(), "does not implement abi.PlacementSource") {
			t.Errorf("%+v over a source without placement facts: error %v", decl, err)
		}
	}
	bad := ClusterList{{Name: "ok"}, {Name: "broken", Decisions: -1}}
	if _, err := EncodeScoreInput(nil, &PrioritizerInputs{Decisions: true}, bad); err == nil || !strings.Contains(err.Error(), "decision count of cluster 1 (broken) is -1") {
		t.Errorf("negative decision count: error %v", err)
	}
	// The same negative count is nobody's business when decisions are not declared.
	if _, err := EncodeScoreInput(nil, &PrioritizerInputs{Selected: true}, bad); err != nil {
		t.Error(err)
	}
}

// TestVersion1InputsUnchanged checks that an input of a plugin declaring no
// placement inputs is the layout version 1 always had: no new flag, no new bytes.
func TestVersion1InputsUnchanged(t *testing.T) {
	fleet := randomFleet(rand.New(rand.NewPCG(21, 22)), 37, 6, false)
	v1, err := EncodeScoreInput(nil, &fullDecl, fleet)
	if err != nil {
		t.Fatal(err)
	}
	if flags := u16(v1[6:]); flags != flagClusterNames {
		t.Fatalf("flags 0x%x, want only the cluster-names bit", flags)
	}
	in, err := DecodeScoreInput(v1)
	if err != nil {
		t.Fatal(err)
	}
	if end := align8(in.lay.addOnCols + 4*uint64(len(fullDecl.AddOnScores)*len(fleet))); end != uint64(len(v1)) {
		t.Fatalf("%d bytes, but the add-on columns end at %d", len(v1), end)
	}
	// The same attributes plus the placement inputs: the version-1 bytes stay a
	// prefix, apart from the flags and total size in the header.
	both, err := EncodeScoreInput(nil, &placementDecl, fleet)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(both[ScoreHeaderSize:len(v1)], v1[ScoreHeaderSize:]) || !slices.Equal(both[:6], v1[:6]) || !slices.Equal(both[8:32], v1[8:32]) {
		t.Fatal("the placement sections moved the version-1 sections")
	}
}

func TestScoreInputSkipsUndeclared(t *testing.T) {
	decl := PrioritizerInputs{Labels: []string{"env"}}
	fleet := randomFleet(rand.New(rand.NewPCG(3, 4)), 50, 3, false)
	in := checkRoundTrip(t, &decl, fleet)
	if in.HasNames() || in.Name(0) != "" {
		t.Fatal("names sent although not declared")
	}
	if in.ClaimColumn("region").Present() || in.ResourceColumn(ResourceAllocatable, "cpu").Present() || in.LabelColumn("zone").Present() {
		t.Fatal("undeclared columns are present")
	}
	if _, ok := in.ClaimColumn("region").Get(0); ok {
		t.Fatal("an absent column reports a value")
	}
	if err := in.CheckDeclared(&fullDecl); err == nil {
		t.Fatal("CheckDeclared accepted a different declaration")
	}
}

func TestResourceWidths(t *testing.T) {
	for _, tc := range []struct {
		vals  []int64
		width uint64
	}{
		{[]int64{0, math.MaxInt32, math.MinInt32 + 1}, 4},
		{[]int64{math.MaxInt32 + 1}, 8},
		{[]int64{math.MinInt32}, 8},
		{[]int64{math.MinInt64, math.MaxInt64}, 8},
	} {
		var fleet ClusterList
		for _, v := range tc.vals {
			fleet = append(fleet, Cluster{Allocatable: map[string]int64{"cpu": v}})
		}
		fleet = append(fleet, Cluster{})
		decl := PrioritizerInputs{Resources: []ResourceInput{{Kind: ResourceAllocatable, Name: "cpu"}}}
		b, err := EncodeScoreInput(nil, &decl, fleet)
		if err != nil {
			t.Fatal(err)
		}
		in, err := DecodeScoreInput(b)
		if err != nil {
			t.Fatal(err)
		}
		col := in.ResourceColumn(ResourceAllocatable, "cpu")
		if col.w != tc.width {
			t.Errorf("values %v: width %d, want %d", tc.vals, col.w, tc.width)
		}
		for i, v := range tc.vals {
			want := v
			if v == NoValue {
				want = NoValue + 1 // saturated so it cannot read as absent
			}
			if got, ok := col.Get(i); !ok || got != want {
				t.Errorf("value %d read back as %d %v", v, got, ok)
			}
		}
		if _, ok := col.Get(len(tc.vals)); ok {
			t.Errorf("values %v: absent cell reads as present", tc.vals)
		}
	}
}

func TestScoreInputLayoutIsAligned(t *testing.T) {
	for _, decl := range []*PrioritizerInputs{&fullDecl, &placementDecl} {
		b, err := EncodeScoreInput(nil, decl, randomFleet(rand.New(rand.NewPCG(5, 6)), 13, 5, false))
		if err != nil {
			t.Fatal(err)
		}
		in, err := DecodeScoreInput(b)
		if err != nil {
			t.Fatal(err)
		}
		offs := []uint64{in.lay.offs, in.lay.data, in.lay.labelKeys, in.lay.claimKeys, in.lay.resourceKeys, in.lay.addOnKeys,
			in.lay.labelCols, in.lay.claimCols, in.lay.addOnCols, in.lay.decisions, in.lay.selected, in.lay.total}
		offs = append(offs, in.lay.resourceCols...)
		for _, o := range offs {
			if o%8 != 0 {
				t.Fatalf("section at %d is not 8-aligned (%v)", o, offs)
			}
		}
		if len(b)%8 != 0 || b[37] != 0 || b[38] != 0 || b[39] != 0 {
			t.Fatal("padding or reserved bytes are not zero")
		}
		// 13 selection bytes are padded to 16, with zeros.
		if decl.Selected && (b[in.lay.selected+13] != 0 || b[in.lay.selected+15] != 0 || in.lay.total-in.lay.selected != 16) {
			t.Fatal("the selection section is not padded with zeros to 8 bytes")
		}
	}
}

func TestDecodeScoreInputErrors(t *testing.T) {
	good, err := EncodeScoreInput(nil, &fullDecl, randomFleet(rand.New(rand.NewPCG(7, 8)), 10, 3, false))
	if err != nil {
		t.Fatal(err)
	}
	in, _ := DecodeScoreInput(good)
	mutate := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	placed, err := EncodeScoreInput(nil, &placementDecl, randomFleet(rand.New(rand.NewPCG(7, 8)), 10, 3, false))
	if err != nil {
		t.Fatal(err)
	}
	mutatePlaced := func(f func(b []byte) []byte) []byte { return f(slices.Clone(placed)) }
	for _, tc := range []struct {
		name string
		b    []byte
		msg  string
	}{
		{"short", good[:10], "10 bytes, shorter than the 40-byte header"},
		{"magic", mutate(func(b []byte) []byte { b[0] = 'X'; return b }), `magic "XLPS"`},
		{"version", mutate(func(b []byte) []byte { b[4] = 2; return b }), "version 2 is not supported"},
		{"flags", mutate(func(b []byte) []byte { b[6] |= 8; return b }), "unknown flags 0x9"},
		{"high flags", mutate(func(b []byte) []byte { b[7] = 0x80; return b }), "unknown flags 0x8001"},
		{"decisions flag without its section", mutate(func(b []byte) []byte { b[6] |= flagDecisions; return b }), "header total size"},
		{"selection flag without its section", mutate(func(b []byte) []byte { b[6] |= flagSelected; return b }), "header total size"},
		{"decision section without its flag", mutatePlaced(func(b []byte) []byte { b[6] &^= flagDecisions; return b }), "header total size"},
		{"selection section without its flag", mutatePlaced(func(b []byte) []byte { b[6] &^= flagSelected; return b }), "header total size"},
		{"truncated selection", placed[:len(placed)-8], "bytes, header describes"},
		{"truncated decisions", placed[:len(placed)-16-8], "bytes, header describes"},
		{"placement sections, extra bytes", append(slices.Clone(placed), make([]byte, 8)...), "header describes"},
		{"placement sections, unknown flag", mutatePlaced(func(b []byte) []byte { b[6] |= 0x10; return b }), "unknown flags 0x17"},
		{"truncated", good[:len(good)-8], "bytes, header describes"},
		{"total", mutate(func(b []byte) []byte { b[32] += 8; return b }), "header total size"},
		{"extra bytes", append(slices.Clone(good), make([]byte, 8)...), "header describes"},
		{"string count", mutate(func(b []byte) []byte { b[16]++; return b }), "string count"},
		{"id width", mutate(func(b []byte) []byte { b[36] = 4; return b }), "id width 4 does not suit"},
		{"offsets", mutate(func(b []byte) []byte { putU32(b[in.lay.offs+4:], 1<<30); return b }), "string offsets[1]"},
		{"key id", mutate(func(b []byte) []byte { putU32(b[in.lay.labelKeys:], 1<<20); return b }), "label keys[0]: string id 1048576 out of range"},
		{"resource kind", mutate(func(b []byte) []byte { b[in.lay.resourceKeys] = 7; return b }), "resource keys[0]: kind 7"},
		{"resource width", mutate(func(b []byte) []byte { b[in.lay.resourceKeys+1] = 3; return b }), "resource keys[0]: cell width 3"},
	} {
		_, err := DecodeScoreInput(tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.msg)
		}
	}
	// Garbage after a valid header prefix is rejected, never a panic.
	rng := rand.New(rand.NewPCG(13, 14))
	for range 2000 {
		b := slices.Clone(placed[:8+rng.IntN(len(placed)-8)])
		for range 1 + rng.IntN(4) {
			b[rng.IntN(len(b))] = byte(rng.Uint32())
		}
		if in, err := DecodeScoreInput(b); err == nil {
			t.Fatalf("a truncated, corrupted input of %d bytes decoded (%d clusters)", len(b), in.Len())
		}
	}
}

func TestCheckDeclaredPlacementInputs(t *testing.T) {
	fleet := randomFleet(rand.New(rand.NewPCG(15, 16)), 5, 3, false)
	for _, tc := range []struct {
		sent, declared PrioritizerInputs
		msg            string
	}{
		{PrioritizerInputs{}, PrioritizerInputs{Decisions: true}, "decision counts sent=false, declared=true"},
		{PrioritizerInputs{Decisions: true}, PrioritizerInputs{}, "decision counts sent=true, declared=false"},
		{PrioritizerInputs{Decisions: true}, PrioritizerInputs{Selected: true}, "decision counts sent=true, declared=false"},
		{PrioritizerInputs{Selected: true}, PrioritizerInputs{}, "selection sent=true, declared=false"},
		{PrioritizerInputs{Decisions: true}, PrioritizerInputs{Decisions: true, Selected: true}, "selection sent=false, declared=true"},
	} {
		b, err := EncodeScoreInput(nil, &tc.sent, fleet)
		if err != nil {
			t.Fatal(err)
		}
		in, err := DecodeScoreInput(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := in.CheckDeclared(&tc.declared); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("sent %+v, declared %+v: error %v, want one containing %q", tc.sent, tc.declared, err, tc.msg)
		}
	}
}

func TestOutOfRangeCellsReadAsAbsent(t *testing.T) {
	fleet := ClusterList{{Labels: map[string]string{"env": "a"}}, {Labels: map[string]string{"env": "b"}}}
	decl := PrioritizerInputs{Labels: []string{"env"}}
	b, err := EncodeScoreInput(nil, &decl, fleet)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := DecodeScoreInput(b)
	b[in.lay.labelCols+1] = 0xFE // an id past the 3 shared strings
	in, err = DecodeScoreInput(b)
	if err != nil {
		t.Fatal(err)
	}
	col := in.LabelColumn("env")
	if _, ok := col.Get(1); ok || col.ID(1) != NoString || col.IDs(nil)[1] != NoString {
		t.Fatal("an out-of-range id reads as present")
	}
	if v, ok := col.Get(0); !ok || v != "a" {
		t.Fatalf("cluster 0 reads %q %v", v, ok)
	}
}

func TestAddWhere(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, card := range []int{5, 1000, 100000} {
		fleet := randomFleet(rng, 3000, card, false)
		decl := PrioritizerInputs{Labels: []string{"env"}}
		b, err := EncodeScoreInput(nil, &decl, fleet)
		if err != nil {
			t.Fatal(err)
		}
		in, _ := DecodeScoreInput(b)
		col := in.LabelColumn("env")
		want := fleet[0].Labels["env"]
		if want == "" {
			want = fleet[1].Labels["env"]
		}
		id, _ := in.StringID(want)
		scores := make([]int64, len(fleet))
		col.AddWhere(id, 7, scores)
		col.AddWhere(NoString, 100, scores)
		for i, c := range fleet {
			exp := int64(0)
			if v, ok := c.Labels["env"]; ok && v == want {
				exp = 7
			}
			if scores[i] != exp {
				t.Fatalf("card %d cluster %d: score %d, want %d", card, i, scores[i], exp)
			}
		}
	}
}

func FuzzDecodeScoreInput(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 7} {
		for _, decl := range []*PrioritizerInputs{&fullDecl, &placementDecl, {Selected: true}} {
			b, _ := EncodeScoreInput(nil, decl, randomFleet(rng, n, 4, n == 7))
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := DecodeScoreInput(b)
		if err != nil {
			return
		}
		// A decoded input must be safe to read everywhere.
		for _, k := range in.Labels() {
			col := in.LabelColumn(k)
			col.IDs(make([]uint32, 3))
			for i := 0; i < in.Len(); i++ {
				col.Get(i)
			}
		}
		for _, k := range in.Claims() {
			col := in.ClaimColumn(k)
			for i := 0; i < in.Len(); i++ {
				col.Get(i)
			}
		}
		for _, r := range in.Resources() {
			col := in.ResourceColumn(r.Kind, r.Name)
			col.Values(nil)
			for i := 0; i < in.Len(); i++ {
				col.Get(i)
			}
		}
		for _, a := range in.AddOnScores() {
			col := in.AddOnScoreColumn(a.ResourceName, a.ScoreName)
			for i := 0; i < in.Len(); i++ {
				col.Get(i)
			}
		}
		for i := 0; i < in.Len(); i++ {
			in.Name(i)
			in.DecisionCount(i)
			in.Selected(i)
		}
		in.MaxDecisionCount()
		in.DecisionCounts(nil)
		in.Selection(make([]bool, 2))
	})
}

func TestScoreAnswers(t *testing.T) {
	scores := []int64{-1000, -100, 0, 42, 100, 1 << 40}
	clamped := []int64{-100, -100, 0, 42, 100, 100}
	got, err := DecodeScores(AppendScores(nil, scores), len(scores), nil)
	if err != nil || !slices.Equal(got, clamped) {
		t.Fatalf("int64 answer: %v %v, want %v", got, err, clamped)
	}
	got, err = DecodeScores(AppendCompactScores(nil, scores), len(scores), got)
	if err != nil || !slices.Equal(got, clamped) {
		t.Fatalf("int8 answer: %v %v, want %v", got, err, clamped)
	}
	if _, err := DecodeScores([]byte{1, 2, 3}, 2, nil); err == nil || !strings.Contains(err.Error(), "3 bytes, want 16 (an int64 for each of 2 clusters) or 2 (an int8 each)") {
		t.Fatalf("length mismatch error: %v", err)
	}
	if _, err := DecodeScores([]byte{0, 120}, 2, nil); err == nil || !strings.Contains(err.Error(), "compact score of cluster 1 is 120") {
		t.Fatalf("out-of-range compact score error: %v", err)
	}
	if got, err := DecodeScores(nil, 0, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty answer: %v %v", got, err)
	}
}

func TestDeclarationValidation(t *testing.T) {
	for _, tc := range []struct {
		decl PrioritizerInputs
		msg  string
	}{
		{PrioritizerInputs{Labels: []string{"a", ""}}, "prioritizer inputs: labels[1]: must not be empty"},
		{PrioritizerInputs{Claims: []string{"a", "b", "a"}}, `prioritizer inputs: claims[2]: "a" duplicates claims[0]`},
		{PrioritizerInputs{Labels: make([]string, MaxLabelInputs+1)}, "labels: 65 entries, at most 64 allowed"},
		{PrioritizerInputs{Resources: []ResourceInput{{Kind: "Used", Name: "cpu"}}}, `resources[0].kind: "Used" is not Allocatable or Capacity`},
		{PrioritizerInputs{Resources: []ResourceInput{{Kind: ResourceCapacity}}}, "resources[0].name: must not be empty"},
		{PrioritizerInputs{Resources: []ResourceInput{{ResourceCapacity, "cpu"}, {ResourceCapacity, "cpu"}}}, "resources[1]: duplicates resources[0]"},
		{PrioritizerInputs{AddOnScores: []AddOnScoreInput{{ResourceName: "x"}}}, "addOnScores[0].scoreName: must not be empty"},
	} {
		if err := tc.decl.Validate(); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: error %v, want one containing %q", tc.decl, err, tc.msg)
		}
	}
	if err := fullDecl.Validate(); err != nil {
		t.Fatal(err)
	}
}
