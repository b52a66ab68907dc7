package compat_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func readScenario(t *testing.T, v int) string { return readScenarioB(t, v) }

func readScenarioB(t testing.TB, v int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "scenario", fmt.Sprintf("api-usage-value.v%d.avsc", v)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
