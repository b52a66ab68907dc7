package incidents

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dataworkers/dw/pkg/graph"
)

// Bounds on what an incident records: an asset is a URN, a summary a paragraph or two of evidence.
// Everything recorded is shown again (history, approvals, notifications), so nothing unbounded or
// invisible gets in.
const (
	MaxAssetBytes   = 512
	MaxSummaryRunes = 4000
)

// ValidateOpen checks an incident's identity and text at the door: the asset must be a
// well-formed URN (<system>:<identifier>, no "." or ".." path segments, no control, bidi or
// other invisible format characters) of bounded length, and the summary bounded text without
// such characters. The error names each problem without echoing the input.
func ValidateOpen(asset, summary string) error {
	var problems []string
	if err := CheckAsset(asset); err != nil {
		problems = append(problems, err.Error())
	}
	if err := CheckText("summary", summary, MaxSummaryRunes); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

// CheckAsset reports why asset is not a URN an incident may be opened on.
func CheckAsset(asset string) error {
	switch {
	case asset == "":
		return errors.New("asset: required (a URN such as warehouse:snowflake/DB.SCHEMA.TABLE)")
	case len(asset) > MaxAssetBytes:
		return fmt.Errorf("asset: %d bytes; a URN is at most %d", len(asset), MaxAssetBytes)
	case !utf8.ValidString(asset):
		return errors.New("asset: not valid UTF-8")
	}
	if r, ok := invisible(asset, false); ok {
		return fmt.Errorf("asset: contains the invisible or control character %U", r)
	}
	if strings.TrimSpace(asset) != asset {
		return errors.New("asset: leading or trailing white space")
	}
	if _, err := graph.ParseURN(asset); err != nil {
		return errors.New("asset: not a URN: want <system>:<identifier> with a lower-case system, e.g. kafka:topic/usage-events (get_asset or search_assets name the URNs the catalog knows)")
	}
	_, id, _ := strings.Cut(asset, ":")
	for _, seg := range strings.FieldsFunc(id, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == "." || seg == ".." {
			return errors.New("asset: a URN has no '.' or '..' path segments")
		}
	}
	return nil
}

// CheckText reports why text of the named field is not bounded, visible text: longer than max
// runes, invalid UTF-8, or holding control characters (other than new lines and tabs) or bidi
// overrides and other invisible format characters.
func CheckText(field, text string, max int) error {
	if !utf8.ValidString(text) {
		return fmt.Errorf("%s: not valid UTF-8", field)
	}
	if n := utf8.RuneCountInString(text); n > max {
		return fmt.Errorf("%s: %d characters; at most %d", field, n, max)
	}
	if r, ok := invisible(text, true); ok {
		return fmt.Errorf("%s: contains the invisible or control character %U", field, r)
	}
	return nil
}

// invisible finds the first control or format character (bidi overrides, zero-width characters);
// multiline allows new lines and tabs.
func invisible(s string, multiline bool) (rune, bool) {
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t' || r == '\r') {
			continue
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Bidi_Control, r) {
			return r, true
		}
	}
	return 0, false
}
