-- PostgreSQL twin of ../0012_graph_edge_changes.sql: which edges each graph generation changed, so
-- a process patches its adjacency instead of reloading it; the delete trigger logs deleted ids.
ALTER TABLE graph_generation ADD COLUMN logged_from BIGINT NOT NULL DEFAULT 0;
UPDATE graph_generation SET logged_from = n WHERE id = 1;

CREATE TABLE graph_edge_changes (
    gen     BIGINT NOT NULL,
    edge_id BIGINT NOT NULL,
    PRIMARY KEY (gen, edge_id)
);

CREATE OR REPLACE FUNCTION graph_generation_edge_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE graph_generation SET n = n + 1 WHERE id = 1;
    INSERT INTO graph_edge_changes (gen, edge_id) SELECT n, OLD.id FROM graph_generation WHERE id = 1
        ON CONFLICT DO NOTHING;
    RETURN OLD;
END;
$$;
