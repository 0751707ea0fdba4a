package abi

import (
	"errors"
	"math"
	"strconv"
)

// Score input layout, version 1 (all integers little-endian).
//
// A 40-byte header is followed by sections in the order below. Every section starts
// at an offset that is a multiple of 8; padding bytes are zero.
//
//	header
//	  0  [4]byte magic "FLPS"
//	  4  u16     version (1)
//	  6  u16     flags: bit 0 = cluster names present; other bits zero
//	  8  u32     N, number of clusters
//	 12  u32     V, number of shared strings (ids 0..V-1): keys and values, unique
//	 16  u32     S, number of strings: V, plus N cluster names (ids V..V+N-1) if bit 0
//	 20  u32     B, bytes of string data
//	 24  u16     L, label columns
//	 26  u16     C, claim columns
//	 28  u16     R, resource columns
//	 30  u16     A, add-on score columns
//	 32  u32     total size of the message in bytes
//	 36  u32     reserved (0)
//	string offsets     (S+1) × u32; string i is data[off[i]:off[i+1]], off[0]=0, off[S]=B
//	string data        B bytes (UTF-8)
//	label keys         L × u32 string id
//	claim keys         C × u32 string id
//	resource keys      R × (u32 kind: 0 Allocatable, 1 Capacity; u32 name string id)
//	add-on score keys  A × (u32 resourceName string id; u32 scoreName string id)
//	label columns      L × N × u32 string id, column-major; NoString = absent
//	claim columns      C × N × u32 string id, column-major; NoString = absent
//	resource columns   R × N × i64 milli-units, column-major; NoValue = absent
//	add-on columns     A × N × i64 score, column-major; NoValue = absent
//
// Shared strings are unique, so two cells hold the same value exactly when they
// hold the same id: a plugin can resolve a wanted value to an id once (StringID)
// and compare integers per cluster. Columns follow the plugin's declaration order.
//
// The answer is exactly N × 8 bytes: one little-endian int64 score per cluster, in
// input order.

// ScoreMagic opens every score input.
const ScoreMagic = "FLPS"

// ScoreHeaderSize is the size of the score input header.
const ScoreHeaderSize = 40

const (
	// NoString marks an absent label or claim.
	NoString uint32 = math.MaxUint32
	// NoValue marks an absent resource or add-on score. Present values are never
	// NoValue: the host saturates them to [math.MinInt64+1, math.MaxInt64].
	NoValue int64 = math.MinInt64
)

const flagClusterNames = 1

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
	AddOnScore(i int, resourceName, scoreName string) (int64, bool)
}

