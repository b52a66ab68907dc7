package store

import "strconv"

// metric_points has two halves (migration 0016): the settled points, indexed by series, and the
// pending ones a flush has not settled yet, indexed by time. Each half must name its settled
// value as a constant for the engine to use its partial index, so every read by asset and series
// goes through PointsHalf or PointsQuery (a read by run_id, served by the run index of migration
// 0017 whatever the half, need not).

// PointsHalf reads one half: cols (bare names of metric_points) of the rows of p (the table's
// alias) meeting where, ordered by orderBy (bare column names) and, when limit > 0, cut at a
// final `LIMIT ?` the caller binds after where's arguments. Read newest first within a series,
// each half stops early in its index.
func PointsHalf(settled bool, cols, where, orderBy string, limit int) string {
	flag := 0
	if settled {
		flag = 1
	}
	q := "SELECT " + cols + " FROM metric_points p WHERE p.settled = " + strconv.Itoa(flag) + " AND (" + where + ") ORDER BY " + orderBy
	if limit > 0 {
		q += " LIMIT ?"
	}
	return q
}

// PointsQuery reads both halves in one statement: cols of the rows meeting where (args its
// arguments), ordered by orderBy, each column of which must be among cols, and cut at limit when
// limit > 0 (each half applies it too). The statement's arguments are returned: where's twice,
// then the limits. The engine sorts the union again, so a read of many rows in order
// (History.series) reads the halves apart and merges them.
func PointsQuery(cols, where, orderBy string, args []any, limit int) (string, []any) {
	q := "SELECT " + cols + " FROM (SELECT * FROM (" + PointsHalf(true, cols, where, orderBy, limit) +
		") AS settled UNION ALL SELECT * FROM (" + PointsHalf(false, cols, where, orderBy, limit) + ") AS pending) AS p ORDER BY " + orderBy
	all := make([]any, 0, 2*len(args)+3)
	all = append(all, args...)
	if limit > 0 {
		all = append(all, limit)
	}
	all = append(all, args...)
	if limit > 0 {
		all = append(all, limit, limit)
		q += " LIMIT ?"
	}
	return q, all
}

// SettlePointsSQL settles every pending point: one statement that moves them from the time index
// into the series index. It changes nothing a read returns.
const SettlePointsSQL = `UPDATE metric_points SET settled = 1 WHERE settled = 0`
