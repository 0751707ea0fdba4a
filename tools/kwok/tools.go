//go:build tools

// Package kwok records KWOK's controller main package so `go mod tidy` keeps it.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
