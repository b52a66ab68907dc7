package quality

import (
	"fmt"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
)

// Due reports whether a monitor with this cron schedule is due at now, given its last run (zero
// when it never ran: a new monitor is due at once). It also returns the next time it will be due.
func Due(schedule string, loc *time.Location, last, now time.Time) (bool, time.Time, error) {
	sched, err := config.CronParser.Parse(schedule)
	if err != nil {
		return false, time.Time{}, fmt.Errorf("schedule %q: %w", schedule, err)
	}
	if loc == nil {
		loc = time.UTC
	}
	if last.IsZero() {
		return true, sched.Next(now.In(loc)), nil
	}
	next := sched.Next(last.In(loc))
	if !next.After(now) {
		return true, sched.Next(now.In(loc)), nil
	}
	return false, next, nil
}

// Domain is the domain that governs an asset, with its autonomy level (0 … 4), or level -1 when no
// domain claims the asset.
type Domain struct {
	Name  string `json:"name,omitempty"`
	Level int    `json:"level"`
}

// DomainFor finds the domain of an asset: the named one when given (a monitor's domain), else the
// first whose asset patterns match the URN ('*' matches any run of characters, case-insensitive
// because warehouse identifiers fold).
func DomainFor(domains []config.Domain, name, asset string) Domain {
	for _, d := range domains {
		if name != "" && d.Name != name {
			continue
		}
		if name == "" && !matchesAny(d.Assets, asset) {
			continue
		}
		lvl := -1
		if len(d.Autonomy) == 2 && d.Autonomy[0] == 'L' && d.Autonomy[1] >= '0' && d.Autonomy[1] <= '4' {
			lvl = int(d.Autonomy[1] - '0')
		}
		return Domain{Name: d.Name, Level: lvl}
	}
	return Domain{Level: -1}
}

func matchesAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if Match(p, s) {
			return true
		}
	}
	return false
}

// Match reports whether s matches pattern, where '*' matches any run of characters.
func Match(pattern, s string) bool {
	pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}
