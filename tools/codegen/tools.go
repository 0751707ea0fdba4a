//go:build tools

// Package codegen records the code generators so `go mod tidy` keeps them.
package codegen

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
