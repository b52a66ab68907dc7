package warehouse

// MarkerReadAhead says whether the cached description of table may have its marker read beside
// a snapshot (false when it is not cached).
func MarkerReadAhead(w *DB, table string) bool {
	e, ok := w.catalog.get(table)
	return ok && e.readAhead
}
