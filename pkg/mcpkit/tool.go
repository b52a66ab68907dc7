// Package mcpkit is the one way Data Workers defines, selects and serves MCP tools: a tool is a
// plain function over typed input and output structs, its four annotations come from its kind, and
// every binary gets the same flags, stdio server and `tools` / `call` / `version` subcommands.
package mcpkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Kind says what a tool may do; it sets all four MCP annotations so nobody sets them by hand.
type Kind int

const (
	// KindRead tools only read: readOnly, not destructive, idempotent.
	KindRead Kind = iota
	// KindWrite tools change state additively (record, propose, queue); not destructive.
	KindWrite
	// KindDestructive tools can overwrite or undo something outside Data Workers.
	KindDestructive
)

func (k Kind) String() string {
	switch k {
	case KindRead:
		return "read"
	case KindWrite:
		return "write"
	case KindDestructive:
		return "destructive"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Tool is a defined tool: its name, its kind, its handler and, built on first use, its MCP
// definition. Building a definition reflects over the input and output types and marshals their
// schemas, which for a whole tool table costs more than the rest of a start, so it waits until
// something asks for the tool (tools/list, tools/call, a snapshot test) instead of delaying the
// answer to initialize.
type Tool struct {
	Name    string
	Kind    Kind
	Handler server.ToolHandlerFunc
	def     func() mcp.Tool
}

// Def returns the tool's MCP definition, built once.
func (t Tool) Def() mcp.Tool {
	if t.def == nil {
		return mcp.Tool{Name: t.Name}
	}
	return t.def()
}

// Option adjusts a tool's definition.
type Option func(*mcp.Tool)

// LocalOnly marks a tool that touches nothing outside Data Workers' own store (openWorldHint=false).
func LocalOnly() Option {
	return func(t *mcp.Tool) { t.Annotations.OpenWorldHint = mcp.ToBoolPtr(false) }
}

// Title sets the human-readable title.
func Title(title string) Option {
	return func(t *mcp.Tool) {
		t.Annotations.Title = title
		t.Title = title
	}
}

// A successful result whose JSON carries "failed": true (a blocking CI gate, a failing monitor)
// makes `call` exit 1, so scripts can gate on it.

// Read defines a read-only tool.
func Read[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...Option) Tool {
	return define(KindRead, name, description, fn, opts)
}

// Write defines a tool that records or proposes but overwrites nothing.
func Write[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...Option) Tool {
	return define(KindWrite, name, description, fn, opts)
}

// Destructive defines a tool whose effect outside Data Workers may need an undo.
func Destructive[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...Option) Tool {
	return define(KindDestructive, name, description, fn, opts)
}

func define[In, Out any](kind Kind, name, description string, fn func(context.Context, In) (Out, error), opts []Option) Tool {
	def := sync.OnceValue(func() mcp.Tool { return buildDef[In, Out](kind, name, description, opts) })
	v := &argValidator{schema: func() []byte {
		d := def()
		if len(d.RawInputSchema) > 0 {
			return d.RawInputSchema
		}
		return schemaJSON(d.InputSchema)
	}}
	return Tool{Name: name, Kind: kind, Handler: handler(name, v, fn), def: def}
}

// buildDef is the tool's MCP definition: schemas from the Go types, annotations from the kind.
func buildDef[In, Out any](kind Kind, name, description string, opts []Option) mcp.Tool {
	def := mcp.NewTool(name,
		mcp.WithDescription(description),
		mcp.WithInputSchema[In](),
		mcp.WithOutputSchema[Out](),
	)
	def.Annotations = mcp.ToolAnnotation{
		ReadOnlyHint:    mcp.ToBoolPtr(kind == KindRead),
		DestructiveHint: mcp.ToBoolPtr(kind == KindDestructive),
		IdempotentHint:  mcp.ToBoolPtr(kind == KindRead),
		OpenWorldHint:   mcp.ToBoolPtr(true),
	}
	for _, o := range opts {
		o(&def)
	}
	if def.Title == "" {
		Title(titleFromName(name))(&def)
	}
	def.RawInputSchema = normalizeRaw(def.RawInputSchema)
	if out := def.OutputSchema.Properties; out != nil {
		normalizeSchema(map[string]any{"properties": out}) // edits the map in place
	}
	return def
}

type requestKey struct{}

// handler adapts a typed function: strict argument binding, errors as isError results (the model
// can read and correct them; a JSON-RPC error would be invisible to it), panics contained.
func handler[In, Out any](name string, v *argValidator, fn func(context.Context, In) (Out, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				loggerFrom(ctx).ErrorContext(ctx, "tool panicked", "tool", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				res, err = mcp.NewToolResultError(fmt.Sprintf("internal error in %s: %v (this is a bug; the call had no effect it could not report)", name, p)), nil
			}
		}()
		var in In
		if err := bindArguments(req, v, &in); err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("invalid arguments for %s: %v", name, err)), nil
		}
		ctx = context.WithValue(ctx, requestKey{}, &req)
		out, err := fn(ctx, in)
		var partial *partialError
		if err != nil && !errors.As(err, &partial) {
			return mcp.NewToolResultError(err.Error()), nil
		}
		text, err := json.Marshal(out)
		if err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("internal error in %s: encode result: %v", name, err)), nil
		}
		res = mcp.NewToolResultStructured(out, string(text))
		if partial != nil {
			res.Content = append(res.Content, mcp.NewTextContent(fmt.Sprintf("%s stopped part-way: %v. The result is what it did before that; nothing after it ran.", name, partial.err)))
			res.Meta = &mcp.Meta{AdditionalFields: map[string]any{partialMetaKey: true}}
		}
		return res, nil
	}
}

// Partial marks a handler's error as coming after the call changed something (an action ran, a
// request was created): the result then carries the handler's output — what was done — and the
// error as a second text, instead of an isError result that would drop what was done. A call that
// changed nothing returns its error plainly and stays isError.
func Partial(err error) error {
	if err == nil {
		return nil
	}
	return &partialError{err: err}
}

type partialError struct{ err error }

func (p *partialError) Error() string { return p.err.Error() }
func (p *partialError) Unwrap() error { return p.err }

// partialMetaKey flags a partial result in its _meta, so the audit log records it as such.
const partialMetaKey = "dataworkers/partial"

// IsPartial reports whether res is a partial result (see Partial).
func IsPartial(res *mcp.CallToolResult) bool {
	return res != nil && res.Meta != nil && res.Meta.AdditionalFields[partialMetaKey] == true
}

func bindArguments(req mcp.CallToolRequest, validator *argValidator, v any) error {
	raw, err := json.Marshal(req.GetRawArguments())
	if err != nil {
		return err
	}
	if string(raw) == "null" {
		raw = []byte("{}")
	}
	if err := validator.validate(raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// ReportProgress sends an MCP progress notification when the caller asked for progress; otherwise it
// does nothing. progress must increase from call to call.
func ReportProgress(ctx context.Context, progress, total float64, message string) {
	req, _ := ctx.Value(requestKey{}).(*mcp.CallToolRequest)
	if req == nil || req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return
	}
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return
	}
	params := map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": progress, "message": message}
	if total > 0 {
		params["total"] = total
	}
	_ = srv.SendNotificationToClient(ctx, "notifications/progress", params)
}
