package lake

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	iceio "github.com/apache/iceberg-go/io"
)

// hadoopCatalog is a warehouse path laid out as Iceberg's Hadoop catalog lays it out:
// <warehouse>/<namespace…>/<table>/metadata/v<N>.metadata.json, with version-hint.text naming N.
type hadoopCatalog struct {
	root string
	fs   iceio.IO
}

func openHadoopCatalog(ctx context.Context, warehouse string, props map[string]string) (*hadoopCatalog, error) {
	if warehouse == "" {
		return nil, fmt.Errorf("set lake.warehouse to the warehouse path (file:///data/lake, s3://bucket/lake)")
	}
	fsys, err := loadFS(ctx, props, warehouse)
	if err != nil {
		return nil, fmt.Errorf("open the warehouse %s: %w", warehouse, err)
	}
	return &hadoopCatalog{root: strings.TrimRight(warehouse, "/"), fs: fsys}, nil
}

var metadataFile = regexp.MustCompile(`^v([0-9]+)\.metadata\.json$`)

func (c *hadoopCatalog) path(parts ...string) string { return c.root + "/" + strings.Join(parts, "/") }

func (c *hadoopCatalog) locate(_ context.Context, id []string) (string, *Metadata, map[string]string, error) {
	dir := c.path(append(append([]string{}, id...), "metadata")...)
	if f, err := c.fs.Open(dir + "/version-hint.text"); err == nil {
		data, err := io.ReadAll(io.LimitReader(f, 64))
		f.Close()
		if n, perr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && perr == nil && n > 0 {
			loc := fmt.Sprintf("%s/v%d.metadata.json", dir, n)
			if g, err := c.fs.Open(loc); err == nil {
				g.Close()
				return loc, nil, nil, nil
			}
		}
	}
	// No usable hint: the highest version in the metadata directory is the current one.
	names, err := c.readDir(dir)
	if err != nil {
		return "", nil, nil, errNoSuchTable
	}
	best := 0
	for _, n := range names {
		if m := metadataFile.FindStringSubmatch(n); m != nil {
			if v, _ := strconv.Atoi(m[1]); v > best {
				best = v
			}
		}
	}
	if best == 0 {
		return "", nil, nil, errNoSuchTable
	}
	return fmt.Sprintf("%s/v%d.metadata.json", dir, best), nil, nil, nil
}

func (c *hadoopCatalog) isTable(parts []string) bool {
	names, err := c.readDir(c.path(append(append([]string{}, parts...), "metadata")...))
	if err != nil {
		return false
	}
	for _, n := range names {
		if metadataFile.MatchString(n) {
			return true
		}
	}
	return false
}

func (c *hadoopCatalog) listTables(_ context.Context, namespace []string) ([][]string, error) {
	names, err := c.readDir(c.path(namespace...))
	if err != nil {
		return nil, fmt.Errorf("hadoop catalog: list %s: %w", c.path(namespace...), err)
	}
	var out [][]string
	for _, n := range names {
		id := append(append([]string{}, namespace...), n)
		if c.isTable(id) {
			out = append(out, id)
		}
	}
	return out, nil
}

func (c *hadoopCatalog) listNamespaces(context.Context) ([][]string, error) {
	names, err := c.readDir(c.root)
	if err != nil {
		return nil, fmt.Errorf("hadoop catalog: list %s: %w", c.root, err)
	}
	var out [][]string
	for _, n := range names {
		if !c.isTable([]string{n}) {
			out = append(out, []string{n})
		}
	}
	return out, nil
}

// readDir lists the entry names of a directory of the warehouse, sorted. The name ends in "/" so
// that an object store lists the prefix rather than look for an object of that name.
func (c *hadoopCatalog) readDir(dir string) ([]string, error) {
	f, err := c.fs.Open(strings.TrimSuffix(dir, "/") + "/")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, ok := f.(fs.ReadDirFile)
	if !ok {
		return nil, fmt.Errorf("the file IO of %s cannot list directories", dir)
	}
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func (c *hadoopCatalog) close() error { return nil }
