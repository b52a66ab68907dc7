package dbt

import (
	"runtime"
	"sync"

	"github.com/dataworkers/dw/pkg/graph"
)

// Converting a node (above all parsing its compiled SQL for column lineage) costs more than
// decoding it, so Convert decodes in one goroutine and converts on a few workers. The results are
// merged in manifest order, so a manifest always converts to the same batches, and at most
// pipelineDepth decoded nodes wait at once, so memory stays bounded.

// pipelineDepth is the most entries decoded but not yet merged.
const pipelineDepth = 256

// convertWorkers is how many goroutines convert entries: the cores this process may use, at most 4.
func convertWorkers() int { return min(runtime.GOMAXPROCS(0), 4) }

// convertJob is one decoded entry to convert: a node (a source when source is set) or an exposure.
type convertJob struct {
	node     *Node
	source   bool
	exposure *Exposure
	out      chan converted
}

// converted is what one entry converted to.
type converted struct {
	b  graph.Batch
	st Stats
}

// pipeline converts submitted entries on its workers and merges them, in order of submission, into
// the importer's batch, handing it on whenever it is full.
type pipeline struct {
	jobs    chan convertJob
	ordered chan chan converted
	stop    chan struct{} // closed when handing a batch on failed
	done    chan error    // the merger's error, once every entry is merged
	workers sync.WaitGroup
}

func (imp *importer) startPipeline(workers int) *pipeline {
	p := &pipeline{jobs: make(chan convertJob, pipelineDepth), ordered: make(chan chan converted, pipelineDepth),
		stop: make(chan struct{}), done: make(chan error, 1)}
	for range max(workers, 1) {
		p.workers.Add(1)
		go func() {
			defer p.workers.Done()
			for j := range p.jobs {
				j.out <- imp.convertOne(j)
			}
		}()
	}
	go func() {
		var err error
		for out := range p.ordered {
			c := <-out
			if err != nil {
				continue // drain: the walk stops at its next submit
			}
			imp.merge(c)
			if err = imp.flush(false); err != nil {
				close(p.stop)
			}
		}
		p.done <- err
	}()
	return p
}

// submit queues j behind every entry submitted before it; errStopped says the merger failed.
func (p *pipeline) submit(j convertJob) error {
	j.out = make(chan converted, 1)
	select {
	case p.ordered <- j.out:
	case <-p.stop:
		return errStopped
	}
	p.jobs <- j
	return nil
}

// wait ends the pipeline once everything submitted is merged, returning the merger's error.
func (p *pipeline) wait() error {
	close(p.jobs)
	close(p.ordered)
	err := <-p.done
	p.workers.Wait()
	return err
}

// convertOne converts one entry with an importer of its own that shares imp's read-only index.
func (imp *importer) convertOne(j convertJob) converted {
	w := &importer{m: imp.m, engine: imp.engine, relIndex: imp.relIndex}
	switch {
	case j.exposure != nil:
		w.exposure(j.exposure)
		w.st.Exposures++
	case j.source:
		w.source(j.node)
	default:
		w.model(j.node)
	}
	return converted{b: w.b, st: w.st}
}

// merge appends what one entry converted to.
func (imp *importer) merge(c converted) {
	appendBatch(&imp.b, c.b)
	st := &imp.st
	st.Models, st.Seeds, st.Snapshots = st.Models+c.st.Models, st.Seeds+c.st.Seeds, st.Snapshots+c.st.Snapshots
	st.Sources, st.Exposures, st.ColumnEdges = st.Sources+c.st.Sources, st.Exposures+c.st.Exposures, st.ColumnEdges+c.st.ColumnEdges
	st.WithoutCompiledSQL = append(st.WithoutCompiledSQL, c.st.WithoutCompiledSQL...)
}

// appendBatch appends src's rows, kept assets and warnings to dst.
func appendBatch(dst *graph.Batch, src graph.Batch) {
	dst.Assets = append(dst.Assets, src.Assets...)
	dst.Fields = append(dst.Fields, src.Fields...)
	dst.Edges = append(dst.Edges, src.Edges...)
	dst.KeepFieldEdgesInto = append(dst.KeepFieldEdgesInto, src.KeepFieldEdgesInto...)
	dst.Warnings = append(dst.Warnings, src.Warnings...)
}
