package abi

import (
	"errors"
	"math"
	"strconv"
)

// Score input layout, version 1 (all integers little-endian).
//
// A 40-byte header is followed by sections in the order below. Every section starts
// at an offset that is a multiple of 8; padding bytes are zero. Cells are as narrow
// as the data allows, because a guest reads its input through the Extism kernel 8
// bytes per host call, and those calls dominate the cost of a large cycle.
//
//	header
//	  0  [4]byte magic "FLPS"
//	  4  u16     version (1)
//	  6  u16     flags: bit 0 = cluster names present, bit 1 = decision counts
//	             present, bit 2 = selection present; other bits zero
//	  8  u32     N, number of clusters
//	 12  u32     V, number of shared strings (ids 0..V-1): keys and values, unique
//	 16  u32     S, number of strings: V, plus N cluster names (ids V..V+N-1) if bit 0
//	 20  u32     B, bytes of string data
//	 24  u16     L, label columns
//	 26  u16     C, claim columns
//	 28  u16     R, resource columns
//	 30  u16     A, add-on score columns
//	 32  u32     total size of the message in bytes
//	 36  u8      W, width of a label/claim cell: 1 if V < 255, 2 if V < 65535, else 4
//	 37  [3]byte reserved (0)
//	string offsets     (S+1) × u32; string i is data[off[i]:off[i+1]], off[0]=0, off[S]=B
//	string data        B bytes (UTF-8)
//	label keys         L × u32 string id
//	claim keys         C × u32 string id
//	resource keys      R × (u8 kind: 0 Allocatable, 1 Capacity; u8 cell width 4 or 8;
//	                        u16 reserved 0; u32 name string id)
//	add-on score keys  A × (u32 resourceName string id; u32 scoreName string id)
//	label columns      L × N cells of W bytes (unsigned string id), column-major
//	claim columns      C × N cells of W bytes
//	resource column j  N cells of width_j bytes (signed milli-units), one section each
//	add-on columns     A × N cells of 4 bytes (signed score), column-major
//	decision counts    only with flag bit 1: (1+N) × u32: M, then one count per
//	                   cluster (see below)
//	selection          only with flag bit 2: N bytes, 1 when the cluster is selected
//
// An absent label or claim is the all-ones id of width W (0xFF, 0xFFFF or
// 0xFFFFFFFF); an absent number is the minimum integer of its width. The host
// picks width 4 for a resource column when every present value fits in int32
// above that minimum, 8 otherwise; add-on scores are int32 as in OCM.
//
// Shared strings are unique, so two cells hold the same value exactly when they
// hold the same id: a plugin can resolve a wanted value to an id once (StringID)
// and compare integers per cluster. Columns follow the plugin's declaration order.
//
// The last two sections describe the placement being scheduled rather than the
// clusters, and are sent only to plugins that declare them (PrioritizerInputs
// Decisions, Selected): a version-1 input without flag bits 1 and 2 is laid out
// exactly as before they existed. A decision count is the number of decisions of
// the other placements (all namespaces) that name the cluster; M is the largest
// count of any cluster, candidate or not (OCM's Balance normalises by it; see
// MaxDecisionSource), never below the candidates' counts. Counts saturate at 2^32-1. A selection byte is 1
// when the placement's current decisions name the cluster, 0 otherwise; readers
// take any non-zero byte as 1.
//
// The answer carries one score per cluster, in input order, either as N
// little-endian int64 (8·N bytes) or, when every score is already within
// [MinClusterScore, MaxClusterScore], as N int8 (N bytes); the host tells the two
// apart by length. The Go SDK clamps and sends the compact form: it is 8 times
// fewer host calls than int64.

// ScoreMagic opens every score input.
const ScoreMagic = "FLPS"

// ScoreHeaderSize is the size of the score input header.
const ScoreHeaderSize = 40

const (
	// NoString is what StringColumn.ID returns for an absent label or claim,
	// whatever the cell width on the wire.
	NoString uint32 = math.MaxUint32
	// NoValue marks an absent resource or add-on score on the wire (8-byte cells)
	// and is never a present value: the host saturates values to
	// [math.MinInt64+1, math.MaxInt64].
	NoValue int64 = math.MinInt64
)

const (
	flagClusterNames = 1 << 0
	flagDecisions    = 1 << 1
	flagSelected     = 1 << 2
	knownFlags       = flagClusterNames | flagDecisions | flagSelected
)

// MaxScoreClusters bounds N so every offset fits in 32 bits.
const MaxScoreClusters = 1 << 22

// ClusterSource is the host's typed view of the candidate clusters of one
// scheduling cycle. Placement implements it over ManagedClusters and
// AddOnPlacementScores; tests use ClusterList.
type ClusterSource interface {
	Len() int
	Name(i int) string
	Label(i int, key string) (string, bool)
	Claim(i int, name string) (string, bool)
	// Resource returns the quantity in milli-units.
	Resource(i int, kind ResourceKind, name string) (int64, bool)
	// AddOnScore returns an AddOnPlacementScore value (int32 in the API).
	AddOnScore(i int, resourceName, scoreName string) (int64, bool)
}

