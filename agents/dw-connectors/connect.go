package main

import (
	"context"
	"strings"

	"github.com/dataworkers/dw/pkg/connect"
	"github.com/dataworkers/dw/pkg/mcpkit"
)

type listConnectorsParams struct {
	State string `json:"state,omitempty" jsonschema:"Only connectors in this state: RUNNING, PAUSED, FAILED, STOPPED, UNASSIGNED or RESTARTING"`
}

type listConnectorsResult struct {
	Connectors []connect.Connector `json:"connectors"`
	Count      int                 `json:"count"`
	// Unhealthy counts connectors whose connector or any task is not RUNNING.
	Unhealthy int `json:"unhealthy"`
}

func listConnectors(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("list_connectors",
		"List Kafka Connect connectors (self-managed workers, or Confluent Cloud managed connectors) with connector and "+
			"task states, failed-task traces, class, and the topics and target tables their configs declare (secrets "+
			"redacted). Use get_connector_status for one connector.",
		func(ctx context.Context, p listConnectorsParams) (listConnectorsResult, error) {
			c, err := connect.FromConfig(env.Config)
			if err != nil {
				return listConnectorsResult{}, err
			}
			all, err := c.ListConnectors(ctx)
			if err != nil {
				return listConnectorsResult{}, err
			}
			r := listConnectorsResult{Connectors: []connect.Connector{}}
			for _, cn := range all {
				if p.State != "" && !strings.EqualFold(cn.State, p.State) {
					continue
				}
				r.Connectors = append(r.Connectors, cn)
				if !cn.Healthy {
					r.Unhealthy++
				}
			}
			r.Count = len(r.Connectors)
			return r, nil
		})
}

type connectorStatusParams struct {
	ConnectorName string `json:"connector_name" jsonschema:"The connector's name as Kafka Connect knows it, e.g. orders-snowflake-sink"`
}

func getConnectorStatus(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("get_connector_status",
		"Status of one Kafka Connect connector: connector state and worker, each task's state, worker and failure trace, "+
			"its config (secrets redacted) and the topics it is actively using. Restarts are the connector owner's to run.",
		func(ctx context.Context, p connectorStatusParams) (connect.Connector, error) {
			c, err := connect.FromConfig(env.Config)
			if err != nil {
				return connect.Connector{}, err
			}
			conn, err := c.Get(ctx, p.ConnectorName)
			if err != nil {
				return connect.Connector{}, err
			}
			// Active topics need topic tracking (Kafka 2.5+); without it the config's topics stand.
			if topics, err := c.ActiveTopics(ctx, p.ConnectorName); err == nil {
				conn.Lineage.ActiveTopics = topics
			}
			return conn, nil
		})
}
