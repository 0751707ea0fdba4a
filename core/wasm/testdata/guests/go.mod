// Test guests for the core/wasm host. A separate module so the root module's
// build, vet and tidy never see wasip1-only code.
module flotilla.test/guests

go 1.26.0
