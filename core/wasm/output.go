package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// DecodeJSONOutput strictly decodes a guest's JSON output into out (unknown fields and
// trailing data are errors) and reports failures as KindInvalidOutput naming the plugin,
// the export and what was wrong. For the small-JSON extension points (CSR approval,
// feedback extraction, add-on rendering); the prioritizer uses the compact layout.
func DecodeJSONOutput(plugin, export string, output []byte, out any) error {
	if len(bytes.TrimSpace(output)) == 0 {
		return InvalidOutput(plugin, export, nil, "output is empty, want a JSON %T", out)
	}
	dec := json.NewDecoder(bytes.NewReader(output))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return InvalidOutput(plugin, export, err, "output is not a valid JSON %T: %v (output starts %q)", out, err, truncate(output, 80))
	}
	if dec.More() {
		return InvalidOutput(plugin, export, nil, "output has trailing data after the JSON value (output starts %q)", truncate(output, 80))
	}
	return nil
}

// CallJSON marshals in, calls export and decodes the output with DecodeJSONOutput.
func (m *Module) CallJSON(ctx context.Context, export string, in, out any) error {
	input, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("wasm plugin %q: export %s: encoding input: %w", m.name, export, err)
	}
	output, err := m.Call(ctx, export, input)
	if err != nil {
		return err
	}
	return DecodeJSONOutput(m.name, export, output, out)
}
