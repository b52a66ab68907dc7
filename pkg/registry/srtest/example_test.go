package srtest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/registry/srtest"
	"github.com/dataworkers/dw/pkg/schema"
)

// The demo and tests start a registry on loopback and talk to it like any Schema Registry.
func ExampleStart() {
	srv, err := srtest.Start(srtest.Options{}) // or Options{Addr: "127.0.0.1:8081"}
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	c, _ := registry.New(&config.SchemaRegistry{URL: srv.URL, Timeout: 5 * time.Second})
	ctx := context.Background()
	v1 := `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`
	v2 := `{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"int"}]}`
	_, _ = c.Register(ctx, "r-value", schema.Avro, v1, nil)
	_, err = c.Register(ctx, "r-value", schema.Avro, v2, nil)
	fmt.Println(registry.IsCode(err, 40901))
	// Output: true
}
