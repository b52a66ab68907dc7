package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/riferrei/srclient"

	"github.com/dataworkers/dw/pkg/httpapi"
)

// Error is a registry refusal with its error_code, the server's message and what to do next.
type Error struct {
	Op         string
	Code       int
	HTTPStatus int
	Message    string
	URL        string
}

// codes maps Schema Registry error codes (docs/reference/schema-rules.md) to a meaning and a next step.
var codes = map[int][2]string{
	40401: {"subject not found", "check the subject name with list_subjects (TopicNameStrategy names are <topic>-value and <topic>-key)"},
	40402: {"version not found", "list the subject's versions with get_subject"},
	40403: {"schema not found", "the schema id or text is not registered"},
	40404: {"subject was soft-deleted", "it can still be read with deleted versions included, or re-registered"},
	40406: {"version was soft-deleted", "read it with deleted versions included"},
	40408: {"subject has no compatibility level of its own", "the global level applies"},
	40901: {"schema is incompatible with the subject's compatibility level", "run check_compatibility for the reasons, or propose_schema_fix"},
	42201: {"invalid schema", "fix the schema text (the message says where)"},
	42202: {"invalid version", "use a positive version number or latest"},
	42203: {"invalid compatibility level", "use NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL or FULL_TRANSITIVE"},
	42204: {"invalid mode", "use READWRITE, READONLY, READONLY_OVERRIDE or IMPORT"},
	42205: {"operation not permitted", "the subject or registry mode forbids it (e.g. READONLY)"},
	42206: {"schema is still referenced", "delete or repoint the referencing schemas first"},
	42208: {"invalid subject name", "check the subject name"},
	42209: {"schema too large", "split the schema with references"},
	50001: {"registry store error", "retry later; the registry's backing store failed"},
	50002: {"registry operation timed out", "retry later"},
	50003: {"registry request forwarding failed", "retry later; the registry could not reach its leader"},
	50004: {"registry has no known leader", "retry later"},
}

func (e *Error) Error() string {
	meaning, next := "error", ""
	if m, ok := codes[e.Code]; ok {
		meaning, next = m[0], m[1]
	} else if e.HTTPStatus == http.StatusUnauthorized || e.HTTPStatus == http.StatusForbidden {
		meaning, next = "not authorised", "check schema_registry.username and schema_registry.password (Confluent Cloud: the Schema Registry API key and secret)"
	}
	msg := fmt.Sprintf("schema registry %s: %s: %s", e.URL, e.Op, meaning)
	if e.Code != 0 {
		msg += fmt.Sprintf(" (error_code %d)", e.Code)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if next != "" {
		msg += "; " + next
	}
	return msg
}

// IsCode reports whether err is a registry error with the given error_code.
func IsCode(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// explain turns srclient and httpapi failures into an *Error with the registry's code. A body
// without an error_code (a proxy's answer, an old registry) has its code inferred from the status
// and message.
func (c *Client) explain(op string, err error) error {
	var se srclient.Error
	if errors.As(err, &se) {
		return &Error{Op: op, Code: se.Code, HTTPStatus: statusOf(se.Code), Message: se.Message, URL: c.URL}
	}
	var he *httpapi.Error
	if errors.As(err, &he) {
		code := he.Code
		if code == 0 {
			code = inferCode(he.StatusCode, he.Message, op)
		}
		return &Error{Op: op, Code: code, HTTPStatus: he.StatusCode, Message: he.Message, URL: c.URL}
	}
	// The HTTP client's own timeout (schema_registry.timeout) and the caller's deadline are the
	// same wait: whichever fires first, the registry gave no answer.
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return c.noAnswer(op, err)
	}
	if err != nil && strings.Contains(err.Error(), "schema registry") {
		return err
	}
	return fmt.Errorf("schema registry %s: %s: %w (check schema_registry.url)", c.URL, op, err)
}

// noAnswer is the error of a call the registry did not answer in time.
func (c *Client) noAnswer(op string, err error) error {
	return fmt.Errorf("schema registry %s: %s: no answer: %w (check schema_registry.url, or raise schema_registry.timeout)", c.URL, op, err)
}

func statusOf(code int) int {
	if code >= 10000 {
		return code / 100
	}
	return code
}

func inferCode(status int, msg, op string) int {
	m := strings.ToLower(msg)
	switch status {
	case http.StatusNotFound:
		switch {
		case strings.Contains(m, "compatibility") || strings.Contains(m, "config"):
			return 40408
		case strings.Contains(m, "version") && strings.Contains(m, "soft"):
			return 40406
		case strings.Contains(m, "subject") && strings.Contains(m, "soft"):
			return 40404
		case strings.Contains(m, "version"):
			return 40402
		case strings.Contains(m, "subject"):
			return 40401
		case strings.Contains(m, "schema"):
			return 40403
		}
		if strings.Contains(op, "compatibility of") {
			return 40408
		}
		return 40401
	case http.StatusConflict:
		return 40901
	case http.StatusUnprocessableEntity:
		switch {
		case strings.Contains(m, "compatib"):
			return 42203
		case strings.Contains(m, "version"):
			return 42202
		case strings.Contains(m, "subject"):
			return 42208
		}
		return 42201
	}
	return 0
}
