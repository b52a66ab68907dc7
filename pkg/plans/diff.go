package plans

import (
	"fmt"
	"strconv"
	"strings"
)

// A unified diff (the `diff -u` / `git diff` format) of one file. Proposals carry code changes as
// unified diffs because that is what an approver reads and what `git apply` / `patch -p1` take;
// Data Workers applies them itself only to prove they apply to the code as it is now.

// hunk is one @@ -oldStart,oldLen +newStart,newLen @@ block.
type hunk struct {
	oldStart, oldLen, newStart, newLen int
	lines                              []string // each starts with ' ', '-' or '+'
	// oldNoNL / newNoNL: a "\ No newline at end of file" marker says that side's last line (in
	// this hunk) ends the file without a newline.
	oldNoNL, newNoNL bool
}

// fileDiff is a parsed unified diff of one file.
type fileDiff struct {
	oldPath, newPath string // a/ and b/ prefixes removed; /dev/null as written
	hunks            []hunk
}

// maxDiffLines bounds a diff so hostile input cannot make the applier work without end.
const maxDiffLines = 100000

// diffPath reads the path of a ---/+++ line: up to a tab (diff -u puts a timestamp there), with
// git's a/ or b/ prefix removed.
func diffPath(l string) string {
	p := l[4:]
	if tab := strings.IndexByte(p, '\t'); tab >= 0 {
		p = p[:tab]
	}
	p = strings.TrimSpace(p)
	if rest, ok := strings.CutPrefix(p, "a/"); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(p, "b/"); ok {
		return rest
	}
	return p
}

// parseDiff reads a unified diff of exactly one file: optional header lines (diff --git, index),
// the --- and +++ file lines, then hunks.
func parseDiff(text string) (fileDiff, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) > maxDiffLines {
		return fileDiff{}, fmt.Errorf("diff has %d lines; at most %d are accepted", len(lines), maxDiffLines)
	}
	var d fileDiff
	i := 0
	for ; i < len(lines) && !strings.HasPrefix(lines[i], "@@"); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "--- "):
			if d.oldPath != "" {
				return fileDiff{}, fmt.Errorf("line %d: a second file header; give a diff of one file", i+1)
			}
			d.oldPath = diffPath(l)
		case strings.HasPrefix(l, "+++ "):
			if d.oldPath == "" {
				return fileDiff{}, fmt.Errorf("line %d: a +++ line without the --- line before it", i+1)
			}
			if d.newPath != "" {
				return fileDiff{}, fmt.Errorf("line %d: a second file header; give a diff of one file", i+1)
			}
			d.newPath = diffPath(l)
		case strings.HasPrefix(l, "diff "), strings.HasPrefix(l, "index "), strings.HasPrefix(l, "new file"), strings.HasPrefix(l, "deleted file"),
			strings.HasPrefix(l, "old mode"), strings.HasPrefix(l, "new mode"), strings.HasPrefix(l, "similarity"), strings.HasPrefix(l, "rename "), l == "":
		default:
			return fileDiff{}, fmt.Errorf("line %d: %q is not part of a unified diff header (want ---, +++ then @@ hunks)", i+1, clip(l))
		}
	}
	if d.oldPath == "" || d.newPath == "" {
		return fileDiff{}, fmt.Errorf("no --- and +++ file lines: give a unified diff (diff -u or git diff) of the model file")
	}
	for i < len(lines) {
		l := lines[i]
		if strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "diff ") {
			return fileDiff{}, fmt.Errorf("line %d: a second file in the diff; give a diff of one file", i+1)
		}
		if !strings.HasPrefix(l, "@@") {
			return fileDiff{}, fmt.Errorf("line %d: expected a @@ hunk header, found %q", i+1, clip(l))
		}
		header := l
		h, err := parseHunkHeader(l)
		if err != nil {
			return fileDiff{}, fmt.Errorf("line %d: %w", i+1, err)
		}
		i++
		olds, news := 0, 0
		// noNewline marks the side(s) of the line before a "\ No newline at end of file".
		noNewline := func() {
			if n := len(h.lines); n > 0 {
				switch h.lines[n-1][0] {
				case ' ':
					h.oldNoNL, h.newNoNL = true, true
				case '-':
					h.oldNoNL = true
				case '+':
					h.newNoNL = true
				}
			}
		}
		for i < len(lines) && (olds < h.oldLen || news < h.newLen) {
			l := lines[i]
			if strings.HasPrefix(l, `\ `) {
				noNewline()
				i++
				continue
			}
			if l == "" {
				l = " " // some tools drop the space of an empty context line
			}
			switch l[0] {
			case ' ':
				olds++
				news++
			case '-':
				olds++
			case '+':
				news++
			default:
				return fileDiff{}, fmt.Errorf("line %d: hunk line must start with ' ', '-' or '+', found %q", i+1, clip(l))
			}
			h.lines = append(h.lines, l)
			i++
		}
		if olds != h.oldLen || news != h.newLen {
			return fileDiff{}, fmt.Errorf("hunk %q: its header says %d old and %d new lines but it has %d and %d", clip(header), h.oldLen, h.newLen, olds, news)
		}
		for i < len(lines) && strings.HasPrefix(lines[i], `\ `) {
			noNewline()
			i++
		}
		d.hunks = append(d.hunks, h)
	}
	if len(d.hunks) == 0 {
		return fileDiff{}, fmt.Errorf("the diff has no @@ hunk")
	}
	return d, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// parseHunkHeader reads "@@ -a,b +c,d @@ optional section".
