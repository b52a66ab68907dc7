package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func newClient(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := New("test api", srv.URL+"/base", "test", Basic("key", "secret"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Backoff = time.Millisecond
	return c
}

func TestDoSendsAuthQueryAndDecodesJSON(t *testing.T) {
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		if u != "key" || p != "secret" || r.URL.EscapedPath() != "/base/connectors/a%2Fb/status" || r.URL.Query().Get("expand") != "status" {
			http.Error(w, "bad request: "+r.URL.String(), 400)
			return
		}
		w.Write([]byte(`{"name":"a/b"}`))
	})
	var out struct{ Name string }
	err := c.Do(context.Background(), "GET", "/connectors/"+url.PathEscape("a/b")+"/status", url.Values{"expand": {"status"}}, nil, &out)
	if err != nil || out.Name != "a/b" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
}

func TestRetriesOn429And5xxThenSucceeds(t *testing.T) {
	var calls atomic.Int32
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(429)
		case 2:
			w.WriteHeader(503)
		default:
			w.Write([]byte(`{}`))
		}
	})
	if err := c.Do(context.Background(), "GET", "/x", nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 {
		t.Fatalf("calls = %d", calls.Load())
	}
}

func TestClientErrorsAreNotRetriedAndCarryTheServerMessage(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   []string
	}{
		{404, `{"error_code":404,"message":"Connector orders-sink not found"}`, []string{"404", "Connector orders-sink not found"}},
		{401, `{"errors":[{"status":"401","detail":"Invalid API key"}]}`, []string{"Invalid API key", "check the credentials in test"}},
		{403, `{"status":{"code":403,"user_message":"Not allowed"}}`, []string{"Not allowed", "lack permission"}},
		{422, `{"detail":[{"loc":["body","logical_date"],"msg":"Field required"}]}`, []string{"Field required"}},
		{400, `plain text failure`, []string{"plain text failure"}},
	}
	for _, tc := range cases {
		var calls atomic.Int32
		c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.WriteHeader(tc.status)
			w.Write([]byte(tc.body))
		})
		err := c.Do(context.Background(), "GET", "/x", nil, nil, nil)
		if err == nil {
			t.Fatalf("%d: want error", tc.status)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%d: %q lacks %q", tc.status, err, w)
			}
		}
		if calls.Load() != 1 {
			t.Errorf("%d: retried %d times", tc.status, calls.Load())
		}
		if tc.status == 404 {
			var e *Error
			if !IsNotFound(err) || !errors.As(err, &e) || e.Code != 404 {
				t.Errorf("404: IsNotFound=%v code=%v", IsNotFound(err), e)
			}
		}
	}
}

func TestPersistentServerErrorGivesUpAfterRetries(t *testing.T) {
	var calls atomic.Int32
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(502)
		w.Write([]byte(`{"message":"upstream down"}`))
	})
	err := c.Do(context.Background(), "GET", "/x", nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "upstream down") || calls.Load() != 3 {
		t.Fatalf("err=%v calls=%d", err, calls.Load())
	}
}

func TestSlowServerTimesOutWithAClearMessage(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c.Timeout = 50 * time.Millisecond
	c.Retries = 3
	err := c.Do(context.Background(), "GET", "/x", nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "no answer within") || !strings.Contains(err.Error(), "test.timeout") {
		t.Fatalf("err=%v", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("a slow backend was asked %d times; one timeout is the promise", calls.Load())
	}
}

func TestUnreachableServerNamesTheConfigKey(t *testing.T) {
	c, _ := New("test api", "http://127.0.0.1:1", "connect", nil, time.Second)
	c.Retries = 0
	err := c.Do(context.Background(), "GET", "/x", nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "check connect.url") {
		t.Fatalf("err=%v", err)
	}
}

func TestNonJSONSuccessIsAnError(t *testing.T) {
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`<html>login</html>`)) })
	var out map[string]any
	err := c.Do(context.Background(), "GET", "/x", nil, nil, &out)
	if err == nil || !strings.Contains(err.Error(), "not the documented JSON") {
		t.Fatalf("err=%v", err)
	}
}

