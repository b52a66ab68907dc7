package remediation

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// raceEnv carries a dispatcher process's instructions (JSON of raceSpec).
const raceEnv = "DW_REMEDIATION_RACE"

type raceSpec struct {
	Path, URL                        string
	AirflowURL, AirflowToken, DBTURL string
	RequestID                        int64
	StartUnixNano                    int64
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(raceEnv); spec != "" {
		os.Exit(dispatchProcess(spec))
	}
	os.Exit(m.Run())
}

// dispatchProcess is one OS process that opens the store and dispatches the approval at the
// agreed instant: exit 0 when it dispatched, 1 when it was refused, 3 on a setup failure.
func dispatchProcess(raw string) int {
	var s raceSpec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	ctx := context.Background()
	st, err := store.Open(ctx, s.Path, store.Options{URL: s.URL, BusyTimeout: 30 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 3
	}
	defer st.Close()
	_, e := executorFor(st, testConfig(s.AirflowURL, s.AirflowToken, s.DBTURL, "L2"))
	time.Sleep(time.Until(time.Unix(0, s.StartUnixNano)))
	if _, err := e.Run(ctx, s.RequestID); err != nil {
		fmt.Println("refused:", err)
		return 1
	}
	fmt.Println("dispatched")
	return 0
}

// Five OS processes, each with its own store connections, race to dispatch one approval: exactly
// one dispatches it, on both engines.
func TestFiveOSProcessesDispatchAnApprovalOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	storetest.Engines(t, func(t *testing.T, d store.Dialect) {
		w := newWorldOn(t, "L2", d)
		r := w.approved(t, approvals.Proposal{IncidentID: 3, Class: config.ClassTriggerJob, Target: "job:airflow/sync_metered_usage_to_stripe",
			Title: "Re-send today", Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe"}})
		spec, _ := json.Marshal(raceSpec{Path: w.st.Path(), URL: w.opts.URL, AirflowURL: w.cfg.Airflow.URL, AirflowToken: w.cfg.Airflow.Token,
			DBTURL: w.cfg.DBT.Cloud.URL, RequestID: r.ID, StartUnixNano: time.Now().Add(700 * time.Millisecond).UnixNano()})
		const procs = 5
		outs := make([]string, procs)
		codes := make([]int, procs)
		var wg sync.WaitGroup
		for i := 0; i < procs; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), raceEnv+"="+string(spec))
				out, err := cmd.CombinedOutput()
				outs[i] = string(out)
				if ee, ok := err.(*exec.ExitError); ok {
					codes[i] = ee.ExitCode()
				} else if err != nil {
					codes[i] = -1
				}
			}()
		}
		wg.Wait()
		dispatched := 0
		for i, c := range codes {
			switch c {
			case 0:
				dispatched++
			case 1:
				if strings.Contains(outs[i], "lock") && strings.Contains(outs[i], "timeout") {
					t.Errorf("process %d hit a lock timeout: %s", i, outs[i])
				}
			default:
				t.Errorf("process %d: exit %d: %s", i, c, outs[i])
			}
		}
		if runs := w.airflow.Runs(); dispatched != 1 || len(runs) != 1 {
			t.Fatalf("%d processes dispatched, %d runs on the orchestrator; want 1 and 1:\n%s", dispatched, len(runs), strings.Join(outs, "\n"))
		}
		if as, _ := w.exec.ForIncident(context.Background(), 3); len(as) != 1 || as[0].Status != StatusSucceeded {
			t.Fatalf("recorded %+v", as)
		}
	})
}
