package config

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ActionClass says who may execute a class of remediation action and how long its approval request
// waits for a decision before escalating to the next person in the domain's escalation chain.
type ActionClass struct {
	// Executor is data_workers (Data Workers runs it once approved) or owner (Data Workers only
	// proposes it, with steps, and verifies afterwards).
	Executor string        `yaml:"executor"`
	Expiry   time.Duration `yaml:"expiry"`
}

// The action classes. Registering a schema is strict: it always needs a named approval, whatever the
// autonomy level. Connector, offset, topic, Flink statement, Tableflow and dbt code changes are the
// owner's to make.
const (
	ClassPauseJob         = "pause_job"
	ClassUnpauseJob       = "unpause_job"
	ClassTriggerJob       = "trigger_job"
	ClassTriggerDBTRun    = "trigger_dbt_run"
	ClassRegisterSchema   = "register_schema"
	ClassRestartConnector = "restart_connector"
	ClassResetOffsets     = "reset_offsets"
	ClassChangeTopic      = "change_topic"
	ClassFlinkStatement   = "flink_statement"
	ClassTableflow        = "tableflow"
	ClassDBTCode          = "dbt_code"
)

// Executors.
const (
	ExecutorDataWorkers = "data_workers"
	ExecutorOwner       = "owner"
)

// DefaultActionClasses are used for any class the config does not override.
var defaultActionClasses = map[string]ActionClass{
	ClassPauseJob:         {Executor: ExecutorDataWorkers, Expiry: 30 * time.Minute},
	ClassUnpauseJob:       {Executor: ExecutorDataWorkers, Expiry: 4 * time.Hour},
	ClassTriggerJob:       {Executor: ExecutorDataWorkers, Expiry: 4 * time.Hour},
	ClassTriggerDBTRun:    {Executor: ExecutorDataWorkers, Expiry: 4 * time.Hour},
	ClassRegisterSchema:   {Executor: ExecutorDataWorkers, Expiry: 24 * time.Hour},
	ClassRestartConnector: {Executor: ExecutorOwner, Expiry: 4 * time.Hour},
	ClassResetOffsets:     {Executor: ExecutorOwner, Expiry: 4 * time.Hour},
	ClassChangeTopic:      {Executor: ExecutorOwner, Expiry: 24 * time.Hour},
	ClassFlinkStatement:   {Executor: ExecutorOwner, Expiry: 4 * time.Hour},
	ClassTableflow:        {Executor: ExecutorOwner, Expiry: 24 * time.Hour},
	ClassDBTCode:          {Executor: ExecutorOwner, Expiry: 24 * time.Hour},
}

// ownerOnly classes can never be made Data Workers-executable by configuration.
var ownerOnly = []string{ClassRestartConnector, ClassResetOffsets, ClassChangeTopic, ClassFlinkStatement, ClassTableflow, ClassDBTCode}