func parseHunkHeader(l string) (hunk, error) {
	rest := strings.TrimPrefix(l, "@@ ")
	end := strings.Index(rest, " @@")
	if end < 0 {
		return hunk{}, fmt.Errorf("malformed hunk header %q (want @@ -a,b +c,d @@)", clip(l))
	}
	parts := strings.Fields(rest[:end])
	if len(parts) != 2 || !strings.HasPrefix(parts[0], "-") || !strings.HasPrefix(parts[1], "+") {
		return hunk{}, fmt.Errorf("malformed hunk header %q (want @@ -a,b +c,d @@)", clip(l))
	}
	var h hunk
	var err error
	if h.oldStart, h.oldLen, err = rangeOf(parts[0][1:]); err != nil {
		return hunk{}, fmt.Errorf("hunk header %q: %w", clip(l), err)
	}
	if h.newStart, h.newLen, err = rangeOf(parts[1][1:]); err != nil {
		return hunk{}, fmt.Errorf("hunk header %q: %w", clip(l), err)
	}
	return h, nil
}

func rangeOf(s string) (start, n int, err error) {
	a, b, has := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil || start < 0 || start > maxDiffLines*10 {
		return 0, 0, fmt.Errorf("bad line number %q", a)
	}
	n = 1
	if has {
		if n, err = strconv.Atoi(b); err != nil || n < 0 || n > maxDiffLines {
			return 0, 0, fmt.Errorf("bad line count %q", b)
		}
	}
	return start, n, nil
}

// ApplyDiff applies a unified diff of one file to code and returns the patched code and the
// diff's (new) file path. Every hunk's context and removed lines must match the code exactly, at
// the stated line or (as patch does) at the nearest place they match, in order; otherwise the
// diff does not apply and the error says which hunk and why. A file without a final newline
// takes the "\ No newline at end of file" marker as git writes it; a CRLF file is patched by its
// lines and keeps its CRLF endings.
func ApplyDiff(code, diff string) (string, string, error) {
	d, err := parseDiff(diff)
	if err != nil {
		return "", "", err
	}
	out, err := applyParsed(code, d)
	if err != nil {
		return "", "", err
	}
	return out, d.newPath, nil
}

// crlfOnly reports whether every line break of s is CRLF (and there is at least one).
func crlfOnly(s string) bool {
	n := strings.Count(s, "\n")
	return n > 0 && strings.Count(s, "\r\n") == n
}