// PlacementSource is implemented by a ClusterSource that also knows the placement
// being scheduled. The encoder needs it only for plugins that declare Decisions or
// Selected, and fails clearly when such a plugin meets a source without it.
type PlacementSource interface {
	// DecisionCount is the number of decisions of the other placements (all
	// namespaces; not this placement's own) that name cluster i. Never negative.
	DecisionCount(i int) int64
	// Selected reports whether this placement's current decisions name cluster i.
	Selected(i int) bool
}

// MaxDecisionSource may be implemented by a PlacementSource that knows the largest
// decision count of any cluster the other placements chose, candidate or not:
// OCM's Balance normalises by it, so the busiest cluster need not be a candidate.
// The encoder sends the larger of MaxDecisionCount and the candidates' counts as
// M; without this method, M is the candidates' largest count.
type MaxDecisionSource interface {
	MaxDecisionCount() int64
}

// ScoreEncoder builds score inputs. It keeps its scratch space between calls, so
// a long-lived encoder allocates little per cycle. Not safe for concurrent use.
type ScoreEncoder struct {
	ids    map[string]uint32
	offs   []uint32
	data   []byte
	strs   []uint32 // label and claim cells
	nums   []int64  // resource and add-on cells
	recent [4]struct {
		s  string
		id uint32
	}
}

// EncodeScoreInput is a convenience wrapper around a fresh ScoreEncoder.
func EncodeScoreInput(dst []byte, decl *PrioritizerInputs, src ClusterSource) ([]byte, error) {
	var e ScoreEncoder
	return e.Encode(dst, decl, src)
}

func (e *ScoreEncoder) intern(s string) uint32 {
	if id, ok := e.ids[s]; ok {
		return id
	}
	id := uint32(len(e.offs) - 1)
	e.data = append(e.data, s...)
	e.offs = append(e.offs, uint32(len(e.data)))
	e.ids[s] = id
	return id
}

// internCell interns a cell value, checking a few recent values first: label and
// claim columns usually repeat a handful of values, and a string compare is
// cheaper than hashing.
func (e *ScoreEncoder) internCell(s string) uint32 {
	for i := range e.recent {
		if r := &e.recent[i]; r.id != NoString && r.s == s {
			return r.id
		}
	}
	id := e.intern(s)
	copy(e.recent[1:], e.recent[:len(e.recent)-1])
	e.recent[0].s, e.recent[0].id = s, id
	return id
}

func (e *ScoreEncoder) resetRecent() {
	for i := range e.recent {
		e.recent[i].s, e.recent[i].id = "", NoString
	}
}

