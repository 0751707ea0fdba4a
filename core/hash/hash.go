// Package hash is the project's one content hash: the hex SHA-256 of bytes, or of a value's
// JSON (encoding/json sorts map keys, so equal values hash alike). What is recorded on objects
// (template and spec hashes in annotations, OCM's config spec hashes) must stay stable across
// versions: change nothing here without a migration.
package hash

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// ShortLen is the length of Short: 64 bits of the hash, enough to tell versions of one object
// apart, and short enough for a label value.
const ShortLen = 16

// Bytes is the hex SHA-256 of data.
func Bytes(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// JSON is the hex SHA-256 of v as JSON.
func JSON(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("hashing %T: %w", v, err)
	}
	return Bytes(data), nil
}

// MustJSON is JSON for values that always marshal (API types, maps of JSON values).
func MustJSON(v any) string {
	h, err := JSON(v)
	if err != nil {
		panic(err)
	}
	return h
}

// Short is the first ShortLen hex digits of hash h.
func Short(h string) string {
	return h[:min(len(h), ShortLen)]
}
