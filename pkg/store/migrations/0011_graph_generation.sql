-- The context graph's structure generation (pkg/graph). Each process keeps an in-memory adjacency
-- of graph_edges for fast traversals and reuses it while the edges a traversal follows are
-- unchanged. Readers check that with one read of two O(1) values: n below and max(graph_edges.id).
-- An added edge raises max(id) (edges are only ever appended: rowids grow); pkg/graph bumps n in
-- the writer's own transaction when edges go stale or come back; the trigger bumps it when an edge
-- is deleted. Re-asserting an edge as it was (a periodic re-sync) changes neither, because it only
-- refreshes evidence, which traversals read from graph_edges anyway. (Triggers on insert and update
-- would say the same, but they doubled the cost of importing edges.)
CREATE TABLE graph_generation (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO graph_generation (id, n) VALUES (1, 0);

CREATE TRIGGER graph_generation_edge_delete AFTER DELETE ON graph_edges
BEGIN
    UPDATE graph_generation SET n = n + 1 WHERE id = 1;
END;

-- Finds a source's stale edges without reading its live ones: an import compares the count before
-- and after its upserts to know whether it revived any.
CREATE INDEX graph_edges_stale ON graph_edges (source) WHERE stale = 1;
