package incidents

import (
	"strings"
	"testing"
)

func TestCheckPersonStatus(t *testing.T) {
	for _, s := range PersonStatuses {
		if err := CheckPersonStatus(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if err := CheckPersonStatus(StatusResolved); err == nil || !strings.Contains(err.Error(), "verify_incident") {
		t.Errorf("resolved: %v", err)
	}
	if err := CheckPersonStatus("closed"); err == nil || !strings.Contains(err.Error(), `"closed"`) {
		t.Errorf("unknown: %v", err)
	}
}
