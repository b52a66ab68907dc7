package demo

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Step is one line of the timeline: who did what, and what it found.
type Step struct {
	At    time.Time `json:"at"`
	Actor string    `json:"actor"` // an agent, a person, or a system of the story
	Tool  string    `json:"tool"`
	Found string    `json:"found"`
}

// Timeline is the run's steps in order.
type Timeline []Step

// Column widths of the printed timeline (fixed, so rows print as they happen).
const (
	whoWidth   = 19
	toolWidth  = 32
	foundWidth = 84
)

// Header is the timeline table's first line.
func Header() string {
	return fmt.Sprintf("%-8s  %-*s  %-*s  %s", "TIME", whoWidth, "WHO", toolWidth, "TOOL", "WHAT IT FOUND")
}

// Write prints the timeline as a table: time, who, tool, what it found (wrapped).
func (t Timeline) Write(w io.Writer) {
	fmt.Fprintln(w, Header())
	t.writeRows(w)
}

func (t Timeline) writeRows(w io.Writer) {
	for _, s := range t {
		for i, l := range wrap(s.Found, foundWidth) {
			if i == 0 {
				fmt.Fprintf(w, "%-8s  %-*s  %-*s  %s\n", s.At.UTC().Format("15:04:05"), whoWidth, s.Actor, toolWidth, s.Tool, l)
			} else {
				fmt.Fprintf(w, "%-8s  %-*s  %-*s  %s\n", "", whoWidth, "", toolWidth, "", l)
			}
		}
	}
}

// wrap breaks s into lines of at most width runes at spaces.
func wrap(s string, width int) []string {
	var out []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
				out = append(out, line)
				line = word
				continue
			}
			if line != "" {
				line += " "
			}
			line += word
		}
		out = append(out, line)
	}
	return out
}