// Encode appends the score input for the declared attributes of src to dst.
func (e *ScoreEncoder) Encode(dst []byte, decl *PrioritizerInputs, src ClusterSource) ([]byte, error) {
	if err := decl.Validate(); err != nil {
		return dst, err
	}
	var place PlacementSource
	if decl.Decisions || decl.Selected {
		var ok bool
		if place, ok = src.(PlacementSource); !ok {
			return dst, errors.New("score input: the prioritizer declares " + placementInputs(decl) + ", but the cluster source does not implement abi.PlacementSource")
		}
	}
	n := src.Len()
	if n < 0 || n > MaxScoreClusters {
		return dst, errors.New("score input: " + strconv.Itoa(n) + " clusters, at most " + strconv.Itoa(MaxScoreClusters) + " supported")
	}
	if e.ids == nil {
		e.ids = make(map[string]uint32, 64)
	} else {
		clear(e.ids)
	}
	e.offs = append(e.offs[:0], 0)
	e.data = e.data[:0]
	L, C, R, A := len(decl.Labels), len(decl.Claims), len(decl.Resources), len(decl.AddOnScores)

	keys := make([]uint32, 0, L+C+2*A)
	for _, k := range decl.Labels {
		keys = append(keys, e.intern(k))
	}
	for _, k := range decl.Claims {
		keys = append(keys, e.intern(k))
	}
	resNames := make([]uint32, R)
	for j, r := range decl.Resources {
		resNames[j] = e.intern(r.Name)
	}
	for _, a := range decl.AddOnScores {
		keys = append(keys, e.intern(a.ResourceName), e.intern(a.ScoreName))
	}

	e.strs = grow(e.strs, (L+C)*n)
	for j, k := range decl.Labels {
		e.resetRecent()
		col := e.strs[j*n : (j+1)*n]
		for i := range col {
			col[i] = NoString
			if v, ok := src.Label(i, k); ok {
				col[i] = e.internCell(v)
			}
		}
	}
	for j, k := range decl.Claims {
		e.resetRecent()
		col := e.strs[(L+j)*n : (L+j+1)*n]
		for i := range col {
			col[i] = NoString
			if v, ok := src.Claim(i, k); ok {
				col[i] = e.internCell(v)
			}
		}
	}
	e.nums = grow(e.nums, (R+A)*n)
	widths := make([]uint64, R)
	for j, r := range decl.Resources {
		col := e.nums[j*n : (j+1)*n]
		widths[j] = 4
		for i := range col {
			col[i] = NoValue
			if v, ok := src.Resource(i, r.Kind, r.Name); ok {
				v = present(v)
				col[i] = v
				if v <= math.MinInt32 || v > math.MaxInt32 {
					widths[j] = 8
				}
			}
		}
	}
	for j, a := range decl.AddOnScores {
		col := e.nums[(R+j)*n : (R+j+1)*n]
		for i := range col {
			col[i] = NoValue
			if v, ok := src.AddOnScore(i, a.ResourceName, a.ScoreName); ok {
				// AddOnPlacementScore values are int32; saturate anything else.
				col[i] = min(max(v, math.MinInt32+1), math.MaxInt32)
			}
		}
	}
	V := len(e.offs) - 1
	flags := uint16(0)
	if decl.ClusterNames {
		flags |= flagClusterNames
		for i := 0; i < n; i++ {
			e.data = append(e.data, src.Name(i)...)
			e.offs = append(e.offs, uint32(len(e.data)))
		}
	}
	S := len(e.offs) - 1
	w := idWidth(V)

	if decl.Decisions {
		flags |= flagDecisions
	}
	if decl.Selected {
		flags |= flagSelected
	}
	lay := scoreLayout(uint64(n), uint64(S), uint64(len(e.data)), uint64(L), uint64(C), uint64(A), w, widths, flags)
	if lay.total > math.MaxUint32 || uint64(len(e.data)) > math.MaxUint32 {
		return dst, errors.New("score input: message of " + strconv.FormatUint(lay.total, 10) + " bytes exceeds 4 GiB")
	}
	base := len(dst)
	dst = append(dst, make([]byte, lay.total)...)
	b := dst[base:]
	copy(b, ScoreMagic)
	putU16(b[4:], PrioritizerInputVersion)
	putU16(b[6:], flags)
	putU32(b[8:], uint32(n))
	putU32(b[12:], uint32(V))
	putU32(b[16:], uint32(S))
	putU32(b[20:], uint32(len(e.data)))
	putU16(b[24:], uint16(L))
	putU16(b[26:], uint16(C))
	putU16(b[28:], uint16(R))
	putU16(b[30:], uint16(A))
	putU32(b[32:], uint32(lay.total))
	b[36] = byte(w)
	for i, o := range e.offs {
		putU32(b[lay.offs+4*uint64(i):], o)
	}
	copy(b[lay.data:], e.data)
	k := 0
	for i := 0; i < L; i++ {
		putU32(b[lay.labelKeys+4*uint64(i):], keys[k])
		k++
	}
	for i := 0; i < C; i++ {
		putU32(b[lay.claimKeys+4*uint64(i):], keys[k])
		k++
	}
	for j, r := range decl.Resources {
		o := lay.resourceKeys + 8*uint64(j)
		if r.Kind == ResourceCapacity {
			b[o] = 1
		}
		b[o+1] = byte(widths[j])
		putU32(b[o+4:], resNames[j])
	}
	for i := 0; i < 2*A; i++ {
		putU32(b[lay.addOnKeys+4*uint64(i):], keys[k])
		k++
	}
	putIDs(b[lay.labelCols:], e.strs[:L*n], w)
	putIDs(b[lay.claimCols:], e.strs[L*n:(L+C)*n], w)
	for j := range decl.Resources {
		putInts(b[lay.resourceCols[j]:], e.nums[j*n:(j+1)*n], widths[j])
	}
	putInts(b[lay.addOnCols:], e.nums[R*n:(R+A)*n], 4)
	if decl.Decisions {
		top := uint32(0)
		for i := 0; i < n; i++ {
			v := place.DecisionCount(i)
			if v < 0 {
				return dst[:base], errors.New("score input: decision count of cluster " + strconv.Itoa(i) + " (" + src.Name(i) + ") is " + strconv.FormatInt(v, 10) + ", want ≥ 0")
			}
			c := saturateCount(v)
			putU32(b[lay.decisions+4*uint64(1+i):], c)
			top = max(top, c)
		}
		if m, ok := src.(MaxDecisionSource); ok {
			top = max(top, saturateCount(m.MaxDecisionCount()))
		}
		putU32(b[lay.decisions:], top)
	}
	if decl.Selected {
		sel := b[lay.selected : lay.selected+uint64(n)]
		for i := range sel {
			if place.Selected(i) {
				sel[i] = 1
			}
		}
	}
	return dst, nil
}

// saturateCount is a decision count as sent: negative values (only from
// MaxDecisionCount, where they change nothing) read 0, large ones 2^32-1.
func saturateCount(v int64) uint32 { return uint32(min(max(v, 0), math.MaxUint32)) }

func placementInputs(decl *PrioritizerInputs) string {
	switch {
	case decl.Decisions && decl.Selected:
		return "decisions and selected"
	case decl.Decisions:
		return "decisions"
	}
	return "selected"
}