// ScoreEncoder builds score inputs. It keeps its scratch space between calls, so
// a long-lived encoder allocates little per cycle. Not safe for concurrent use.
type ScoreEncoder struct {
	ids  map[string]uint32
	offs []uint32
	data []byte
	strs []uint32 // label and claim cells
	nums []int64  // resource and add-on cells
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

// Encode appends the score input for the declared attributes of src to dst.
func (e *ScoreEncoder) Encode(dst []byte, decl *PrioritizerInputs, src ClusterSource) ([]byte, error) {
	if err := decl.Validate(); err != nil {
		return dst, err
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

	keys := make([]uint32, 0, L+C+2*R+2*A)
	for _, k := range decl.Labels {
		keys = append(keys, e.intern(k))
	}
	for _, k := range decl.Claims {
		keys = append(keys, e.intern(k))
	}
	for _, r := range decl.Resources {
		kind := uint32(0)
		if r.Kind == ResourceCapacity {
			kind = 1
		}
		keys = append(keys, kind, e.intern(r.Name))
	}
	for _, a := range decl.AddOnScores {
		keys = append(keys, e.intern(a.ResourceName), e.intern(a.ScoreName))
	}

	e.strs = grow(e.strs, (L+C)*n)
	for j, k := range decl.Labels {
		col := e.strs[j*n : (j+1)*n]
		for i := range col {
			col[i] = NoString
			if v, ok := src.Label(i, k); ok {
				col[i] = e.intern(v)
			}
		}
	}
	for j, k := range decl.Claims {
		col := e.strs[(L+j)*n : (L+j+1)*n]
		for i := range col {
			col[i] = NoString
			if v, ok := src.Claim(i, k); ok {
				col[i] = e.intern(v)
			}
		}
	}
	e.nums = grow(e.nums, (R+A)*n)
	for j, r := range decl.Resources {
		col := e.nums[j*n : (j+1)*n]
		for i := range col {
			col[i] = NoValue
			if v, ok := src.Resource(i, r.Kind, r.Name); ok {
				col[i] = present(v)
			}
		}
	}
	for j, a := range decl.AddOnScores {
		col := e.nums[(R+j)*n : (R+j+1)*n]
		for i := range col {
			col[i] = NoValue
			if v, ok := src.AddOnScore(i, a.ResourceName, a.ScoreName); ok {
				col[i] = present(v)
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

	lay := scoreLayout(uint64(n), uint64(S), uint64(len(e.data)), uint64(L), uint64(C), uint64(R), uint64(A))
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
	for i := 0; i < 2*R; i++ {
		putU32(b[lay.resourceKeys+4*uint64(i):], keys[k])
		k++
	}
	for i := 0; i < 2*A; i++ {
		putU32(b[lay.addOnKeys+4*uint64(i):], keys[k])
		k++
	}
	p := b[lay.labelCols:]
	for i, v := range e.strs[:L*n] {
		putU32(p[4*i:], v)
	}
	p = b[lay.claimCols:]
	for i, v := range e.strs[L*n : (L+C)*n] {
		putU32(p[4*i:], v)
	}
	p = b[lay.resourceCols:]
	for i, v := range e.nums[:(R+A)*n] {
		// Resource and add-on columns are adjacent (the former end 8-aligned).
		putU64(p[8*i:], uint64(v))
	}
	return dst, nil
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
	labelCols, claimCols, resourceCols, addOnCols, total      uint64
}

func scoreLayout(n, s, b, l, c, r, a uint64) layout {
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
	lay.resourceKeys = next(8 * r)
	lay.addOnKeys = next(8 * a)
	lay.labelCols = next(4 * l * n)
	lay.claimCols = next(4 * c * n)
	lay.resourceCols = next(8 * r * n)
	lay.addOnCols = next(8 * a * n)
	lay.total = off
	return lay
}

// ScoreInput is a read-only view of a decoded score input. It aliases the bytes it
// was decoded from, except the string data, which it copies once.
type ScoreInput struct {
	b          []byte
	lay        layout
	n, v, s    int
	l, c, r, a int
	strs       string
}

// DecodeScoreInput validates b and returns a view of it. Every id and offset is
// checked here, so the accessors cannot fail later.
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
	if flags&^flagClusterNames != 0 {
		return nil, errors.New("score input: unknown flags 0x" + strconv.FormatUint(uint64(flags), 16))
	}
	in := &ScoreInput{
		b: b,
		n: int(u32(b[8:])), v: int(u32(b[12:])), s: int(u32(b[16:])),
		l: int(u16(b[24:])), c: int(u16(b[26:])), r: int(u16(b[28:])), a: int(u16(b[30:])),
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
	nbytes := uint64(u32(b[20:]))
	in.lay = scoreLayout(uint64(in.n), uint64(in.s), nbytes, uint64(in.l), uint64(in.c), uint64(in.r), uint64(in.a))
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
	keyIDs := func(section string, start uint64, count int, stride int, kindFirst bool) error {
		for i := 0; i < count; i++ {
			for f := 0; f < stride; f++ {
				id := u32(b[start+4*uint64(i*stride+f):])
				if kindFirst && f == 0 {
					if id > 1 {
						return errors.New("score input: " + section + "[" + strconv.Itoa(i) + "]: kind " + strconv.FormatUint(uint64(id), 10) + " is not 0 (Allocatable) or 1 (Capacity)")
					}
					continue
				}
				if int(id) >= in.v {
					return errors.New("score input: " + section + "[" + strconv.Itoa(i) + "]: string id " + strconv.FormatUint(uint64(id), 10) + " out of range")
				}
			}
		}
		return nil
	}
	if err := keyIDs("label keys", in.lay.labelKeys, in.l, 1, false); err != nil {
		return nil, err
	}
	if err := keyIDs("claim keys", in.lay.claimKeys, in.c, 1, false); err != nil {
		return nil, err
	}
	if err := keyIDs("resource keys", in.lay.resourceKeys, in.r, 2, true); err != nil {
		return nil, err
	}
	if err := keyIDs("add-on score keys", in.lay.addOnKeys, in.a, 2, false); err != nil {
		return nil, err
	}
	cells := b[in.lay.labelCols : in.lay.labelCols+4*uint64((in.l+in.c)*in.n)]
	if in.lay.claimCols != in.lay.labelCols+4*uint64(in.l*in.n) {
		// Label columns end unaligned: check the two sections separately.
		cells = b[in.lay.labelCols : in.lay.labelCols+4*uint64(in.l*in.n)]
		if err := checkCells(cells, in.v, "label columns", in.n); err != nil {
			return nil, err
		}
		cells = b[in.lay.claimCols : in.lay.claimCols+4*uint64(in.c*in.n)]
		if err := checkCells(cells, in.v, "claim columns", in.n); err != nil {
			return nil, err
		}
	} else if err := checkCells(cells, in.v, "label/claim columns", in.n); err != nil {
		return nil, err
	}
	return in, nil
}

func checkCells(cells []byte, v int, section string, n int) error {
	for i := 0; i+4 <= len(cells); i += 4 {
		id := u32(cells[i:])
		if id != NoString && int(id) >= v {
			cell := i / 4
			return errors.New("score input: " + section + ": cell " + strconv.Itoa(cell) + " (cluster " + strconv.Itoa(cell%n) + "): string id " + strconv.FormatUint(uint64(id), 10) + " out of range")
		}
	}
	return nil
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
func (in *ScoreInput) HasNames() bool { return in.s > in.v }

// Name returns the name of cluster i, or "" when names were not declared.
func (in *ScoreInput) Name(i int) string {
	if !in.HasNames() {
		return ""
	}
	return in.String(uint32(in.v + i))
}

// Labels returns the label keys in column order.
func (in *ScoreInput) Labels() []string { return in.keyStrings(in.lay.labelKeys, in.l, 1, 0) }

// Claims returns the claim names in column order.
func (in *ScoreInput) Claims() []string { return in.keyStrings(in.lay.claimKeys, in.c, 1, 0) }

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

func (in *ScoreInput) keyStrings(start uint64, count, stride, field int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = in.String(u32(in.b[start+4*uint64(i*stride+field):]))
	}
	return out
}

func (in *ScoreInput) resourceKey(i int) ResourceInput {
	o := in.lay.resourceKeys + 8*uint64(i)
	kind := ResourceAllocatable
	if u32(in.b[o:]) == 1 {
		kind = ResourceCapacity
	}
	return ResourceInput{Kind: kind, Name: in.String(u32(in.b[o+4:]))}
}

// StringColumn is one label or claim column. The zero value (a column that was not
// sent) reports every cluster as absent.
type StringColumn struct {
	in    *ScoreInput
	cells []byte
}

// Present reports whether the column was sent.
func (c StringColumn) Present() bool { return c.in != nil }

// ID returns the string id of cluster i's value, or NoString.
func (c StringColumn) ID(i int) uint32 {
	if c.in == nil {
		return NoString
	}
	return u32(c.cells[4*i:])
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
	cells []byte
}

// Present reports whether the column was sent.
func (c IntColumn) Present() bool { return c.cells != nil }

// Get returns cluster i's value.
func (c IntColumn) Get(i int) (int64, bool) {
	if c.cells == nil {
		return 0, false
	}
	v := int64(u64(c.cells[8*i:]))
	return v, v != NoValue
}

// LabelColumn returns the column of label key, if it was sent.
func (in *ScoreInput) LabelColumn(key string) StringColumn {
	for j := 0; j < in.l; j++ {
		if in.String(u32(in.b[in.lay.labelKeys+4*uint64(j):])) == key {
			o := in.lay.labelCols + 4*uint64(j*in.n)
			return StringColumn{in: in, cells: in.b[o : o+4*uint64(in.n)]}
		}
	}
	return StringColumn{}
}

// ClaimColumn returns the column of claim name, if it was sent.
func (in *ScoreInput) ClaimColumn(name string) StringColumn {
	for j := 0; j < in.c; j++ {
		if in.String(u32(in.b[in.lay.claimKeys+4*uint64(j):])) == name {
			o := in.lay.claimCols + 4*uint64(j*in.n)
			return StringColumn{in: in, cells: in.b[o : o+4*uint64(in.n)]}
		}
	}
	return StringColumn{}
}

// ResourceColumn returns the column of a resource, if it was sent.
func (in *ScoreInput) ResourceColumn(kind ResourceKind, name string) IntColumn {
	for j := 0; j < in.r; j++ {
		if k := in.resourceKey(j); k.Kind == kind && k.Name == name {
			o := in.lay.resourceCols + 8*uint64(j*in.n)
			return IntColumn{cells: in.b[o : o+8*uint64(in.n)]}
		}
	}
	return IntColumn{}
}

// AddOnScoreColumn returns the column of an add-on score, if it was sent.
func (in *ScoreInput) AddOnScoreColumn(resourceName, scoreName string) IntColumn {
	for j := 0; j < in.a; j++ {
		o := in.lay.addOnKeys + 8*uint64(j)
		if in.String(u32(in.b[o:])) == resourceName && in.String(u32(in.b[o+4:])) == scoreName {
			c := in.lay.addOnCols + 8*uint64(j*in.n)
			return IntColumn{cells: in.b[c : c+8*uint64(in.n)]}
		}
	}
	return IntColumn{}
}

// CheckDeclared verifies that the input carries exactly the columns of decl, in
// order, so a plugin can trust its declaration.
func (in *ScoreInput) CheckDeclared(decl *PrioritizerInputs) error {
	if decl.ClusterNames != in.HasNames() {
		return errors.New("score input: cluster names sent=" + strconv.FormatBool(in.HasNames()) + ", declared=" + strconv.FormatBool(decl.ClusterNames))
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

// ScoreOutputSize is the size of a valid answer for n clusters.
func ScoreOutputSize(n int) int { return 8 * n }

// AppendScores encodes scores as the score answer.
func AppendScores(dst []byte, scores []int64) []byte {
	base := len(dst)
	dst = append(dst, make([]byte, 8*len(scores))...)
	for i, s := range scores {
		putU64(dst[base+8*i:], uint64(s))
	}
	return dst
}

// DecodeScores decodes a score answer for n clusters into dst (reused if large
// enough), clamping each score to [MinClusterScore, MaxClusterScore].
func DecodeScores(out []byte, n int, dst []int64) ([]int64, error) {
	if len(out) != 8*n {
		return nil, errors.New("score output: " + strconv.Itoa(len(out)) + " bytes, want " + strconv.Itoa(8*n) + " (one int64 for each of " + strconv.Itoa(n) + " clusters)")
	}
	dst = grow(dst, n)
	for i := range dst {
		dst[i] = ClampScore(int64(u64(out[8*i:])))
	}
	return dst, nil
}

// ClampScore bounds a score to [MinClusterScore, MaxClusterScore].
func ClampScore(s int64) int64 {
	return min(max(s, MinClusterScore), MaxClusterScore)
}
