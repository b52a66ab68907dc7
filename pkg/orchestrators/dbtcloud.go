package orchestrators

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/httpapi"
)

// ErrDBTCloudNotConfigured is returned when dbt.cloud is missing.
var ErrDBTCloudNotConfigured = errors.New("dbt Cloud is not configured: add dbt.cloud (url, account_id, token) to the config")

// DBTCloud is the dbt Cloud Administrative API v2.
type DBTCloud struct {
	api     *httpapi.Client
	account string
}

// DBTRun is a dbt Cloud run. Status is an integer: 1 Queued, 2 Starting, 3 Running, 10 Success,
// 20 Error, 30 Cancelled.
type DBTRun struct {
	ID              int64  `json:"id"`
	JobDefinitionID int64  `json:"job_definition_id"`
	Status          int    `json:"status"`
	StatusHumanized string `json:"status_humanized"`
	StatusMessage   string `json:"status_message"`
	Href            string `json:"href"`
}

// Terminal reports whether the run has finished (success, error or cancelled).
func (r DBTRun) Terminal() bool { return r.Status == 10 || r.Status == 20 || r.Status == 30 }

// Succeeded reports whether the run finished successfully.
func (r DBTRun) Succeeded() bool { return r.Status == 10 }

// NewDBTCloud builds a client; it does not connect.
func NewDBTCloud(c *config.DBT) (*DBTCloud, error) {
	if c == nil || c.Cloud == nil {
		return nil, ErrDBTCloudNotConfigured
	}
	api, err := httpapi.New("dbt cloud", c.Cloud.URL, "dbt.cloud", httpapi.TokenHeader(c.Cloud.Token), c.Cloud.Timeout)
	if err != nil {
		return nil, err
	}
	return &DBTCloud{api: api, account: strconv.FormatInt(c.Cloud.AccountID, 10)}, nil
}

type dbtEnvelope[T any] struct {
	Data T `json:"data"`
}

// TriggerJob starts a run of jobID; cause (at most 255 characters) says why, and is shown in dbt Cloud.
func (d *DBTCloud) TriggerJob(ctx context.Context, jobID int64, cause string) (DBTRun, error) {
	if len(cause) > 255 {
		cause = cause[:255]
	}
	var env dbtEnvelope[DBTRun]
	path := fmt.Sprintf("/api/v2/accounts/%s/jobs/%d/run/", d.account, jobID)
	if err := d.api.Do(ctx, "POST", path, nil, map[string]string{"cause": cause}, &env); err != nil {
		return DBTRun{}, err
	}
	if env.Data.ID == 0 {
		return DBTRun{}, fmt.Errorf("dbt cloud: job %d: the run answer carried no run id", jobID)
	}
	return env.Data, nil
}

// GetRun reads a run.
func (d *DBTCloud) GetRun(ctx context.Context, runID int64) (DBTRun, error) {
	var env dbtEnvelope[DBTRun]
	err := d.api.Do(ctx, "GET", fmt.Sprintf("/api/v2/accounts/%s/runs/%d/", d.account, runID), nil, nil, &env)
	return env.Data, err
}

// WaitRun polls a run every interval until it is terminal or ctx ends.
func (d *DBTCloud) WaitRun(ctx context.Context, runID int64, interval time.Duration) (DBTRun, error) {
	for {
		run, err := d.GetRun(ctx, runID)
		if err != nil || run.Terminal() {
			return run, err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return run, fmt.Errorf("dbt cloud: run %d still %s: %w", runID, run.StatusHumanized, ctx.Err())
		case <-t.C:
		}
	}
}
