// Package policies holds Flotilla's admission policies, written in Rego (see README.md).
//
// The defaults (this directory and lib/) are what the hub always loads: they carry OCM's
// admission checks (execute-as, accept, join, bind). The examples (examples/) are policies
// to copy into a ConfigMap; they are never loaded by themselves.
package policies

import (
	"embed"
	"io/fs"
)

//go:embed *.rego lib/*.rego
var defaults embed.FS

//go:embed examples/*.rego
var examples embed.FS

// Defaults are the policies the hub always loads, with their tests: the *.rego files at the
// root and the library in lib/.
func Defaults() fs.FS { return defaults }

// Examples are the example policies with their tests, at the root of the returned FS. They
// import data.flotilla.lib, so they compile only together with Defaults' lib/.
func Examples() fs.FS {
	sub, err := fs.Sub(examples, "examples")
	if err != nil {
		panic(err) // "examples" is a valid, embedded path
	}
	return sub
}
