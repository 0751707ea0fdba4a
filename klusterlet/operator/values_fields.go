package operator

import (
	"slices"
	"strings"
)

// Field is one leaf of the Klusterlet spec (lists as [], core/v1 subtrees whole) and whether
// the operator acts on it (the table mappings) or refuses it (refusals: ValidConfiguration
// False UnsupportedFields names it when set, or Applied False UnsupportedConfiguration when
// blocking). For README's list and the e2e spec that sets every field.
type Field struct {
	Path     string
	Acts     bool
	Blocking bool
	// Does says what it changes, or what it asks for that Flotilla does not do.
	Does string
}

// KlusterletFields lists every leaf of the Klusterlet spec, sorted by path.
func KlusterletFields() []Field {
	var out []Field
	for _, m := range mappings {
		for _, l := range m.leaves {
			out = append(out, Field{Path: l, Acts: true, Does: m.does})
		}
	}
	for _, r := range refusals {
		for _, l := range r.leaves {
			out = append(out, Field{Path: l, Blocking: r.blocking, Does: r.does})
		}
	}
	slices.SortFunc(out, func(a, b Field) int { return strings.Compare(a.Path, b.Path) })
	return out
}
