// Package seeds is the end-to-end suite of the documented example objects: every YAML in
// e2e/testdata/seeds must be accepted by a real API server serving Flotilla's CRDs, the
// invalid variants the documentation rules out must be rejected with a message naming
// the field, and `kubectl get` must print OCM's columns.
package seeds
