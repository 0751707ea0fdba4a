package operator

import (
	"slices"
	"strings"
)

// Field is one leaf of the ClusterManager spec (lists as [], core/v1 subtrees whole) and
// what the operator does with it: the table clusterManagerFields, for README's list and the
// e2e spec that sets every field.
type Field struct {
	Path string
	// Acts says the operator changes the install for the field (some values of a field that
	// acts may still be refused, e.g. deployOption.mode Hosted); a field that does not act is
	// named in ValidConfiguration False UnsupportedFields whenever it is set.
	Acts bool
	// Does says what it changes, or why it is refused.
	Does string
}

// ClusterManagerFields lists every leaf of the ClusterManager spec, sorted by path.
func ClusterManagerFields() []Field {
	out := make([]Field, 0, len(clusterManagerFields))
	for p, r := range clusterManagerFields {
		acts := r.refuse == nil
		if !acts {
			// unless: some values act. A plain refusal refuses any value.
			refusedAny, _ := r.refuse(nil)
			acts = !refusedAny
		}
		out = append(out, Field{Path: p, Acts: acts, Does: r.does})
	}
	slices.SortFunc(out, func(a, b Field) int { return strings.Compare(a.Path, b.Path) })
	return out
}
