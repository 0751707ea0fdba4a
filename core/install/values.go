package install

// MergeValues returns base with over merged in, as Helm merges values files: maps merge key
// by key, recursively; any other value in over (lists too) replaces base's. Neither argument
// is modified.
func MergeValues(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = MergeValues(bm, om)
				continue
			}
			out[k] = MergeValues(nil, om)
			continue
		}
		out[k] = v
	}
	return out
}
