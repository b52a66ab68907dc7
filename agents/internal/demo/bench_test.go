package demo

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkAfternoon times a whole warm run: stand-ins up, the scenario produced and landed, the
// five agents spawned and driven through the story, everything torn down. Builds happen before
// the timer starts.
func BenchmarkAfternoon(b *testing.B) {
	root := repo(b)
	if err := BuildAgents(context.Background(), root, os.Stderr); err != nil {
		b.Fatal(err)
	}
	home := b.TempDir()
	b.ResetTimer()
	for range b.N {
		if _, err := Run(context.Background(), Options{Root: root, Bin: filepath.Join(root, "bin"), Home: home}); err != nil {
			b.Fatal(err)
		}
	}
}
