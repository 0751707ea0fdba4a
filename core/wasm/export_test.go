package wasm

// Instrument exposes instrument to the external tests that need plugins/dist (which
// imports this package).
var Instrument = instrument

// FailInstrumentation makes e's instrumentation fail with err, as it does for a module
// using instructions it does not know.
func FailInstrumentation(e *Engine, err error) {
	e.instrument = func([]byte) ([]byte, error) { return nil, err }
}