// idWidth is the narrowest cell that holds ids 0..v-1 plus the all-ones marker.
func idWidth(v int) uint64 {
	switch {
	case v < 0xFF:
		return 1
	case v < 0xFFFF:
		return 2
	}
	return 4
}

func putIDs(b []byte, ids []uint32, w uint64) {
	switch w {
	case 1:
		for i, id := range ids {
			b[i] = byte(id) // NoString becomes 0xFF
		}
	case 2:
		for i, id := range ids {
			putU16(b[2*i:], uint16(id))
		}
	default:
		for i, id := range ids {
			putU32(b[4*i:], id)
		}
	}
}

func putInts(b []byte, vals []int64, w uint64) {
	if w == 4 {
		for i, v := range vals {
			if v == NoValue {
				v = math.MinInt32
			}
			putU32(b[4*i:], uint32(int32(v)))
		}
		return
	}
	for i, v := range vals {
		putU64(b[8*i:], uint64(v))
	}
}

// present keeps a real value from colliding with the NoValue marker.
func present(v int64) int64 {
	if v == NoValue {
		return NoValue + 1
	}
	return v
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// layout holds the section offsets of a score input.
type layout struct {
	offs, data, labelKeys, claimKeys, resourceKeys, addOnKeys uint64
	labelCols, claimCols, addOnCols, total                    uint64
	resourceCols                                              []uint64
	decisions, selected                                       uint64 // sections of flag bits 1 and 2
}

func scoreLayout(n, s, b, l, c, a, w uint64, widths []uint64, flags uint16) layout {
	var lay layout
	off := uint64(ScoreHeaderSize)
	next := func(size uint64) uint64 {
		start := off
		off = align8(off + size)
		return start
	}
	lay.offs = next(4 * (s + 1))
	lay.data = next(b)
	lay.labelKeys = next(4 * l)
	lay.claimKeys = next(4 * c)
	lay.resourceKeys = next(8 * uint64(len(widths)))
	lay.addOnKeys = next(8 * a)
	lay.labelCols = next(w * l * n)
	lay.claimCols = next(w * c * n)
	lay.resourceCols = make([]uint64, len(widths))
	for j, rw := range widths {
		lay.resourceCols[j] = next(rw * n)
	}
	lay.addOnCols = next(4 * a * n)
	if flags&flagDecisions != 0 {
		lay.decisions = next(4 * (1 + n))
	}
	if flags&flagSelected != 0 {
		lay.selected = next(n)
	}
	lay.total = off
	return lay
}

// ScoreInput is a read-only view of a decoded score input. It aliases the bytes it
// was decoded from, except the string data, which it copies once.
type ScoreInput struct {
	b          []byte
	lay        layout
	w          uint64
	names      bool
	decisions  bool
	selected   bool
	n, v, s    int
	l, c, r, a int
	strs       string
}

// DecodeScoreInput validates the structure of b (header, sizes, string table,
// keys) and returns a view of it. Cells are not checked one by one — in a guest
// that pass would cost more than the scoring — so a cell holding an id out of
// range reads as absent; no accessor can fail or panic on a decoded input.
func DecodeScoreInput(b []byte) (*ScoreInput, error) {
	if len(b) < ScoreHeaderSize {
		return nil, errors.New("score input: " + strconv.Itoa(len(b)) + " bytes, shorter than the " + strconv.Itoa(ScoreHeaderSize) + "-byte header")
	}
	if string(b[:4]) != ScoreMagic {
		return nil, errors.New("score input: magic " + strconv.Quote(string(b[:4])) + ", want " + strconv.Quote(ScoreMagic))
	}
	if v := u16(b[4:]); v != PrioritizerInputVersion {
		return nil, errors.New("score input: version " + strconv.Itoa(int(v)) + " is not supported (this SDK reads version " + strconv.Itoa(PrioritizerInputVersion) + ")")
	}
	flags := u16(b[6:])
	if flags&^knownFlags != 0 {
		return nil, errors.New("score input: unknown flags 0x" + strconv.FormatUint(uint64(flags), 16))
	}
	in := &ScoreInput{
		b: b,
		n: int(u32(b[8:])), v: int(u32(b[12:])), s: int(u32(b[16:])),
		l: int(u16(b[24:])), c: int(u16(b[26:])), r: int(u16(b[28:])), a: int(u16(b[30:])),
		w: uint64(b[36]), names: flags&flagClusterNames != 0,
		decisions: flags&flagDecisions != 0, selected: flags&flagSelected != 0,
	}
	if in.n > MaxScoreClusters {
		return nil, errors.New("score input: cluster count " + strconv.Itoa(in.n) + " exceeds " + strconv.Itoa(MaxScoreClusters))
	}
	wantS := uint64(in.v)
	if flags&flagClusterNames != 0 {
		wantS += uint64(in.n)
	}
	if uint64(in.s) != wantS {
		return nil, errors.New("score input: string count " + strconv.Itoa(in.s) + " does not match shared strings (" + strconv.Itoa(in.v) + ") plus cluster names")
	}
	if in.w != idWidth(in.v) {
		return nil, errors.New("score input: id width " + strconv.FormatUint(in.w, 10) + " does not suit " + strconv.Itoa(in.v) + " shared strings (want " + strconv.FormatUint(idWidth(in.v), 10) + ")")
	}
	// Resource widths live in the keys, which sit at a fixed place before any column.
	nbytes := uint64(u32(b[20:]))
	keysAt := scoreLayout(0, uint64(in.s), nbytes, uint64(in.l), uint64(in.c), 0, 0, make([]uint64, in.r), 0)
	if keysAt.resourceKeys+8*uint64(in.r) > uint64(len(b)) {
		return nil, errors.New("score input: " + strconv.Itoa(len(b)) + " bytes, too short for its string table and keys")
	}
	widths := make([]uint64, in.r)
	for j := range widths {
		o := keysAt.resourceKeys + 8*uint64(j)
		if b[o] > 1 {
			return nil, errors.New("score input: resource keys[" + strconv.Itoa(j) + "]: kind " + strconv.Itoa(int(b[o])) + " is not 0 (Allocatable) or 1 (Capacity)")
		}
		if widths[j] = uint64(b[o+1]); widths[j] != 4 && widths[j] != 8 {
			return nil, errors.New("score input: resource keys[" + strconv.Itoa(j) + "]: cell width " + strconv.FormatUint(widths[j], 10) + " is not 4 or 8")
		}
	}
	in.lay = scoreLayout(uint64(in.n), uint64(in.s), nbytes, uint64(in.l), uint64(in.c), uint64(in.a), in.w, widths, flags)
	if total := uint64(u32(b[32:])); total != in.lay.total {
		return nil, errors.New("score input: header total size " + strconv.FormatUint(total, 10) + " does not match the layout's " + strconv.FormatUint(in.lay.total, 10))
	}
	if uint64(len(b)) != in.lay.total {
		return nil, errors.New("score input: " + strconv.Itoa(len(b)) + " bytes, header describes " + strconv.FormatUint(in.lay.total, 10))
	}
	// String offsets: start at 0, never decrease, end at B.
	prev := uint32(0)
	for i := 0; i <= in.s; i++ {
		o := u32(b[in.lay.offs+4*uint64(i):])
		if (i == 0 && o != 0) || o < prev || uint64(o) > nbytes || (i == in.s && uint64(o) != nbytes) {
			return nil, errors.New("score input: string offsets[" + strconv.Itoa(i) + "] = " + strconv.FormatUint(uint64(o), 10) + " is out of order or out of range")
		}
		prev = o
	}
	in.strs = string(b[in.lay.data : in.lay.data+nbytes])
	checkKeys := func(section string, start uint64, count, stride int) error {
		for i := 0; i < count*stride; i++ {
			if id := u32(b[start+4*uint64(i):]); int(id) >= in.v {
				return errors.New("score input: " + section + "[" + strconv.Itoa(i/stride) + "]: string id " + strconv.FormatUint(uint64(id), 10) + " out of range")
			}
		}
		return nil
	}
	if err := checkKeys("label keys", in.lay.labelKeys, in.l, 1); err != nil {
		return nil, err
	}
	if err := checkKeys("claim keys", in.lay.claimKeys, in.c, 1); err != nil {
		return nil, err
	}
	for j := 0; j < in.r; j++ {
		if err := checkKeys("resource keys", in.lay.resourceKeys+8*uint64(j)+4, 1, 1); err != nil {
			return nil, errors.New(err.Error() + " (resource " + strconv.Itoa(j) + ")")
		}
	}
	if err := checkKeys("add-on score keys", in.lay.addOnKeys, in.a, 2); err != nil {
		return nil, err
	}
	return in, nil
}

// Len is the number of clusters.
func (in *ScoreInput) Len() int { return in.n }

// String returns string id; callers pass ids read from this input.
func (in *ScoreInput) String(id uint32) string {
	o := in.lay.offs + 4*uint64(id)
	return in.strs[u32(in.b[o:]):u32(in.b[o+4:])]
}

// StringID finds a shared string (a key or a label/claim value). A value that is
// absent here is carried by no cluster.
func (in *ScoreInput) StringID(s string) (uint32, bool) {
	for id := 0; id < in.v; id++ {
		if in.String(uint32(id)) == s {
			return uint32(id), true
		}
	}
	return NoString, false
}

// HasNames reports whether cluster names were sent (PrioritizerInputs.ClusterNames).
func (in *ScoreInput) HasNames() bool { return in.names }

// Name returns the name of cluster i, or "" when names were not declared.
func (in *ScoreInput) Name(i int) string {
	if !in.HasNames() {
		return ""
	}
	return in.String(uint32(in.v + i))
}

// Labels returns the label keys in column order.
func (in *ScoreInput) Labels() []string { return in.keyStrings(in.lay.labelKeys, in.l) }

// Claims returns the claim names in column order.
func (in *ScoreInput) Claims() []string { return in.keyStrings(in.lay.claimKeys, in.c) }

// Resources returns the resource keys in column order.
func (in *ScoreInput) Resources() []ResourceInput {
	out := make([]ResourceInput, in.r)
	for i := range out {
		out[i] = in.resourceKey(i)
	}
	return out
}

// AddOnScores returns the add-on score keys in column order.
func (in *ScoreInput) AddOnScores() []AddOnScoreInput {
	out := make([]AddOnScoreInput, in.a)
	for i := range out {
		o := in.lay.addOnKeys + 8*uint64(i)
		out[i] = AddOnScoreInput{ResourceName: in.String(u32(in.b[o:])), ScoreName: in.String(u32(in.b[o+4:]))}
	}
	return out
}

func (in *ScoreInput) keyStrings(start uint64, count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = in.String(u32(in.b[start+4*uint64(i):]))
	}
	return out
}

