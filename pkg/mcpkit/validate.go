package mcpkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// argValidator checks arguments against the tool's input schema before they are bound, with
// messages a model can act on ("/window: value must be one of …"). The schema compiles on first use
// so start-up stays cheap; so is the schema itself (see Tool).
type argValidator struct {
	schema func() []byte
	once   sync.Once
	sch    *jsonschema.Schema
	err    error
}

var englishPrinter = message.NewPrinter(language.English)

func (v *argValidator) validate(raw []byte) error {
	v.once.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(v.schema()))
		if err != nil {
			v.err = err
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("input.json", doc); err != nil {
			v.err = err
			return
		}
		v.sch, v.err = c.Compile("input.json")
	})
	if v.err != nil {
		return fmt.Errorf("tool input schema does not compile (a bug): %w", v.err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	err = v.sch.Validate(inst)
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	var p problems
	p.collect(verr)
	return errors.New(p.String())
}

// A validation error goes back into the caller's context: it lists the first few problems, each
// cut short (a message can quote the offending value or key, which may be a megabyte), and counts
// the rest, so a 100,000-item array of wrong values is a short answer.
const (
	maxProblems     = 5
	maxProblemRunes = 160
)

type problems struct {
	shown []string
	total int
}

func (p *problems) collect(e *jsonschema.ValidationError) {
	if len(e.Causes) == 0 {
		p.total++
		if len(p.shown) < maxProblems {
			p.shown = append(p.shown, ellipsize(sanitizeProblem(location(e)+": "+e.ErrorKind.LocalizedString(englishPrinter)), maxProblemRunes))
		}
		return
	}
	for _, c := range e.Causes {
		p.collect(c)
	}
}

func (p *problems) String() string {
	msg := strings.Join(p.shown, "; ")
	if more := p.total - len(p.shown); more > 0 {
		msg += fmt.Sprintf("; and %d more problems (%d in all)", more, p.total)
	}
	return msg
}

// location is the JSON pointer of the offending value, its segments cut short (a key may be huge).
func location(e *jsonschema.ValidationError) string {
	if len(e.InstanceLocation) == 0 {
		return "arguments"
	}
	segs := make([]string, len(e.InstanceLocation))
	for i, s := range e.InstanceLocation {
		segs[i] = ellipsize(s, 40)
	}
	return "/" + strings.Join(segs, "/")
}

// sanitizeProblem replaces control and bidi-override characters a caller's key or value may carry.
func sanitizeProblem(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return ' '
		}
		return r
	}, s)
}

func schemaJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}

// normalizeSchema replaces the bare `true` sub-schemas google/jsonschema-go emits for `any` fields
// (property values and items) with the equivalent `{}`: some clients reject a boolean where they
// expect a schema object (the MCP Inspector's --strict check does).
func normalizeSchema(v any) any {
	switch s := v.(type) {
	case map[string]any:
		for k, child := range s {
			switch k {
			case "properties":
				if props, ok := child.(map[string]any); ok {
					for name, p := range props {
						if b, ok := p.(bool); ok && b {
							props[name] = map[string]any{}
						} else {
							props[name] = normalizeSchema(p)
						}
					}
				}
			case "items":
				if b, ok := child.(bool); ok && b {
					s[k] = map[string]any{}
				} else {
					s[k] = normalizeSchema(child)
				}
			default:
				s[k] = normalizeSchema(child)
			}
		}
		return s
	case []any:
		for i := range s {
			s[i] = normalizeSchema(s[i])
		}
	}
	return v
}

func normalizeRaw(raw []byte) []byte {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, err := json.Marshal(normalizeSchema(v))
	if err != nil {
		return raw
	}
	return out
}
