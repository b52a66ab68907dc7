package dbt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/dataworkers/dw/pkg/graph"
)

// The manifest is read as a stream of tokens: its top-level object key by key, and the entries of
// the big maps (nodes, sources, exposures and every section the importer skips) one at a time, so
// memory holds one entry, never the whole file (manifests of large projects run to gigabytes).

// sectionEntry handles one entry of a top-level map, the decoder positioned at its value.
type sectionEntry func(section, key string, dec *json.Decoder) error

// walkManifest reads r's top-level object. For each key of sections (a map of maps) every entry
// goes to entry; for each key of whole its value goes to whole; anything else is skipped entry by
// entry. seen reports which of sections held an object.
func walkManifest(r io.Reader, sections map[string]bool, entry sectionEntry, whole func(key string, dec *json.Decoder) error) (seen map[string]bool, err error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{', "the manifest"); err != nil {
		return nil, err
	}
	seen = map[string]bool{}
	for dec.More() {
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
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("dbt manifest: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("dbt manifest: data after the manifest's object")
	}
	return seen, nil
}

// eachEntry calls entry for every key of the object at dec; null counts as an empty object, and
// held says an object was there.
func eachEntry(dec *json.Decoder, section string, entry sectionEntry) (held bool, err error) {
	t, err := dec.Token()
	if err != nil {
		return false, fmt.Errorf("dbt manifest: %s: %w", section, err)
	}
	if t == nil {
		return false, nil
	}
	if t != json.Delim('{') {
		return false, fmt.Errorf("dbt manifest: %s is %v, want an object", section, describe(t))
	}
	for dec.More() {
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
	if _, err := dec.Token(); err != nil {
		return false, fmt.Errorf("dbt manifest: %s: %w", section, err)
	}
	return true, nil
}

// skipValue consumes one value: an object entry by entry, anything else whole.
func skipValue(dec *json.Decoder) error {
	var raw json.RawMessage
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("dbt manifest: %w", err)
	}
	switch t {
	case json.Delim('{'):
		for dec.More() {
			if _, err := objectKey(dec); err != nil {
				return err
			}
			if err := dec.Decode(&raw); err != nil {
				return fmt.Errorf("dbt manifest: %w", err)
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if err := dec.Decode(&raw); err != nil {
				return fmt.Errorf("dbt manifest: %w", err)
			}
		}
		_, err = dec.Token()
	}
	if err != nil {
		return fmt.Errorf("dbt manifest: %w", err)
	}
	return nil
}

func objectKey(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("dbt manifest: %w", err)
	}
	key, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("dbt manifest: want a key, found %v", describe(t))
	}
	return key, nil
}

func expectDelim(dec *json.Decoder, d json.Delim, what string) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("dbt manifest: %w", err)
	}
	if t != d {
		return fmt.Errorf("dbt manifest: %s is %v, want an object", what, describe(t))
	}
	return nil
}

// describe names a token's JSON type without quoting content.
func describe(t json.Token) string {
	switch t.(type) {
	case json.Delim:
		if t == json.Delim('[') {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", t)
}

// errStopped tells Convert that Stream's consumer failed and wants no more batches.
var errStopped = errors.New("dbt manifest: import stopped")

// Stream is Convert with the conversion in its own goroutine: the next batch is decoded and its
// SQL parsed while put writes the last one, so a large import uses two cores. At most two batches
// wait between the two. put's error wins over the conversion's.
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
