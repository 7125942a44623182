package bridge

import (
	"encoding/json"
	"errors"

	"cloud2mqtt/internal/capability"
)

// orderedObject decodes the JSON object of <id>/set keeping its members in the
// order written, duplicates included, with values normalised. It validates once
// and then cuts members out, because during a flood the broker moves no faster
// than the bridge handles commands, and json.Decoder's tokens cost four times as much.
func orderedObject(payload []byte) ([]string, []any, error) {
	if !json.Valid(payload) {
		return nil, nil, errNotObject
	}
	i := skipSpace(payload, 0)
	if payload[i] != '{' {
		return nil, nil, errNotObject
	}
	var keys []string
	var vals []any
	for i = skipSpace(payload, i+1); payload[i] != '}'; i = skipSpace(payload, i+1) {
		end := stringEnd(payload, i)
		k, err := unquote(payload[i:end])
		if err != nil {
			return nil, nil, err
		}
		start := skipSpace(payload, skipSpace(payload, end)+1) // after the colon
		end = valueEnd(payload, start)
		v, err := capability.Normalize(payload[start:end])
		if err != nil {
			return nil, nil, err
		}
		keys, vals = append(keys, k), append(vals, v)
		if i = skipSpace(payload, end); payload[i] == '}' {
			break
		}
	}
	return keys, vals, nil
}

var errNotObject = errors.New("not a JSON object")

// The scanners below read a payload json.Valid accepted: every index they
// return is within it.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index after the string that starts at b[i] ('"').
func stringEnd(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd is the index after the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// unquote is a JSON string's text: the bytes between the quotes when nothing
// needs decoding, else encoding/json's result.
func unquote(q []byte) (string, error) {
	plain := true
	for _, c := range q[1 : len(q)-1] {
		if c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return string(q[1 : len(q)-1]), nil
	}
	var s string
	err := json.Unmarshal(q, &s)
	return s, err
}
