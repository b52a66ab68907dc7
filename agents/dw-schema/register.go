package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/notify"
	"github.com/dataworkers/dw/pkg/remediation"
	"github.com/dataworkers/dw/pkg/schema"
)

type registerParams struct {
	Subject           string `json:"subject" jsonschema:"Subject to register under, e.g. orders-value"`
	Schema            string `json:"schema,omitempty" jsonschema:"The schema text (exactly as approved)"`
	SchemaFile        string `json:"schema_file,omitempty" jsonschema:"Path to the schema file instead of schema"`
	SchemaType        string `json:"schema_type,omitempty" jsonschema:"AVRO, PROTOBUF or JSON; default from the file extension, else AVRO"`
	ApprovalRequestID int64  `json:"approval_request_id,omitempty" jsonschema:"The approved register_schema request for exactly this subject and schema"`
}

type registerResult struct {
	Action remediation.Action `json:"action"`
	Next   string             `json:"next"`
}

// registerPayload is what a register_schema approval binds to: the subject, the format and the
// schema text, so approving one schema never lets another through.
func registerPayload(subject string, s *schema.Schema) map[string]any {
	return map[string]any{"subject": subject, "schema_type": string(s.Format), "schema": s.Text}
}

func registerStreamSchema(d *deps) mcpkit.Tool {
	return mcpkit.Destructive("register_stream_schema",
		"Register a schema version, only with a named approval (class register_schema) for exactly this subject and schema, and never while the org-wide stop is on. "+
			"Without approval_request_id it answers with the exact request_approval call to make.",
		func(ctx context.Context, p registerParams) (registerResult, error) {
			in := schemaInput{Text: p.Schema, File: p.SchemaFile, Type: p.SchemaType}
			if !in.given() {
				return registerResult{}, errors.New("give the schema (schema or schema_file)")
			}
			s, err := d.load(in, "")
			if err != nil {
				return registerResult{}, err
			}
			payload := registerPayload(p.Subject, s)
			if p.ApprovalRequestID == 0 {
				_, hash, err := approvals.Canonical(payload)
				if err != nil {
					return registerResult{}, err
				}
				req, _ := json.Marshal(map[string]any{"proposals": []any{map[string]any{"class": config.ClassRegisterSchema,
					"target": "schema:" + p.Subject, "title": "Register a new version of " + p.Subject, "payload": payload}}})
				return registerResult{}, fmt.Errorf("registering a schema needs a named approval for exactly this subject and schema (payload sha256 %s): "+
					"call dw-incidents request_approval with %s, have the approver decide, then call register_stream_schema again with approval_request_id", hash, req)
			}
			st, err := d.env.Store.Get(ctx)
			if err != nil {
				return registerResult{}, err
			}
			var n notify.Notifier
			if sl, err := notify.NewSlack(d.env.Config.Slack); err == nil && sl != nil {
				n = sl
			}
			svc := approvals.New(st, d.env.Config, d.env.Now, n)
			// The schema given now must be the one approved, byte for byte.
			req, err := svc.Authorize(ctx, p.ApprovalRequestID, payload)
			if errors.Is(err, approvals.ErrVoided) { // the approval stands, for the payload it names
				return registerResult{}, fmt.Errorf("request #%d does not cover this subject and schema: it approves only the exact payload it was decided on, and stays approved for that; request an approval for this schema", p.ApprovalRequestID)
			}
			if err != nil {
				return registerResult{}, err
			}
			if req.Class != config.ClassRegisterSchema || req.Target != "schema:"+p.Subject {
				return registerResult{}, fmt.Errorf("request #%d approves %s on %s, not register_schema on schema:%s", req.ID, req.Class, req.Target, p.Subject)
			}
			exec := remediation.New(st, d.env.Config, svc, remediation.Backends{RegisterSchema: d.registerApproved}, d.env.Now)
			a, err := exec.Run(ctx, p.ApprovalRequestID)
			if err != nil {
				return registerResult{}, err
			}
			return registerResult{Action: a, Next: "Run check_compatibility or get_subject to confirm; producers can now use the new version."}, nil
		})
}

// registerApproved registers the approved payload's schema and reports the id and version.
func (d *deps) registerApproved(ctx context.Context, p map[string]any) (map[string]any, remediation.Undo, error) {
	subjectName, _ := p["subject"].(string)
	text, _ := p["schema"].(string)
	typ, _ := p["schema_type"].(string)
	format, err := schema.ParseFormat(typ)
	if err != nil || subjectName == "" || text == "" {
		return nil, remediation.Undo{}, fmt.Errorf("the approved payload lacks subject, schema_type or schema")
	}
	rc, err := d.registry()
	if err != nil {
		return nil, remediation.Undo{}, err
	}
	id, err := rc.Register(ctx, subjectName, format, text, nil)
	if err != nil {
		return nil, remediation.Undo{}, err
	}
	version := 0
	if hist, err := rc.History(ctx, subjectName); err == nil {
		for _, v := range hist {
			if v.ID == id && v.Version > version {
				version = v.Version
			}
		}
	}
	undo := remediation.Undo{Description: fmt.Sprintf("soft-delete version %d of %s (DELETE /subjects/%s/versions/%d) once no producer uses it; "+
		"records already written with schema id %d stay readable", version, subjectName, subjectName, version, id)}
	return map[string]any{"subject": subjectName, "id": id, "version": version}, undo, nil
}
