package dbt

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/store"
)

// benchModels is the project sizes BenchmarkImportManifest runs (DW_BENCH_MODELS, comma-separated,
// overrides 5,000 and 50,000). Manifests are generated only here, never by a test.
func benchModels() []int {
	sizes := []int{5000, 50000}
	if v := os.Getenv("DW_BENCH_MODELS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
				sizes = append(sizes, n)
			}
		}
	}
	return sizes
}

// peakRSS resets the process's peak resident set (Linux clear_refs 5) and returns a function that
// reads it in MB, or -1 where /proc cannot say.
func peakRSS() func() float64 {
	reset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	return func() float64 {
		raw, err := os.ReadFile("/proc/self/status")
		if err != nil || !reset {
			return -1
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
				return float64(kb) / 1024
			}
		}
		return -1
	}
}

// cpuSeconds is the user and system CPU time this process has used: on a shared machine it says
// what an import costs better than the wall clock does.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkImportManifest imports generated manifests into a new store each run, two ways side by
// side: streamed (what import_dbt_manifest does: the file read twice, an index pass and then, in
// one write transaction, a pass that decodes each entry and converts it on worker goroutines while
// the batches already converted are written) and whole (the file read into memory and converted to
// one batch, as before streaming).
func BenchmarkImportManifest(b *testing.B) {
	ctx := context.Background()
	var lockHeld time.Duration // streamed: from the write transaction's start (fill's call) to the commit
	for _, models := range benchModels() {
		path := filepath.Join(b.TempDir(), "manifest.json")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := writeManifest(f, models); err != nil {
			b.Fatal(err)
		}
		fi, _ := f.Stat()
		f.Close()
		ways := []struct {
			name string
			run  func(g *graph.Graph) (graph.ImportResult, error)
		}{
			{"streamed", func(g *graph.Graph) (graph.ImportResult, error) {
				f, err := os.Open(path)
				if err != nil {
					return graph.ImportResult{}, err
				}
				defer f.Close()
				m, err := Open(f)
				if err != nil {
					return graph.ImportResult{}, err
				}
				// ImportBatches begins the write transaction before it calls fill, which decodes
				// while the batches are written: the lock is held from here to the commit.
				var began time.Time
				res, err := g.ImportBatches(ctx, m.Source(), time.Time{}, func(put func(graph.Batch) error) error {
					began = time.Now()
					_, err := m.Stream("", put)
					return err
				})
				lockHeld += time.Since(began)
				return res, err
			}},
			{"whole", func(g *graph.Graph) (graph.ImportResult, error) {
				raw, err := os.ReadFile(path)
				if err != nil {
					return graph.ImportResult{}, err
				}
				m, err := Open(bytes.NewReader(raw))
				if err != nil {
					return graph.ImportResult{}, err
				}
				batch, _, err := Import(m, "")
				if err != nil {
					return graph.ImportResult{}, err
				}
				return g.Import(ctx, batch)
			}},
		}
		for _, w := range ways {
			lockHeld = 0
			b.Run(fmt.Sprintf("models=%d/%s", models, w.name), func(b *testing.B) {
				var peak, cpu float64
				var res graph.ImportResult
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					st, err := store.Open(ctx, filepath.Join(b.TempDir(), "dw.db"), store.Options{})
					if err != nil {
						b.Fatal(err)
					}
					g := graph.New(st, time.Now)
					read := peakRSS()
					cpu0 := cpuSeconds()
					b.StartTimer()
					if res, err = w.run(g); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					cpu += cpuSeconds() - cpu0
					peak = max(peak, read())
					st.Close()
					b.StartTimer()
				}
				b.ReportMetric(peak, "peak-RSS-MB")
				b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
				b.ReportMetric(float64(fi.Size())/(1<<20), "manifest-MB")
				b.ReportMetric(float64(res.Edges), "edges")
				b.ReportMetric(float64(res.Fields), "fields")
				if lockHeld > 0 {
					b.ReportMetric(lockHeld.Seconds()/float64(b.N), "write-lock-s/op")
				}
			})
		}
	}
}
