package auth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// A user's groups and metadata (docs/api.md, "Groups and metadata"):
// set by the operator (PATCH /admin/users/:id, the CLI, an import),
// never from the user's own session; shown by every view of the user.

// Limits of a user's groups and metadata.
const (
	// MaxUserGroups is how many groups a user may have (after repeats
	// are folded).
	MaxUserGroups = 100
	// MaxGroupLength is the longest group name, in bytes (its characters
	// are ASCII).
	MaxGroupLength = 64
	// MaxMetadataBytes is the most bytes a user's metadata takes, as it
	// is stored (compact JSON, members sorted by name).
	MaxMetadataBytes = 4096
)

// errGroupsType and errMetadataType are the answers to a groups or
// metadata value of the wrong kind.
const (
	errGroupsType   = "groups must be an array of group names, or null to clear them"
	errMetadataType = "metadata must be a JSON object, or null to clear it"
)

// validGroup reports whether g is a group name: 1 to MaxGroupLength
// characters of a-z, 0-9, '.', '_' and '-', the first a letter or a
// digit.
func validGroup(g string) bool {
	if g == "" || len(g) > MaxGroupLength {
		return false
	}
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// parseGroups checks a groups value as a request sends it (raw is not
// nil: the field was given): an array of group names, or null. It
// returns them sorted, repeats folded; nil for none (null or []). The
// error's text names the field and what is wrong, without a final
// period.
func parseGroups(raw json.RawMessage) ([]string, error) {
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s", errGroupsType)
	}
	for i, g := range list {
		if !validGroup(g) {
			return nil, fmt.Errorf("groups[%d] %s is not a group name: 1 to %d characters of a-z, 0-9, '.', '_' and '-', starting with a letter or a digit",
				i, quoteClipped(g), MaxGroupLength)
		}
	}
	slices.Sort(list)
	list = slices.Compact(list)
	if len(list) > MaxUserGroups {
		return nil, fmt.Errorf("groups has %d different groups: at most %d", len(list), MaxUserGroups)
	}
	if len(list) == 0 {
		return nil, nil
	}
	return slices.Clip(list), nil
}

// quoteClipped quotes s for a message, its first 64 bytes at most.
func quoteClipped(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q…", strings.ToValidUTF8(s[:64], ""))
	}
	return fmt.Sprintf("%q", s)
}

// parseMetadata checks a metadata value as a request sends it (raw is
// not nil: the field was given): a JSON object, or null. It returns the
// object as it is stored: compact, the members of every object sorted
// by name (a repeated name keeps its last value), numbers as written,
// and at most MaxMetadataBytes; nil for none (null or {}). The error's
// text names the field and what is wrong, without a final period.
func parseMetadata(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%s", errMetadataType)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || dec.More() {
		return nil, fmt.Errorf("%s", errMetadataType)
	}
	if len(obj) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, fmt.Errorf("%s", errMetadataType)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(out) > MaxMetadataBytes {
		return nil, fmt.Errorf("metadata takes %d bytes as compact JSON: at most %d", len(out), MaxMetadataBytes)
	}
	return json.RawMessage(out), nil
}

// emptyObject is the metadata of a user without any, as views show it.
var emptyObject = json.RawMessage("{}")

// viewGroups returns a user's groups as views show them: [] for none.
func viewGroups(g []string) []string {
	if g == nil {
		return []string{}
	}
	return g
}

// viewMetadata returns a user's metadata as views show it: {} for none.
func viewMetadata(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return emptyObject
	}
	return m
}