func (in *ScoreInput) resourceKey(i int) ResourceInput {
	o := in.lay.resourceKeys + 8*uint64(i)
	kind := ResourceAllocatable
	if in.b[o] == 1 {
		kind = ResourceCapacity
	}
	return ResourceInput{Kind: kind, Name: in.String(u32(in.b[o+4:]))}
}

// StringColumn is one label or claim column. The zero value (a column that was not
// sent) reports every cluster as absent.
type StringColumn struct {
	in    *ScoreInput
	w     uint64
	v     uint32 // ids at or above v read as absent
	cells []byte
}

func (in *ScoreInput) stringColumn(section uint64, j int) StringColumn {
	o := section + in.w*uint64(j*in.n)
	return StringColumn{in: in, w: in.w, v: uint32(in.v), cells: in.b[o : o+in.w*uint64(in.n)]}
}

// Present reports whether the column was sent.
func (c StringColumn) Present() bool { return c.in != nil }

// ID returns the string id of cluster i's value, or NoString.
func (c StringColumn) ID(i int) uint32 {
	var id uint32
	switch c.w {
	case 1:
		id = uint32(c.cells[i])
	case 2:
		id = uint32(u16(c.cells[2*i:]))
	case 4:
		id = u32(c.cells[4*i:])
	default:
		return NoString
	}
	if id >= c.v {
		return NoString // the absent marker, or an id out of range
	}
	return id
}