func applyParsed(code string, d fileDiff) (string, error) {
	crlf := crlfOnly(code)
	if crlf {
		code = strings.ReplaceAll(code, "\r\n", "\n")
	}
	noNL := code != "" && !strings.HasSuffix(code, "\n")
	src := splitLines(code)
	var out []string
	pos := 0 // next unconsumed line of src (0-based)
	for k, h := range d.hunks {
		var old, neu []string
		for _, l := range h.lines {
			switch l[0] {
			case ' ':
				old = append(old, l[1:])
				neu = append(neu, l[1:])
			case '-':
				old = append(old, l[1:])
			case '+':
				neu = append(neu, l[1:])
			}
		}
		want := h.oldStart - 1
		if h.oldLen == 0 {
			want = h.oldStart // an insertion after line oldStart
		}
		at := find(src, old, pos, want)
		if at < 0 {
			return "", fmt.Errorf("hunk %d (@@ -%d,%d @@) does not apply: its context and removed lines are not in the current code after line %d; regenerate the diff against the model as it is now",
				k+1, h.oldStart, h.oldLen, pos)
		}
		atEnd := at+len(old) == len(src)
		switch {
		case h.oldNoNL && (!atEnd || !noNL):
			return "", fmt.Errorf("hunk %d (@@ -%d,%d @@) does not apply: it says the file's last line has no newline, but the current code ends in one", k+1, h.oldStart, h.oldLen)
		case !h.oldNoNL && noNL && atEnd && len(old) > 0:
			return "", fmt.Errorf("hunk %d (@@ -%d,%d @@) does not apply: the current code's last line has no newline; the diff must say so with \"\\ No newline at end of file\"", k+1, h.oldStart, h.oldLen)
		}
		out = append(out, src[pos:at]...)
		out = append(out, neu...)
		pos = at + len(old)
		if atEnd {
			noNL = h.newNoNL
		}
	}
	out = append(out, src[pos:]...)
	res := strings.Join(out, "\n")
	if len(out) > 0 && !noNL {
		res += "\n"
	}
	if crlf {
		res = strings.ReplaceAll(res, "\n", "\r\n")
	}
	return res, nil
}

// find returns where block occurs in src at or after from, preferring the occurrence nearest
// want (the earlier one on a tie); -1 when it does not occur. The scan stops once a place is
// further past want than the best match so far.
func find(src, block []string, from, want int) int {
	best := -1
	for at := from; at+len(block) <= len(src); at++ {
		if best >= 0 && at-want > abs(best-want) {
			break
		}
		if !equalAt(src, block, at) {
			continue
		}
		if best < 0 || abs(at-want) < abs(best-want) {
			best = at
		}
	}
	return best
}

func equalAt(src, block []string, at int) bool {
	for i, l := range block {
		if src[at+i] != l {
			return false
		}
	}
	return true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// unifiedDiff writes the diff that turns old into new (one file, 3 lines of context) as
// `git diff` would, "\ No newline at end of file" included: the changed region is found by
// trimming the common prefix and suffix, which is exact for the single-region edits the
// generator makes.
func unifiedDiff(path, old, new string) string {
	a, b := splitLines(old), splitLines(new)
	aNoNL := old != "" && !strings.HasSuffix(old, "\n")
	bNoNL := new != "" && !strings.HasSuffix(new, "\n")
	lastA := func(i int) bool { return aNoNL && i == len(a)-1 }
	lastB := func(j int) bool { return bNoNL && j == len(b)-1 }
	// Two lines are the same when their text is and so is whether a newline ends them.
	same := func(i, j int) bool { return a[i] == b[j] && lastA(i) == lastB(j) }
	pre := 0
	for pre < len(a) && pre < len(b) && same(pre, pre) {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && same(len(a)-1-suf, len(b)-1-suf) {
		suf++
	}
	if pre == len(a) && pre == len(b) {
		return ""
	}
	const ctx = 3
	start := max(pre-ctx, 0)
	endA := min(len(a)-suf+ctx, len(a))
	endB := min(len(b)-suf+ctx, len(b))
	var sb strings.Builder
	line := func(prefix, text string, noNewline bool) {
		sb.WriteString(prefix + text + "\n")
		if noNewline {
			sb.WriteString("\\ No newline at end of file\n")
		}
	}
	fmt.Fprintf(&sb, "--- a/%s\n+++ b/%s\n", path, path)
	fmt.Fprintf(&sb, "@@ -%s +%s @@\n", span(start, endA-start), span(start, endB-start))
	for i := start; i < pre; i++ {
		line(" ", a[i], lastA(i))
	}
	for i := pre; i < len(a)-suf; i++ {
		line("-", a[i], lastA(i))
	}
	for j := pre; j < len(b)-suf; j++ {
		line("+", b[j], lastB(j))
	}
	for i := len(a) - suf; i < endA; i++ {
		line(" ", a[i], lastA(i))
	}
	return sb.String()
}

func span(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits text into lines without their newlines; "" has none.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
