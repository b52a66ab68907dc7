package incidents

import (
	"errors"
	"fmt"
)

// PersonStatuses are the statuses a person may set by hand. Resolved is not among them: it comes
// from verify_incident, when the incident's checks pass again.
var PersonStatuses = []string{StatusAcknowledged, StatusInvestigating, StatusMitigated, StatusFalsePositive, StatusExpected}

// CheckPersonStatus says why a person may not set status, or nil when they may.
func CheckPersonStatus(status string) error {
	for _, s := range PersonStatuses {
		if s == status {
			return nil
		}
	}
	if status == StatusResolved {
		return errors.New("resolved comes from verify_incident, when the incident's checks pass; a person can mark it mitigated, false_positive or expected")
	}
	return fmt.Errorf("status %q: use acknowledged, investigating, mitigated, false_positive or expected", status)
}