// IDs returns the id of every cluster's value (NoString when absent), reusing
// dst when it is large enough. Loops over the result run much faster in a Go
// guest than a call to ID per cluster.
func (c StringColumn) IDs(dst []uint32) []uint32 {
	dst = grow(dst, len(c.cells)/max(int(c.w), 1))
	if c.in == nil {
		return dst[:0]
	}
	v := c.v
	switch c.w {
	case 1:
		for i, b := range c.cells {
			id := uint32(b)
			if id >= v {
				id = NoString
			}
			dst[i] = id
		}
	case 2:
		for i := range dst {
			id := uint32(c.cells[2*i]) | uint32(c.cells[2*i+1])<<8
			if id >= v {
				id = NoString
			}
			dst[i] = id
		}
	default:
		for i := range dst {
			id := u32(c.cells[4*i:])
			if id >= v {
				id = NoString
			}
			dst[i] = id
		}
	}
	return dst
}

// AddWhere adds delta to scores[i] for every cluster i whose value has string id
// id: the usual "label equals value" rule, done in one tight pass over the cells.
func (c StringColumn) AddWhere(id uint32, delta int64, scores []int64) {
	if c.in == nil || id >= c.v {
		return
	}
	scores = scores[:min(len(scores), len(c.cells)/int(c.w))]
	switch c.w {
	case 1:
		// Branch-free and unrolled: a Go guest pays for every branch and loop
		// iteration (wazero checks for termination at each), not for arithmetic.
		want := uint64(id)
		cells := c.cells[:len(scores)]
		i := 0
		for ; i+8 <= len(cells); i += 8 {
			s, b := scores[i:i+8:i+8], cells[i:i+8:i+8]
			s[0] += delta & eqMask(uint64(b[0]), want)
			s[1] += delta & eqMask(uint64(b[1]), want)
			s[2] += delta & eqMask(uint64(b[2]), want)
			s[3] += delta & eqMask(uint64(b[3]), want)
			s[4] += delta & eqMask(uint64(b[4]), want)
			s[5] += delta & eqMask(uint64(b[5]), want)
			s[6] += delta & eqMask(uint64(b[6]), want)
			s[7] += delta & eqMask(uint64(b[7]), want)
		}
		for ; i < len(cells); i++ {
			scores[i] += delta & eqMask(uint64(cells[i]), want)
		}
	case 2:
		for i := range scores {
			if uint32(c.cells[2*i])|uint32(c.cells[2*i+1])<<8 == id {
				scores[i] += delta
			}
		}
	default:
		for i := range scores {
			if u32(c.cells[4*i:]) == id {
				scores[i] += delta
			}
		}
	}
}

