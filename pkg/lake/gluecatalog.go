package lake

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	gluetypes "github.com/aws/aws-sdk-go-v2/service/glue/types"
)

// glueCatalog reads Iceberg tables registered in AWS Glue: a Glue database is a namespace, and an
// Iceberg table is a Glue table whose parameters carry table_type ICEBERG and metadata_location.
type glueCatalog struct {
	client    *glue.Client
	catalogID *string
}

func openGlueCatalog(ctx context.Context, region, catalogID, endpoint string) (*glueCatalog, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS credentials (default chain): %w", err)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("no AWS region: set lake.region")
	}
	client := glue.NewFromConfig(cfg, func(o *glue.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	c := &glueCatalog{client: client}
	if catalogID != "" {
		c.catalogID = aws.String(catalogID)
	}
	return c, nil
}

func (c *glueCatalog) locate(ctx context.Context, id []string) (string, *Metadata, map[string]string, error) {
	if len(id) != 2 {
		return "", nil, nil, fmt.Errorf("glue catalog: a table is <database>.<table>, not %s", strings.Join(id, "."))
	}
	out, err := c.client.GetTable(ctx, &glue.GetTableInput{CatalogId: c.catalogID, DatabaseName: aws.String(id[0]), Name: aws.String(id[1])})
	var nf *gluetypes.EntityNotFoundException
	if errors.As(err, &nf) {
		return "", nil, nil, errNoSuchTable
	}
	if err != nil {
		return "", nil, nil, fmt.Errorf("glue: get table %s: %w", strings.Join(id, "."), err)
	}
	if !isGlueIceberg(out.Table) {
		return "", nil, nil, fmt.Errorf("glue: %s is not an Iceberg table (no table_type ICEBERG)", strings.Join(id, "."))
	}
	loc := out.Table.Parameters["metadata_location"]
	if loc == "" {
		return "", nil, nil, fmt.Errorf("glue: %s has no metadata_location", strings.Join(id, "."))
	}
	return loc, nil, nil, nil
}

func isGlueIceberg(t *gluetypes.Table) bool {
	return t != nil && strings.EqualFold(t.Parameters["table_type"], "ICEBERG")
}

func (c *glueCatalog) listTables(ctx context.Context, namespace []string) ([][]string, error) {
	if len(namespace) != 1 {
		return nil, fmt.Errorf("glue catalog: a namespace is one Glue database, not %s", strings.Join(namespace, "."))
	}
	var out [][]string
	p := glue.NewGetTablesPaginator(c.client, &glue.GetTablesInput{CatalogId: c.catalogID, DatabaseName: aws.String(namespace[0])})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("glue: list tables of %s: %w", namespace[0], err)
		}
		for i := range page.TableList {
			if t := &page.TableList[i]; isGlueIceberg(t) {
				out = append(out, []string{namespace[0], aws.ToString(t.Name)})
			}
		}
	}
	return out, nil
}

func (c *glueCatalog) listNamespaces(ctx context.Context) ([][]string, error) {
	var out [][]string
	p := glue.NewGetDatabasesPaginator(c.client, &glue.GetDatabasesInput{CatalogId: c.catalogID})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("glue: list databases: %w", err)
		}
		for _, d := range page.DatabaseList {
			out = append(out, []string{aws.ToString(d.Name)})
		}
	}
	return out, nil
}

func (c *glueCatalog) close() error { return nil }
