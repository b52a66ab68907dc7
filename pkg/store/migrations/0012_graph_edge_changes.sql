-- Which edges each graph generation changed (pkg/graph), so a process holding the adjacency at an
-- older generation patches it with the edges named here (plus every edge above its highest id)
-- instead of reading the whole edge table again. A writer that bumps graph_generation.n logs, in
-- the same transaction and under the new n, the ids of the edges it marked stale or revived; the
-- delete trigger logs the deleted id. Only the last generations are kept: logged_from is the
-- oldest n whose successors are all logged, and a snapshot older than it is loaded afresh. A
-- writer that changes too many edges to be worth logging moves logged_from up to its own n.
ALTER TABLE graph_generation ADD COLUMN logged_from INTEGER NOT NULL DEFAULT 0;
UPDATE graph_generation SET logged_from = n WHERE id = 1;

CREATE TABLE graph_edge_changes (
    gen     INTEGER NOT NULL,
    edge_id INTEGER NOT NULL,
    PRIMARY KEY (gen, edge_id)
) WITHOUT ROWID;

DROP TRIGGER graph_generation_edge_delete;
CREATE TRIGGER graph_generation_edge_delete AFTER DELETE ON graph_edges
BEGIN
    UPDATE graph_generation SET n = n + 1 WHERE id = 1;
    INSERT OR IGNORE INTO graph_edge_changes (gen, edge_id) SELECT n, OLD.id FROM graph_generation WHERE id = 1;
END;