// Get returns cluster i's value.
func (c StringColumn) Get(i int) (string, bool) {
	id := c.ID(i)
	if id == NoString {
		return "", false
	}
	return c.in.String(id), true
}

// IntColumn is one resource or add-on score column. The zero value reports every
// cluster as absent.
type IntColumn struct {
	w     uint64
	cells []byte
}

// Present reports whether the column was sent.
func (c IntColumn) Present() bool { return c.cells != nil }

// Get returns cluster i's value.
func (c IntColumn) Get(i int) (int64, bool) {
	switch c.w {
	case 4:
		if v := int32(u32(c.cells[4*i:])); v != math.MinInt32 {
			return int64(v), true
		}
	case 8:
		if v := int64(u64(c.cells[8*i:])); v != NoValue {
			return v, true
		}
	}
	return 0, false
}

// eqMask is all ones when a == b, else zero (for a, b < 2^63), without a branch.
func eqMask(a, b uint64) int64 { return -int64(((a ^ b) - 1) >> 63) }

// Values returns every cluster's value (NoValue when absent), reusing dst when
// it is large enough.
func (c IntColumn) Values(dst []int64) []int64 {
	if c.w != 4 && c.w != 8 {
		return dst[:0]
	}
	dst = grow(dst, len(c.cells)/int(c.w))
	if c.w == 4 {
		for i := range dst {
			v := int64(int32(u32(c.cells[4*i:])))
			if v == math.MinInt32 {
				v = NoValue
			}
			dst[i] = v
		}
		return dst
	}
	for i := range dst {
		dst[i] = int64(u64(c.cells[8*i:]))
	}
	return dst
}

// LabelColumn returns the column of label key, if it was sent.
func (in *ScoreInput) LabelColumn(key string) StringColumn {
	for j := 0; j < in.l; j++ {
		if in.String(u32(in.b[in.lay.labelKeys+4*uint64(j):])) == key {
			return in.stringColumn(in.lay.labelCols, j)
		}
	}
	return StringColumn{}
}

// ClaimColumn returns the column of claim name, if it was sent.
func (in *ScoreInput) ClaimColumn(name string) StringColumn {
	for j := 0; j < in.c; j++ {
		if in.String(u32(in.b[in.lay.claimKeys+4*uint64(j):])) == name {
			return in.stringColumn(in.lay.claimCols, j)
		}
	}
	return StringColumn{}
}

// ResourceColumn returns the column of a resource, if it was sent.
func (in *ScoreInput) ResourceColumn(kind ResourceKind, name string) IntColumn {
	for j := 0; j < in.r; j++ {
		if k := in.resourceKey(j); k.Kind == kind && k.Name == name {
			w := uint64(in.b[in.lay.resourceKeys+8*uint64(j)+1])
			o := in.lay.resourceCols[j]
			return IntColumn{w: w, cells: in.b[o : o+w*uint64(in.n)]}
		}
	}
	return IntColumn{}
}

// AddOnScoreColumn returns the column of an add-on score, if it was sent.
func (in *ScoreInput) AddOnScoreColumn(resourceName, scoreName string) IntColumn {
	for j := 0; j < in.a; j++ {
		o := in.lay.addOnKeys + 8*uint64(j)
		if in.String(u32(in.b[o:])) == resourceName && in.String(u32(in.b[o+4:])) == scoreName {
			c := in.lay.addOnCols + 4*uint64(j*in.n)
			return IntColumn{w: 4, cells: in.b[c : c+4*uint64(in.n)]}
		}
	}
	return IntColumn{}
}

// HasDecisions reports whether decision counts were sent (PrioritizerInputs.Decisions).
func (in *ScoreInput) HasDecisions() bool { return in.decisions }

// MaxDecisionCount returns the largest decision count of any cluster, candidate or
// not (never below DecisionCount(i) of a host-built input), or 0 when decision
// counts were not sent.
func (in *ScoreInput) MaxDecisionCount() int64 {
	if !in.decisions {
		return 0
	}
	return int64(u32(in.b[in.lay.decisions:]))
}

// DecisionCount returns the number of the other placements' decisions naming
// cluster i, or 0 when decision counts were not sent.
func (in *ScoreInput) DecisionCount(i int) int64 {
	if !in.decisions {
		return 0
	}
	return int64(u32(in.b[in.lay.decisions+4*uint64(1+i):]))
}

// DecisionCounts returns every cluster's decision count, reusing dst when it is
// large enough; empty when decision counts were not sent.
func (in *ScoreInput) DecisionCounts(dst []int64) []int64 {
	if !in.decisions {
		return dst[:0]
	}
	dst = grow(dst, in.n)
	cells := in.b[in.lay.decisions+4 : in.lay.decisions+4+4*uint64(in.n)]
	for i := range dst {
		dst[i] = int64(u32(cells[4*i:]))
	}
	return dst
}

// HasSelection reports whether the selection was sent (PrioritizerInputs.Selected).
func (in *ScoreInput) HasSelection() bool { return in.selected }

