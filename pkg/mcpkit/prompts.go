package mcpkit

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Prompt is a job an agent offers to walk a client through: which of our tools to call, in which
// order, and what to look at in each answer. Clients show prompts as slash commands or menu entries.
type Prompt struct {
	Name, Title, Description string
	Arguments                []PromptArgument
	// Render writes the instructions from the arguments (required ones are checked before).
	Render func(ctx context.Context, args map[string]string) (string, error)
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name, Description string
	Required          bool
}

func addPrompts(s *server.MCPServer, prompts []Prompt, redact func(string) string) {
	for _, p := range prompts {
		opts := []mcp.PromptOption{mcp.WithPromptDescription(p.Description)}
		for _, a := range p.Arguments {
			aopts := []mcp.ArgumentOption{mcp.ArgumentDescription(a.Description)}
			if a.Required {
				aopts = append(aopts, mcp.RequiredArgument())
			}
			opts = append(opts, mcp.WithArgument(a.Name, aopts...))
		}
		def := mcp.NewPrompt(p.Name, opts...)
		def.Title = p.Title
		s.AddPrompt(def, promptHandler(p, redact))
	}
}

func promptHandler(p Prompt, redact func(string) string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args := map[string]string{}
		for k, v := range req.Params.Arguments {
			args[k] = strings.TrimSpace(v)
		}
		for k := range args {
			if !promptHasArgument(p, k) {
				return nil, fmt.Errorf("prompt %s has no argument %q", p.Name, k)
			}
		}
		for _, a := range p.Arguments {
			if a.Required && args[a.Name] == "" {
				return nil, fmt.Errorf("prompt %s needs the argument %s: %s", p.Name, a.Name, a.Description)
			}
		}
		text, err := p.Render(ctx, args)
		if err != nil {
			return nil, fmt.Errorf("prompt %s: %w", p.Name, err)
		}
		if redact != nil {
			text = redact(text)
		}
		return mcp.NewGetPromptResult(p.Description, []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(text)),
		}), nil
	}
}

func promptHasArgument(p Prompt, name string) bool {
	for _, a := range p.Arguments {
		if a.Name == name {
			return true
		}
	}
	return false
}