// ActionClassNames lists every class, sorted.
func ActionClassNames() []string {
	names := make([]string, 0, len(defaultActionClasses))
	for n := range defaultActionClasses {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Class returns the effective settings of a class, and false for an unknown class.
func (c *Config) Class(name string) (ActionClass, bool) {
	def, ok := defaultActionClasses[name]
	if !ok {
		return ActionClass{}, false
	}
	if o, ok := c.ActionClasses[name]; ok {
		if o.Executor != "" {
			def.Executor = o.Executor
		}
		if o.Expiry > 0 {
			def.Expiry = o.Expiry
		}
	}
	return def, true
}

// IsOwnerOnly reports whether Data Workers must never execute the class itself.
func IsOwnerOnly(class string) bool { return slices.Contains(ownerOnly, class) }

func (c *Config) validateActionClasses(add func(string, ...any)) {
	for i, d := range c.Domains {
		for j, name := range d.Escalation {
			if _, ok := c.Approver(name); !ok {
				add("domains[%d].escalation[%d]: %q is not an approver of any domain; declare them under some domain's approvers (with token_sha256) so they can decide when a request escalates", i, j, name)
			}
		}
	}
	for name, ac := range c.ActionClasses {
		key := "action_classes." + name
		if _, ok := defaultActionClasses[name]; !ok {
			add("%s: unknown action class; use one of %s", key, strings.Join(ActionClassNames(), ", "))
			continue
		}
		switch ac.Executor {
		case "", ExecutorDataWorkers, ExecutorOwner:
		default:
			add("%s.executor: %q; use data_workers or owner", key, ac.Executor)
		}
		if ac.Executor == ExecutorDataWorkers && IsOwnerOnly(name) {
			add("%s.executor: %s is owner-only (connectors, offsets, topics, Flink statements, Tableflow and dbt code are changed by their owner); remove the override", key, name)
		}
		if ac.Expiry < 0 {
			add("%s.expiry: must not be negative", key)
		}
	}
}

// DomainFor returns the first domain whose asset patterns match the URN.
func (c *Config) DomainFor(urn string) (*Domain, bool) {
	return FindDomain(c.Domains, "", urn)
}

// FindDomain returns the domain called name when name is given (a monitor's domain), else the first
// whose asset patterns match the URN.
func FindDomain(domains []Domain, name, urn string) (*Domain, bool) {
	for i := range domains {
		if name != "" {
			if domains[i].Name == name {
				return &domains[i], true
			}
			continue
		}
		for _, p := range domains[i].Assets {
			if MatchPattern(p, urn) {
				return &domains[i], true
			}
		}
	}
	return nil, false
}

// Level is the domain's autonomy as a number, 0 (manual) to 4 (gate), or -1 when unset or invalid.
func (d Domain) Level() int {
	if autonomyRE().MatchString(d.Autonomy) {
		return int(d.Autonomy[1] - '0')
	}
	return -1
}

// MatchPattern matches a URN against a pattern where '*' stands for any run of characters
// (including '/' and '.', unlike path.Match, because URNs nest with both). Matching ignores case:
// warehouse identifiers fold (Snowflake upper-cases, PostgreSQL lower-cases).
func MatchPattern(pattern, s string) bool {
	pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, p := range parts[1:] {
		last := i == len(parts)-2
		if last {
			return strings.HasSuffix(s, p)
		}
		j := strings.Index(s, p)
		if j < 0 {
			return false
		}
		s = s[j+len(p):]
	}
	return true
}

// Approver finds a named approver in any domain.
func (c *Config) Approver(name string) (Approver, bool) {
	for _, d := range c.Domains {
		for _, a := range d.Approvers {
			if a.Name == name {
				return a, true
			}
		}
	}
	return Approver{}, false
}

// String names the class settings for messages.
func (a ActionClass) String() string {
	return fmt.Sprintf("executor=%s expiry=%s", a.Executor, a.Expiry)
}

// l3Eligible are the classes L3 may run without a new approval: reversible, and executed by Data
// Workers (orchestrator pause/unpause/trigger and dbt Cloud runs). register_schema is strict (always a
// named approval) and owner-only classes are never executed by Data Workers at all.
var l3Eligible = []string{ClassPauseJob, ClassUnpauseJob, ClassTriggerJob, ClassTriggerDBTRun}

// L3Eligible reports whether the class is one L3 may run without a new approval (given a clean record).
// It is the one list of those classes: remediation and plans both read it.
func L3Eligible(class string) bool { return slices.Contains(l3Eligible, class) }

// DomainsFor returns every domain whose asset patterns match the URN, in config order. A rule that
// relaxes approval (L3) must hold in all of them, not only in the first.
func (c *Config) DomainsFor(urn string) []*Domain {
	var out []*Domain
	for i := range c.Domains {
		if slices.ContainsFunc(c.Domains[i].Assets, func(p string) bool { return MatchPattern(p, urn) }) {
			out = append(out, &c.Domains[i])
		}
	}
	return out
}
