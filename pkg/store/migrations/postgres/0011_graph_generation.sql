-- PostgreSQL twin of ../0011_graph_generation.sql: the context graph's structure generation, read
-- by every process to know whether its in-memory adjacency is current. Deleting an edge bumps it.
CREATE TABLE graph_generation (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    n  BIGINT NOT NULL
);
INSERT INTO graph_generation (id, n) VALUES (1, 0);

CREATE FUNCTION graph_generation_edge_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE graph_generation SET n = n + 1 WHERE id = 1;
    RETURN OLD;
END;
$$;
CREATE TRIGGER graph_generation_edge_delete AFTER DELETE ON graph_edges
    FOR EACH ROW EXECUTE FUNCTION graph_generation_edge_delete();

CREATE INDEX graph_edges_stale ON graph_edges (source) WHERE stale = 1;
