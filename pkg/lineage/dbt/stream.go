package dbt

import (
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dataworkers/dw/pkg/graph"
)

// The manifest is read as a stream of tokens: its top-level object key by key, and the entries of
// the big maps (nodes, sources, exposures and every section the importer skips) one at a time, so
// memory holds one entry, never the whole file (manifests of large projects run to gigabytes).
// jsontext skips what the importer does not read without building it, and decodes an entry in one
// pass over its bytes (encoding/json's Decoder scans each value twice), which halves the decoding.

// decodeOptions read a manifest as encoding/json would: member names matched regardless of case,
// a repeated name's last value kept, invalid UTF-8 replaced rather than refused.
func decodeOptions() json.Options {
	return json.JoinOptions(json.MatchCaseInsensitiveNames(true), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}

// decode reads the next value at dec into v.
func decode(dec *jsontext.Decoder, v any) error {
	return json.UnmarshalDecode(dec, v, decodeOptions())
}

// sectionEntry handles one entry of a top-level map, the decoder positioned at its value.
type sectionEntry func(section, key string, dec *jsontext.Decoder) error

// walkManifest reads r's top-level object. For each key of sections (a map of maps) every entry
// goes to entry; for each key of whole its value goes to whole; anything else is skipped entry by
// entry. seen reports which of sections held an object.
func walkManifest(r io.Reader, sections map[string]bool, entry sectionEntry, whole func(key string, dec *jsontext.Decoder) error) (seen map[string]bool, err error) {
	dec := jsontext.NewDecoder(r, decodeOptions())
	if err := expectDelim(dec, '{', "the manifest"); err != nil {
		return nil, err
	}
	seen = map[string]bool{}
	for dec.PeekKind() != '}' {
		key, err := objectKey(dec)
		if err != nil {
			return nil, err
		}
		switch {
		case sections[key]:
			held, err := eachEntry(dec, key, entry)
			if err != nil {
				return nil, err
			}
			seen[key] = seen[key] || held
		case whole != nil:
			if err := whole(key, dec); err != nil {
				return nil, err
			}
		default:
			if err := skipValue(dec); err != nil {
				return nil, err
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return nil, fmt.Errorf("dbt manifest: %w", err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("dbt manifest: data after the manifest's object")
	}
	return seen, nil
}

// eachEntry calls entry for every key of the object at dec; null counts as an empty object, and
// held says an object was there.
func eachEntry(dec *jsontext.Decoder, section string, entry sectionEntry) (held bool, err error) {
	t, err := dec.ReadToken()
	if err != nil {
		return false, fmt.Errorf("dbt manifest: %s: %w", section, err)
	}
	switch t.Kind() {
	case 'n':
		return false, nil
	case '{':
	default:
		return false, fmt.Errorf("dbt manifest: %s is %v, want an object", section, describe(t.Kind()))
	}
	for dec.PeekKind() != '}' {
		key, err := objectKey(dec)
		if err != nil {
			return false, err
		}
		if entry == nil {
			err = skipValue(dec)
		} else {
			err = entry(section, key, dec)
		}
		if err != nil {
			return false, err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return false, fmt.Errorf("dbt manifest: %s: %w", section, err)
	}
	return true, nil
}

// skipValue consumes one value without building it.
func skipValue(dec *jsontext.Decoder) error {
	if err := dec.SkipValue(); err != nil {
		return fmt.Errorf("dbt manifest: %w", err)
	}
	return nil
}

func objectKey(dec *jsontext.Decoder) (string, error) {
	t, err := dec.ReadToken()
	if err != nil {
		return "", fmt.Errorf("dbt manifest: %w", err)
	}
	if t.Kind() != '"' {
		return "", fmt.Errorf("dbt manifest: want a key, found %v", describe(t.Kind()))
	}
	return t.String(), nil
}

func expectDelim(dec *jsontext.Decoder, d jsontext.Kind, what string) error {
	t, err := dec.ReadToken()
	if err != nil {
		return fmt.Errorf("dbt manifest: %w", err)
	}
	if t.Kind() != d {
		return fmt.Errorf("dbt manifest: %s is %v, want an object", what, describe(t.Kind()))
	}
	return nil
}

// describe names a token's JSON type without quoting content.
func describe(k jsontext.Kind) string {
	switch k {
	case '[':
		return "an array"
	case '{':
		return "an object"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "invalid JSON"
}

// errStopped tells Convert that Stream's consumer failed and wants no more batches.
var errStopped = errors.New("dbt manifest: import stopped")

// Stream is Convert with put on a goroutine of its own: the next batches are decoded and
// converted (on Convert's workers) while put takes the last one. At most two batches wait between
// the two. put's error wins over the conversion's.
func (m *Manifest) Stream(engine string, put func(graph.Batch) error) (Stats, error) {
	batches := make(chan graph.Batch, 2)
	stop := make(chan struct{})
	var st Stats
	var convErr error
	go func() {
		defer close(batches)
		st, convErr = m.Convert(engine, func(b graph.Batch) error {
			select {
			case batches <- b:
				return nil
			case <-stop:
				return errStopped
			}
		})
	}()
	var putErr error
	for b := range batches {
		if putErr != nil {
			continue // drain: the goroutine stops at its next batch
		}
		if putErr = put(b); putErr != nil {
			close(stop)
		}
	}
	if putErr != nil {
		return Stats{}, putErr
	}
	return st, convErr
}