func TestCallerContextBoundsRetries(t *testing.T) {
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	c.Backoff = time.Hour
	c.Timeout = 0 // no budget of its own: the caller's context is the only bound
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := c.Do(ctx, "GET", "/x", nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err=%v", err)
	}
}

func TestRetriesStayInsideTheTimeoutBudget(t *testing.T) {
	var calls atomic.Int32
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(429)
		w.Write([]byte(`{"errors":[{"detail":"Too many requests"}]}`))
	})
	c.Timeout = 300 * time.Millisecond
	err := c.Do(context.Background(), "GET", "/x", nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "Too many requests") || !strings.Contains(err.Error(), "would exceed test.timeout") {
		t.Fatalf("err=%v", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("waited out a 30s Retry-After inside a 300ms budget: %d calls", calls.Load())
	}
}

// A backend (or a proxy before it) that echoes the request's headers in its error body must not
// get our credentials into the error text, in any encoding.
func TestErrorsNeverRelayTheCredentialsWeSent(t *testing.T) {
	const user, password, token = "svc-key", "p@ss:w0rd/é+x", "tok_9f8e7d6c5b4a"
	for name, auth := range map[string]Auth{"basic": Basic(user, password), "bearer": Bearer(token), "token": TokenHeader(token)} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h := r.Header.Get("Authorization")
				_, cred, _ := strings.Cut(h, " ")
				w.WriteHeader(http.StatusUnauthorized)
				// Echo the header as sent, its credentials alone, percent-encoded, and as JSON.
				fmt.Fprintf(w, "denied for %s; cred=%s; q=%s; p=%s", h, cred, url.QueryEscape(h), url.PathEscape(cred))
				if u, p, ok := r.BasicAuth(); ok {
					fmt.Fprintf(w, "; up=%s; pw=%s; raw=%s", url.QueryEscape(u+":"+p), url.PathEscape(p), p)
				}
			}))
			defer srv.Close()
			c, err := New("echo api", srv.URL, "echo", auth, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Do(context.Background(), "GET", "/x", nil, nil, nil)
			if err == nil {
				t.Fatal("want a 401 error")
			}
			msg := err.Error()
			basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
			for _, leak := range []string{password, token, basic, strings.TrimRight(basic, "="), url.QueryEscape(password), url.QueryEscape(basic), url.QueryEscape("Basic " + basic), url.PathEscape(password)} {
				if strings.Contains(msg, leak) {
					t.Errorf("the error relays %q: %s", leak, msg)
				}
			}
			if !strings.Contains(msg, "denied for") || !strings.Contains(msg, "[redacted]") {
				t.Errorf("the server's message should stay, scrubbed: %s", msg)
			}
		})
	}
}

func TestCredentialForms(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("u:secretpw"))
	forms := CredentialForms("Basic " + basic)
	for _, want := range []string{"Basic " + basic, basic, "u:secretpw", "secretpw", url.QueryEscape(basic)} {
		if !slices.Contains(forms, want) {
			t.Errorf("CredentialForms lacks %q: %q", want, forms)
		}
	}
	if CredentialForms("") != nil {
		t.Error("no header, no forms")
	}
}

// An answer larger than the client's bound is an error once the bound is read, not a read to the
// end of the body.
func TestAnswersAreBoundedInBytes(t *testing.T) {
	var written atomic.Int64
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("[", 32<<10))
		for i := 0; i < 1000; i++ { // 32 MB offered
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	c.MaxBody = 64 << 10
	var out any
	err := c.Do(context.Background(), "GET", "/big", nil, nil, &out)
	if err == nil || !strings.Contains(err.Error(), "larger than 65536 bytes") || !strings.Contains(err.Error(), "test.url") {
		t.Fatalf("err = %v", err)
	}
}