// Selected reports whether the placement's current decisions name cluster i
// (false when the selection was not sent).
func (in *ScoreInput) Selected(i int) bool {
	return in.selected && in.b[in.lay.selected+uint64(i)] != 0
}

// Selection returns every cluster's Selected, reusing dst when it is large
// enough; empty when the selection was not sent.
func (in *ScoreInput) Selection(dst []bool) []bool {
	if !in.selected {
		return dst[:0]
	}
	dst = grow(dst, in.n)
	cells := in.b[in.lay.selected : in.lay.selected+uint64(in.n)]
	for i, c := range cells {
		dst[i] = c != 0
	}
	return dst
}

// CheckDeclared verifies that the input carries exactly the columns of decl, in
// order, so a plugin can trust its declaration.
func (in *ScoreInput) CheckDeclared(decl *PrioritizerInputs) error {
	if decl.ClusterNames != in.HasNames() {
		return errors.New("score input: cluster names sent=" + strconv.FormatBool(in.HasNames()) + ", declared=" + strconv.FormatBool(decl.ClusterNames))
	}
	if decl.Decisions != in.HasDecisions() {
		return errors.New("score input: decision counts sent=" + strconv.FormatBool(in.HasDecisions()) + ", declared=" + strconv.FormatBool(decl.Decisions))
	}
	if decl.Selected != in.HasSelection() {
		return errors.New("score input: selection sent=" + strconv.FormatBool(in.HasSelection()) + ", declared=" + strconv.FormatBool(decl.Selected))
	}
	if got := in.Labels(); !equalStrings(got, decl.Labels) {
		return errors.New("score input: label columns " + quoteList(got) + " differ from the declared " + quoteList(decl.Labels))
	}
	if got := in.Claims(); !equalStrings(got, decl.Claims) {
		return errors.New("score input: claim columns " + quoteList(got) + " differ from the declared " + quoteList(decl.Claims))
	}
	if in.r != len(decl.Resources) {
		return errors.New("score input: " + strconv.Itoa(in.r) + " resource columns, " + strconv.Itoa(len(decl.Resources)) + " declared")
	}
	for i, r := range decl.Resources {
		if got := in.resourceKey(i); got != r {
			return errors.New("score input: resource column " + strconv.Itoa(i) + " is " + string(got.Kind) + "/" + got.Name + ", declared " + string(r.Kind) + "/" + r.Name)
		}
	}
	if in.a != len(decl.AddOnScores) {
		return errors.New("score input: " + strconv.Itoa(in.a) + " add-on score columns, " + strconv.Itoa(len(decl.AddOnScores)) + " declared")
	}
	for i, a := range in.AddOnScores() {
		if a != decl.AddOnScores[i] {
			return errors.New("score input: add-on score column " + strconv.Itoa(i) + " is " + a.ResourceName + "/" + a.ScoreName + ", declared " + decl.AddOnScores[i].ResourceName + "/" + decl.AddOnScores[i].ScoreName)
		}
	}
	return nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func quoteList(s []string) string {
	out := "["
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += strconv.Quote(v)
	}
	return out + "]"
}

// AppendScores encodes scores as an int64 answer (the canonical form).
func AppendScores(dst []byte, scores []int64) []byte {
	base := len(dst)
	dst = append(dst, make([]byte, 8*len(scores))...)
	for i, s := range scores {
		putU64(dst[base+8*i:], uint64(s))
	}
	return dst
}

// AppendCompactScores clamps scores and encodes them as an int8 answer.
func AppendCompactScores(dst []byte, scores []int64) []byte {
	base := len(dst)
	dst = append(dst, make([]byte, len(scores))...)
	out := dst[base:]
	for i, s := range scores {
		out[i] = byte(int8(min(max(s, MinClusterScore), MaxClusterScore)))
	}
	return dst
}

// DecodeScores decodes a score answer for n clusters into dst (reused if large
// enough), clamping each score to [MinClusterScore, MaxClusterScore]. The answer
// is n int64 or n int8 (see the layout above).
func DecodeScores(out []byte, n int, dst []int64) ([]int64, error) {
	dst = grow(dst, n)
	switch len(out) {
	case 8 * n:
		for i := range dst {
			dst[i] = ClampScore(int64(u64(out[8*i:])))
		}
	case n:
		for i := range dst {
			s := int64(int8(out[i]))
			if s != ClampScore(s) {
				return nil, errors.New("score output: compact score of cluster " + strconv.Itoa(i) + " is " + strconv.FormatInt(s, 10) + ", outside [-100, 100]")
			}
			dst[i] = s
		}
	default:
		return nil, errors.New("score output: " + strconv.Itoa(len(out)) + " bytes, want " + strconv.Itoa(8*n) + " (an int64 for each of " + strconv.Itoa(n) + " clusters) or " + strconv.Itoa(n) + " (an int8 each)")
	}
	return dst, nil
}

// ClampScore bounds a score to [MinClusterScore, MaxClusterScore].
func ClampScore(s int64) int64 {
	return min(max(s, MinClusterScore), MaxClusterScore)
}
