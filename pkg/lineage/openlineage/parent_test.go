package openlineage

import "testing"

// An Airflow task's events name the DAG run it belongs to in the parent run facet; the job keeps
// that parent so a plan can hold the DAG.
func TestTheParentRunFacetIsKeptOnTheJob(t *testing.T) {
	evs, err := Decode([]byte(`{"eventType":"COMPLETE","run":{"runId":"r1","facets":{"parent":{"run":{"runId":"p1"},"job":{"namespace":"airflow://sched","name":"carrier_billing"}}}},` +
		`"job":{"namespace":"airflow://sched","name":"carrier_billing.export_invoices"}}`))
	if err != nil {
		t.Fatal(err)
	}
	bs, err := ImportJobs(evs)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		for _, a := range b.Assets {
			if a.URN == JobURN("airflow://sched", "carrier_billing.export_invoices") {
				if a.Attrs["parent_job"] != "carrier_billing" || a.Attrs["parent_namespace"] != "airflow://sched" {
					t.Errorf("attrs %v", a.Attrs)
				}
				return
			}
		}
	}
	t.Fatalf("job not imported: %+v", bs)
}
