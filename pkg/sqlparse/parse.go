package sqlparse

import (
	"strings"
)

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 200

type parser struct {
	src   string
	toks  []token
	i     int
	depth int
}

// Parse parses exactly one statement (a trailing ';' is allowed).
func Parse(src string) (Statement, error) {
	stmts, skipped, err := ParseScript(src)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		msg := "want exactly one INSERT, CREATE TABLE … AS or SELECT statement"
		if len(skipped) > 0 {
			msg += " (skipped: " + strings.Join(skipped, ", ") + ")"
		}
		return nil, newSyntaxError(src, 0, "%s, found %d", msg, len(stmts))
	}
	return stmts[0], nil
}

// ParseScript parses ';'-separated statements, including Flink's EXECUTE STATEMENT SET BEGIN …
// END. Statements that carry no lineage (SET, USE, RESET, plain CREATE TABLE/DROP/ALTER…) are
// skipped and named in skipped.
func ParseScript(src string) (stmts []Statement, skipped []string, err error) {
	toks, err := lex(src)
	if err != nil {
		return nil, nil, err
	}
	p := &parser{src: src, toks: toks}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*SyntaxError)
			if !ok {
				panic(r)
			}
			stmts, skipped, err = nil, nil, se
		}
	}()
	for {
		for p.acceptOp(";") {
		}
		if p.peek().kind == tEOF {
			return stmts, skipped, nil
		}
		if p.isKw("EXECUTE") && p.isKwAt(1, "STATEMENT") || p.isKw("STATEMENT") && p.isKwAt(1, "SET") || p.isKw("BEGIN") && p.isKwAt(1, "STATEMENT") {
			p.acceptKw("EXECUTE")
			if p.acceptKw("BEGIN") {
				p.expectKw("STATEMENT")
				p.expectKw("SET")
			} else {
				p.expectKw("STATEMENT")
				p.expectKw("SET")
				p.expectKw("BEGIN")
			}
			for {
				for p.acceptOp(";") {
				}
				if p.acceptKw("END") {
					break
				}
				stmts = append(stmts, p.statement())
				if !p.acceptOp(";") && !p.isKw("END") {
					p.fail("expected ';' or END in STATEMENT SET, found %s", p.peek())
				}
			}
			continue
		}
		if s, ok := p.tryStatement(); ok {
			stmts = append(stmts, s)
		} else if t := p.peek(); t.kind == tIdent && skippable[strings.ToUpper(t.text)] {
			skipped = append(skipped, p.skipStatement())
			continue
		} else {
			p.fail("expected a statement (INSERT, CREATE … AS, SELECT, SET…), found %s", t)
		}
		if !p.acceptOp(";") && p.peek().kind != tEOF {
			p.fail("expected ';' or end of input after the statement, found %s", p.peek())
		}
	}
}

func (p *parser) tryStatement() (Statement, bool) {
	switch {
	case p.isKw("SELECT"), p.isKw("WITH"), p.isOp("("), p.isKw("VALUES"):
		return &QueryStatement{Query: p.query()}, true
	case p.isKw("INSERT"):
		return p.insert(), true
	case p.isKw("CREATE"):
		if p.createIsAs() {
			return p.createAs(), true
		}
	}
	return nil, false
}

func (p *parser) statement() Statement {
	s, ok := p.tryStatement()
	if !ok {
		p.fail("expected INSERT, CREATE TABLE … AS or SELECT, found %s", p.peek())
	}
	return s
}

// skipStatement steps over a statement with no lineage, up to the next top-level ';'.
func (p *parser) skipStatement() string {
	first := strings.ToUpper(p.peek().text)
	level := 0
	for {
		t := p.peek()
		if t.kind == tEOF || level == 0 && t.kind == tOp && t.text == ";" {
			return first
		}
		if t.kind == tOp && t.text == "(" {
			level++
		}
		if t.kind == tOp && t.text == ")" && level > 0 {
			level--
		}
		p.i++
	}
}

// createIsAs looks ahead for a top-level AS followed by a query.
func (p *parser) createIsAs() bool {
	level := 0
	for j := p.i; j < len(p.toks); j++ {
		t := p.toks[j]
		switch {
		case t.kind == tEOF, t.kind == tOp && t.text == ";" && level == 0:
			return false
		case t.kind == tOp && t.text == "(":
			level++
		case t.kind == tOp && t.text == ")":
			level--
		case level == 0 && t.kind == tIdent && strings.EqualFold(t.text, "AS"):
			n := p.toks[j+1]
			if n.kind == tIdent && (strings.EqualFold(n.text, "SELECT") || strings.EqualFold(n.text, "WITH")) || n.kind == tOp && n.text == "(" {
				return true
			}
		}
	}
	return false
}

func (p *parser) insert() *Insert {
	p.expectKw("INSERT")
	if !p.acceptKw("INTO") && !p.acceptKw("OVERWRITE") {
		p.fail("expected INTO or OVERWRITE after INSERT, found %s", p.peek())
	}
	p.acceptKw("INTO")
	p.acceptKw("TABLE")
	ins := &Insert{Table: p.qualifiedName()}
	if p.acceptKw("PARTITION") {
		p.skipParens()
	}
	if p.isOp("(") && !p.startsQueryAt(1) {
		ins.Columns = p.identList()
	}
	ins.Query = p.query()
	return ins
}

func (p *parser) createAs() *CreateTableAs {
	p.expectKw("CREATE")
	c := &CreateTableAs{}
	if p.acceptKw("OR") {
		p.expectKw("REPLACE")
	}
	for p.acceptKw("TEMPORARY") || p.acceptKw("TEMP") || p.acceptKw("TRANSIENT") || p.acceptKw("VOLATILE") ||
		p.acceptKw("LOCAL") || p.acceptKw("GLOBAL") || p.acceptKw("SECURE") || p.acceptKw("MATERIALIZED") || p.acceptKw("RECURSIVE") {
	}
	switch {
	case p.acceptKw("TABLE"):
	case p.acceptKw("VIEW"):
		c.View = true
	default:
		p.fail("expected TABLE or VIEW after CREATE, found %s", p.peek())
	}
	if p.acceptKw("IF") {
		p.expectKw("NOT")
		p.expectKw("EXISTS")
	}
	c.Table = p.qualifiedName()
	if p.isOp("(") {
		c.Columns = p.columnDefs()
	}
	// Options (WITH (…), COMMENT, PARTITIONED BY, DISTRIBUTED BY, CLUSTER BY, COPY GRANTS…) up to AS.
	for !(p.isKw("AS") && (p.isKwAt(1, "SELECT") || p.isKwAt(1, "WITH") || p.isOpAt(1, "("))) {
		if p.peek().kind == tEOF {
			p.fail("expected AS before the query of CREATE … AS")
		}
		if p.isOp("(") {
			p.skipParens()
			continue
		}
		p.i++
	}
	p.expectKw("AS")
	c.Query = p.query()
	return c
}

// columnDefs reads (a, b) or (a INT, b STRING, PRIMARY KEY (a) NOT ENFORCED, WATERMARK FOR …).
func (p *parser) columnDefs() []string {
	p.expectOp("(")
	var cols []string
	for {
		t := p.peek()
		if t.kind == tIdent && (p.isKw("PRIMARY") || p.isKw("WATERMARK") || p.isKw("CONSTRAINT") || p.isKw("UNIQUE") || p.isKw("PERIOD") || p.isKw("FOREIGN")) {
			// not a column
		} else if t.kind == tIdent || t.kind == tQuoted {
			cols = append(cols, t.text)
		} else {
			p.fail("expected a column name, found %s", t)
		}
		level := 0
		for {
			t := p.peek()
			if t.kind == tEOF {
				p.fail("unterminated column list")
			}
			if level == 0 && t.kind == tOp && (t.text == "," || t.text == ")") {
				break
			}
			if t.kind == tOp && (t.text == "(" || t.text == "<") {
				level++
			}
			if t.kind == tOp && (t.text == ")" || t.text == ">") {
				level--
			}
			p.i++
		}
		if p.acceptOp(")") {
			return cols
		}
		p.expectOp(",")
	}
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.fail("nesting deeper than %d levels", maxDepth)
	}
}

func (p *parser) leave() { p.depth-- }

// query := [WITH ctes] setExpr [ORDER BY …] [LIMIT …] [OFFSET …] [FETCH …]
func (p *parser) query() *Query {
	p.enter()
	defer p.leave()
	q := &Query{}
	if p.acceptKw("WITH") {
		p.acceptKw("RECURSIVE")
		for {
			cte := CTE{Name: p.ident()}
			if p.isOp("(") {
				cte.Columns = p.identList()
			}
			p.expectKw("AS")
			p.acceptKw("MATERIALIZED")
			p.expectOp("(")
			cte.Query = p.query()
			p.expectOp(")")
			q.With = append(q.With, cte)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	q.Body = p.setExpr()
	if p.isKw("ORDER") {
		q.OrderBy = p.orderBy()
	}
	for {
		switch {
		case p.acceptKw("LIMIT"):
			p.expr()
			if p.acceptOp(",") {
				p.expr()
			}
		case p.acceptKw("OFFSET"):
			p.expr()
			_ = p.acceptKw("ROWS") || p.acceptKw("ROW")
		case p.acceptKw("FETCH"):
			_ = p.acceptKw("FIRST") || p.acceptKw("NEXT")
			if !p.isKw("ROWS") && !p.isKw("ROW") {
				p.expr()
			}
			_ = p.acceptKw("ROWS") || p.acceptKw("ROW")
			p.expectKw("ONLY")
		default:
			return q
		}
	}
}

func (p *parser) orderBy() []Expr {
	p.expectKw("ORDER")
	p.expectKw("BY")
	var out []Expr
	for {
		out = append(out, p.expr())
		_ = p.acceptKw("ASC") || p.acceptKw("DESC")
		if p.acceptKw("NULLS") {
			_ = p.acceptKw("FIRST") || p.acceptKw("LAST")
		}
		if !p.acceptOp(",") {
			return out
		}
	}
}

func (p *parser) setExpr() SetExpr {
	left := p.setTerm()
	for {
		var op string
		switch {
		case p.isKw("UNION"), p.isKw("INTERSECT"), p.isKw("EXCEPT"), p.isKw("MINUS"):
			op = strings.ToUpper(p.next().text)
		default:
			return left
		}
		so := &SetOp{Op: op, Left: left}
		if p.acceptKw("ALL") {
			so.All = true
		} else {
			p.acceptKw("DISTINCT")
		}
		if p.acceptKw("BY") {
			p.expectKw("NAME")
		}
		so.Right = p.setTerm()
		left = so
	}
}

func (p *parser) setTerm() SetExpr {
	switch {
	case p.isKw("SELECT"):
		return p.selectBlock()
	case p.isKw("VALUES"):
		return p.values()
	case p.isOp("("):
		p.next()
		q := p.query()
		p.expectOp(")")
		return q
	}
	p.fail("expected SELECT, VALUES or '(', found %s", p.peek())
	return nil
}

// values turns VALUES (…), (…) into a SELECT of the first row's expressions (enough for lineage:
// every output column is a constant or an expression).
func (p *parser) values() SetExpr {
	p.expectKw("VALUES")
	s := &Select{}
	first := true
	for {
		p.expectOp("(")
		for {
			start := p.peek().pos
			e := p.expr()
			if first {
				s.Items = append(s.Items, SelectItem{Expr: e, Text: p.src[start:p.prevEnd()]})
			}
			if !p.acceptOp(",") {
				break
			}
		}
		p.expectOp(")")
		first = false
		if !p.acceptOp(",") {
			return s
		}
	}
}

func (p *parser) selectBlock() *Select {
	p.expectKw("SELECT")
	s := &Select{}
	if p.acceptKw("DISTINCT") {
		s.Distinct = true
		if p.acceptKw("ON") {
			p.skipParens()
		}
	} else {
		p.acceptKw("ALL")
	}
	if p.acceptKw("TOP") {
		p.primary()
	}
	for {
		s.Items = append(s.Items, p.selectItem())
		if !p.acceptOp(",") {
			break
		}
		if p.isClauseEnd() { // trailing comma (Snowflake/DuckDB accept it)
			break
		}
	}
	if p.acceptKw("FROM") {
		for {
			s.From = append(s.From, p.tableItem())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	for {
		switch {
		case p.acceptKw("WHERE"):
			s.Where = p.expr()
		case p.isKw("GROUP") && p.isKwAt(1, "BY"):
			p.i += 2
			if p.acceptKw("ALL") {
				continue
			}
			for {
				if p.isKw("GROUPING") && p.isKwAt(1, "SETS") {
					p.i += 2
					s.GroupBy = append(s.GroupBy, p.primary())
				} else {
					s.GroupBy = append(s.GroupBy, p.expr())
				}
				if !p.acceptOp(",") {
					break
				}
			}
		case p.acceptKw("HAVING"):
			s.Having = p.expr()
		case p.acceptKw("QUALIFY"):
			s.Qualify = p.expr()
		case p.isKw("WINDOW") && !p.isOpAt(1, "("):
			p.next()
			for {
				p.ident()
				p.expectKw("AS")
				p.skipParens()
				if !p.acceptOp(",") {
					break
				}
			}
		default:
			return s
		}
	}
}

func (p *parser) isClauseEnd() bool {
	t := p.peek()
	if t.kind == tEOF || t.kind == tOp && (t.text == ")" || t.text == ";") {
		return true
	}
	return p.isKw("FROM") || p.isKw("WHERE") || p.isKw("GROUP") || p.isKw("ORDER") || p.isKw("LIMIT") || p.isKw("UNION")
}

func (p *parser) selectItem() SelectItem {
	start := p.peek().pos
	if p.acceptOp("*") {
		it := SelectItem{Star: true}
		p.starModifiers(&it)
		it.Text = p.src[start:p.prevEnd()]
		return it
	}
	// qual.* ?
	if t := p.peek(); t.kind == tIdent || t.kind == tQuoted {
		j := p.i
		var qual []string
		for {
			tt := p.toks[j]
			if tt.kind != tIdent && tt.kind != tQuoted {
				break
			}
			if !(p.toks[j+1].kind == tOp && p.toks[j+1].text == ".") {
				break
			}
			qual = append(qual, tt.text)
			if n := p.toks[j+2]; n.kind == tOp && n.text == "*" {
				p.i = j + 3
				it := SelectItem{Star: true, Qualifier: qual}
				p.starModifiers(&it)
				it.Text = p.src[start:p.prevEnd()]
				return it
			}
			j += 2
		}
	}
	it := SelectItem{Expr: p.expr()}
	end := p.prevEnd()
	if p.acceptKw("AS") {
		it.Alias = p.aliasName()
	} else if t := p.peek(); t.kind == tQuoted || t.kind == tIdent && !reserved(t.text) {
		it.Alias = p.aliasName()
	}
	it.Text = p.src[start:end]
	return it
}

func (p *parser) starModifiers(it *SelectItem) {
	if (p.isKw("EXCEPT") || p.isKw("EXCLUDE")) && p.isOpAt(1, "(") {
		p.next()
		it.Except = p.identList()
	} else if p.isKw("EXCLUDE") {
		p.next()
		it.Except = []string{p.ident()}
	}
	if p.isKw("REPLACE") && p.isOpAt(1, "(") {
		p.next()
		p.skipParens()
	}
	if p.isKw("RENAME") {
		p.next()
		p.skipParens()
	}
}

func (p *parser) aliasName() string {
	t := p.next()
	if t.kind == tIdent || t.kind == tQuoted || t.kind == tString {
		return t.text
	}
	p.failAt(t, "expected an alias, found %s", t)
	return ""
}

// tableItem := tablePrimary { join }
func (p *parser) tableItem() TableExpr {
	left := p.tablePrimary()
	for {
		kind := ""
		switch {
		case p.acceptKw("JOIN"):
			kind = "INNER"
		case p.isKw("INNER") || p.isKw("LEFT") || p.isKw("RIGHT") || p.isKw("FULL") || p.isKw("CROSS") || p.isKw("NATURAL") || p.isKw("ASOF") || p.isKw("ANY"):
			kind = strings.ToUpper(p.next().text)
			if kind == "NATURAL" && !p.isKw("JOIN") {
				p.next() // NATURAL LEFT …
			}
			for p.acceptKw("OUTER") || p.acceptKw("SEMI") || p.acceptKw("ANTI") || p.acceptKw("INNER") {
			}
			if kind == "CROSS" && p.acceptKw("APPLY") {
				break
			}
			p.expectKw("JOIN")
		default:
			return left
		}
		j := &Join{Kind: kind, Left: left, Right: p.tablePrimary()}
		if p.acceptKw("ON") {
			j.On = p.expr()
		} else if p.acceptKw("USING") {
			j.Using = p.identList()
		}
		left = j
	}
}

func (p *parser) tablePrimary() TableExpr {
	p.enter()
	defer p.leave()
	switch {
	case p.isOp("("):
		if p.startsQueryAt(1) {
			p.next()
			sq := &Subquery{Query: p.query()}
			p.expectOp(")")
			sq.Alias, sq.ColumnAliases = p.tableAlias()
			return sq
		}
		p.next()
		t := p.tableItem()
		p.expectOp(")")
		if a, _ := p.tableAlias(); a != "" {
			if tn, ok := t.(*TableName); ok {
				tn.Alias = a
			}
		}
		return t
	case p.acceptKw("LATERAL"):
		if p.isOp("(") {
			return p.tablePrimary()
		}
		return p.tablePrimary()
	case p.isKw("TABLE") && p.isOpAt(1, "("):
		p.next()
		p.expectOp("(")
		fc, ok := p.expr().(*FuncCall)
		if !ok {
			p.fail("expected a table function call inside TABLE(…)")
		}
		p.expectOp(")")
		tf := &TableFunc{Name: fc.Name, Args: fc.Args}
		tf.Alias, tf.ColumnAliases = p.tableAlias()
		return tf
	case p.isKw("UNNEST") && p.isOpAt(1, "("):
		p.next()
		tf := &TableFunc{Name: "UNNEST", Args: p.callArgs()}
		if p.acceptKw("WITH") {
			p.expectKw("ORDINALITY")
		}
		tf.Alias, tf.ColumnAliases = p.tableAlias()
		return tf
	}
	name := p.qualifiedName()
	if p.isOp("(") {
		tf := &TableFunc{Name: strings.ToUpper(name[len(name)-1]), Args: p.callArgs()}
		tf.Alias, tf.ColumnAliases = p.tableAlias()
		return tf
	}
	tn := &TableName{Name: name}
	if p.isKw("FOR") && p.isKwAt(1, "SYSTEM_TIME") {
		p.i += 2
		p.expectKw("AS")
		p.expectKw("OF")
		p.additive()
	}
	if (p.isKw("AT") || p.isKw("BEFORE") || p.isKw("CHANGES")) && p.isOpAt(1, "(") {
		p.next()
		p.skipParens()
	}
	if p.isKw("TABLESAMPLE") || p.isKw("SAMPLE") {
		p.next()
		for !p.isOp("(") {
			p.next()
		}
		p.skipParens()
	}
	tn.Alias, _ = p.tableAlias()
	if p.acceptKw("FOR") { // Flink: FOR SYSTEM_TIME AS OF after the alias
		p.expectKw("SYSTEM_TIME")
		p.expectKw("AS")
		p.expectKw("OF")
		p.additive()
		if tn.Alias == "" {
			tn.Alias, _ = p.tableAlias()
		}
	}
	return tn
}

func (p *parser) tableAlias() (string, []string) {
	var alias string
	if p.acceptKw("AS") {
		alias = p.ident()
	} else if t := p.peek(); t.kind == tQuoted || t.kind == tIdent && !reserved(t.text) {
		alias = p.ident()
	} else {
		return "", nil
	}
	var cols []string
	if p.isOp("(") {
		cols = p.identList()
	}
	return alias, cols
}

func (p *parser) startsQueryAt(k int) bool {
	for p.isOpAt(k, "(") {
		k++
	}
	return p.isKwAt(k, "SELECT") || p.isKwAt(k, "WITH") || p.isKwAt(k, "VALUES")
}

// ---- expressions, lowest precedence first ----

func (p *parser) expr() Expr {
	p.enter()
	defer p.leave()
	return p.or()
}

func (p *parser) or() Expr {
	l := p.and()
	for p.acceptKw("OR") {
		l = &Binary{Op: "OR", L: l, R: p.and()}
	}
	return l
}

func (p *parser) and() Expr {
	l := p.not()
	for p.acceptKw("AND") {
		l = &Binary{Op: "AND", L: l, R: p.not()}
	}
	return l
}

func (p *parser) not() Expr {
	if p.acceptKw("NOT") {
		p.enter()
		defer p.leave()
		return &Unary{Op: "NOT", X: p.not()}
	}
	return p.comparison()
}

func (p *parser) comparison() Expr {
	l := p.concat()
	for {
		t := p.peek()
		switch {
		case t.kind == tOp && (t.text == "=" || t.text == "<>" || t.text == "!=" || t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">=" || t.text == "<=>"):
			p.next()
			if p.isKw("ANY") || p.isKw("ALL") || p.isKw("SOME") {
				p.next()
				p.expectOp("(")
				q := p.query()
				p.expectOp(")")
				l = &Binary{Op: t.text, L: l, R: &ScalarSubquery{Query: q}}
				continue
			}
			l = &Binary{Op: t.text, L: l, R: p.concat()}
		case p.isKw("IS"):
			p.next()
			p.acceptKw("NOT")
			switch {
			case p.acceptKw("NULL"), p.acceptKw("TRUE"), p.acceptKw("FALSE"), p.acceptKw("UNKNOWN"):
				l = &IsNull{X: l}
			case p.acceptKw("DISTINCT"):
				p.expectKw("FROM")
				l = &IsNull{X: l, Other: p.concat()}
			default:
				p.fail("expected NULL, TRUE, FALSE or DISTINCT FROM after IS, found %s", p.peek())
			}
		case p.isKw("NOT") && (p.isKwAt(1, "IN") || p.isKwAt(1, "BETWEEN") || p.isKwAt(1, "LIKE") || p.isKwAt(1, "ILIKE") || p.isKwAt(1, "RLIKE") || p.isKwAt(1, "REGEXP") || p.isKwAt(1, "SIMILAR")):
			p.next()
			l = p.predicate(l, true)
		case p.isKw("IN") || p.isKw("BETWEEN") || p.isKw("LIKE") || p.isKw("ILIKE") || p.isKw("RLIKE") || p.isKw("REGEXP") || p.isKw("SIMILAR"):
			l = p.predicate(l, false)
		default:
			return l
		}
	}
}

func (p *parser) predicate(l Expr, not bool) Expr {
	switch {
	case p.acceptKw("IN"):
		in := &In{X: l, Not: not}
		p.expectOp("(")
		if p.startsQueryAt(0) {
			in.Query = p.query()
		} else if !p.isOp(")") {
			for {
				in.List = append(in.List, p.expr())
				if !p.acceptOp(",") {
					break
				}
			}
		}
		p.expectOp(")")
		return in
	case p.acceptKw("BETWEEN"):
		p.acceptKw("SYMMETRIC")
		lo := p.concat()
		p.expectKw("AND")
		return &Between{X: l, Lo: lo, Hi: p.concat()}
	default:
		op := strings.ToUpper(p.next().text)
		if op == "SIMILAR" {
			p.expectKw("TO")
		}
		p.acceptKw("ANY")
		b := &Binary{Op: op, L: l, R: p.concat()}
		if p.acceptKw("ESCAPE") {
			p.concat()
		}
		return b
	}
}

func (p *parser) concat() Expr {
	l := p.additive()
	for p.isOp("||") {
		p.next()
		l = &Binary{Op: "||", L: l, R: p.additive()}
	}
	return l
}

func (p *parser) additive() Expr {
	l := p.multiplicative()
	for p.isOp("+") || p.isOp("-") || p.isOp("&") || p.isOp("|") || p.isOp("^") {
		op := p.next().text
		l = &Binary{Op: op, L: l, R: p.multiplicative()}
	}
	return l
}

func (p *parser) multiplicative() Expr {
	l := p.unary()
	for p.isOp("*") || p.isOp("/") || p.isOp("%") {
		op := p.next().text
		l = &Binary{Op: op, L: l, R: p.unary()}
	}
	return l
}

func (p *parser) unary() Expr {
	if p.isOp("-") || p.isOp("+") || p.isOp("~") {
		op := p.next().text
		p.enter()
		defer p.leave()
		return &Unary{Op: op, X: p.unary()}
	}
	return p.postfix(p.primary())
}

func (p *parser) postfix(e Expr) Expr {
	for {
		switch {
		case p.isOp("::"):
			p.next()
			e = &Cast{X: e, Type: p.typeName()}
		case p.isOp("["):
			p.next()
			idx := p.expr()
			p.expectOp("]")
			e = &Access{X: e, Index: idx}
		case p.isOp(".") && (p.peekAt(1).kind == tIdent || p.peekAt(1).kind == tQuoted):
			p.next()
			e = &Access{X: e, Index: &Literal{Text: p.next().text}}
		case p.isOp(":") && (p.peekAt(1).kind == tIdent || p.peekAt(1).kind == tQuoted):
			// Snowflake semi-structured access col:field.
			p.next()
			e = &Access{X: e, Index: &Literal{Text: p.next().text}}
		case p.isKw("COLLATE"):
			p.next()
			p.next()
		case p.isKw("AT") && p.isKwAt(1, "TIME") && p.isKwAt(2, "ZONE"):
			p.i += 3
			e = &Binary{Op: "AT TIME ZONE", L: e, R: p.primary()}
		default:
			return e
		}
	}
}

// typeName reads a type for CAST/::, e.g. NUMBER(18,2), TIMESTAMP(3) WITH LOCAL TIME ZONE,
// ARRAY<STRING>, DOUBLE PRECISION.
func (p *parser) typeName() string {
	start := p.peek().pos
	t := p.next()
	if t.kind != tIdent && t.kind != tQuoted {
		p.failAt(t, "expected a type name, found %s", t)
	}
	for p.isKw("PRECISION") || p.isKw("VARYING") || p.isKw("UNSIGNED") {
		p.next()
	}
	if p.isOp("(") {
		p.skipParens()
	}
	if p.isOp("<") {
		level := 0
		for {
			t := p.next()
			if t.kind == tEOF {
				p.fail("unterminated type parameters")
			}
			if t.kind == tOp && t.text == "<" {
				level++
			}
			if t.kind == tOp && t.text == ">" {
				level--
				if level == 0 {
					break
				}
			}
		}
	}
	if (p.isKw("WITH") || p.isKw("WITHOUT")) && (p.isKwAt(1, "TIME") || p.isKwAt(1, "LOCAL")) {
		p.next()
		p.acceptKw("LOCAL")
		p.expectKw("TIME")
		p.expectKw("ZONE")
	}
	if p.isOp("[") && p.isOpAt(1, "]") {
		p.i += 2
	}
	return strings.TrimSpace(p.src[start:p.prevEnd()])
}

var niladic = map[string]bool{"CURRENT_DATE": true, "CURRENT_TIMESTAMP": true, "CURRENT_TIME": true, "LOCALTIME": true,
	"LOCALTIMESTAMP": true, "CURRENT_USER": true, "SESSION_USER": true, "CURRENT_ROLE": true, "CURRENT_SCHEMA": true,
	"CURRENT_CATALOG": true, "CURRENT_WATERMARK": false}

func (p *parser) primary() Expr {
	p.enter()
	defer p.leave()
	t := p.peek()
	switch t.kind {
	case tNumber, tString, tParam:
		p.next()
		return &Literal{Text: t.text, String: t.kind == tString}
	case tOp:
		switch t.text {
		case "(":
			if p.startsQueryAt(1) {
				p.next()
				q := p.query()
				p.expectOp(")")
				return &ScalarSubquery{Query: q}
			}
			p.next()
			e := p.expr()
			if p.acceptOp(",") {
				l := &ListExpr{Items: []Expr{e}}
				for {
					l.Items = append(l.Items, p.expr())
					if !p.acceptOp(",") {
						break
					}
				}
				e = l
			}
			p.expectOp(")")
			return e
		case "*":
			p.next()
			return &StarArg{}
		case "{":
			p.skipBraces()
			return &Literal{Text: "{…}"}
		}
		p.fail("unexpected %s in an expression", t)
	case tQuoted:
		return p.nameOrCall()
	case tIdent:
		kw := strings.ToUpper(t.text)
		switch kw {
		case "NULL", "TRUE", "FALSE":
			p.next()
			return &Literal{Text: kw}
		case "CASE":
			return p.caseExpr()
		case "CAST", "TRY_CAST", "SAFE_CAST":
			if p.isOpAt(1, "(") {
				p.i += 2
				c := &Cast{X: p.expr()}
				p.expectKw("AS")
				c.Type = p.typeName()
				if p.acceptKw("FORMAT") {
					p.expr()
				}
				p.expectOp(")")
				return c
			}
		case "EXISTS":
			if p.isOpAt(1, "(") {
				p.i += 2
				q := p.query()
				p.expectOp(")")
				return &Exists{Query: q}
			}
		case "INTERVAL":
			start := t.pos
			p.next()
			if p.peek().kind == tString || p.peek().kind == tNumber || p.isOp("-") {
				p.acceptOp("-")
				p.next()
				if p.peek().kind == tIdent && !reserved(p.peek().text) && !p.isKw("AS") {
					p.next()
					if p.isOp("(") {
						p.skipParens()
					}
					if p.acceptKw("TO") {
						p.next()
					}
				}
				return &Interval{Text: p.src[start:p.prevEnd()]}
			}
		case "DATE", "TIMESTAMP", "TIME", "TIMESTAMP_LTZ", "TIMESTAMP_NTZ", "TIMESTAMP_TZ", "DATETIME":
			if p.peekAt(1).kind == tString {
				p.i += 2
				return &Literal{Text: t.text + " '" + p.toks[p.i-1].text + "'"}
			}
		case "DESCRIPTOR":
			if p.isOpAt(1, "(") {
				p.next()
				return &Descriptor{Columns: p.identList()}
			}
		case "TABLE":
			p.next()
			if p.isOp("(") && p.startsQueryAt(1) {
				p.next()
				sq := &Subquery{Query: p.query()}
				p.expectOp(")")
				return &TableArg{Table: sq}
			}
			ta := &TableArg{Table: &TableName{Name: p.qualifiedName()}}
			if p.isKw("PARTITION") && p.isKwAt(1, "BY") { // SESSION(TABLE t PARTITION BY k, …)
				p.i += 2
				for {
					ta.PartitionBy = append(ta.PartitionBy, p.additive())
					if !p.isOp(",") || p.isKwAt(1, "DESCRIPTOR") || p.isKwAt(1, "INTERVAL") || p.isOpAt(2, "=>") {
						break
					}
					p.next()
				}
			}
			return ta
		case "ARRAY", "MAP", "ROW", "STRUCT":
			if p.isOpAt(1, "[") {
				p.i += 2
				l := &ListExpr{}
				for !p.isOp("]") {
					l.Items = append(l.Items, p.expr())
					if !p.acceptOp(",") {
						break
					}
				}
				p.expectOp("]")
				return l
			}
		case "EXTRACT", "DATE_PART":
			if p.isOpAt(1, "(") && kw == "EXTRACT" {
				p.i += 2
				p.next() // the unit
				p.expectKw("FROM")
				fc := &FuncCall{Name: kw, Args: []Expr{p.expr()}}
				p.expectOp(")")
				return fc
			}
		case "POSITION":
			if p.isOpAt(1, "(") {
				p.i += 2
				a := p.additive()
				fc := &FuncCall{Name: kw, Args: []Expr{a}}
				if p.acceptKw("IN") {
					fc.Args = append(fc.Args, p.additive())
				} else {
					for p.acceptOp(",") {
						fc.Args = append(fc.Args, p.expr())
					}
				}
				p.expectOp(")")
				return fc
			}
		}
		if b, ok := niladic[kw]; ok && b && !p.isOpAt(1, "(") {
			p.next()
			return &Literal{Text: kw}
		}
		if reserved(t.text) && !p.isOpAt(1, "(") {
			p.fail("unexpected keyword %s in an expression", kw)
		}
		return p.nameOrCall()
	case tEOF:
		p.fail("unexpected end of input in an expression")
	}
	p.fail("unexpected %s", t)
	return nil
}

func (p *parser) nameOrCall() Expr {
	first := p.next()
	parts := []string{first.text}
	for p.isOp(".") && (p.peekAt(1).kind == tIdent || p.peekAt(1).kind == tQuoted) {
		p.next()
		parts = append(parts, p.next().text)
	}
	if !p.isOp("(") {
		return &ColumnRef{Parts: parts, Pos: first.pos, End: p.prevEnd()}
	}
	fc := &FuncCall{Name: strings.ToUpper(parts[len(parts)-1])}
	p.expectOp("(")
	if p.acceptKw("DISTINCT") {
		fc.Distinct = true
	} else {
		p.acceptKw("ALL")
	}
	if fc.Name == "TRIM" {
		_ = p.acceptKw("BOTH") || p.acceptKw("LEADING") || p.acceptKw("TRAILING")
	}
	if !p.isOp(")") {
		for {
			fc.Args = append(fc.Args, p.callArg())
			if p.acceptKw("FROM") || p.acceptKw("FOR") || p.acceptKw("AS") { // SUBSTRING(x FROM 1 FOR 2), TRIM('x' FROM y)
				fc.Args = append(fc.Args, p.callArg())
				for p.acceptKw("FOR") {
					fc.Args = append(fc.Args, p.callArg())
				}
			}
			if p.isKw("ORDER") {
				fc.Args = append(fc.Args, p.orderBy()...)
			}
			if p.acceptKw("SEPARATOR") {
				p.expr()
			}
			if p.isKw("IGNORE") || p.isKw("RESPECT") {
				p.next()
				p.expectKw("NULLS")
			}
			if !p.acceptOp(",") {
				break
			}
		}
	}
	p.expectOp(")")
	if p.isKw("WITHIN") {
		p.next()
		p.expectKw("GROUP")
		p.expectOp("(")
		fc.Args = append(fc.Args, p.orderBy()...)
		p.expectOp(")")
	}
	if p.isKw("IGNORE") || p.isKw("RESPECT") {
		p.next()
		p.expectKw("NULLS")
	}
	if p.isKw("FILTER") && p.isOpAt(1, "(") {
		p.i += 2
		p.expectKw("WHERE")
		fc.Filter = p.expr()
		p.expectOp(")")
	}
	if p.acceptKw("OVER") {
		fc.Over = p.window()
	}
	return fc
}

func (p *parser) callArgs() []Expr {
	p.expectOp("(")
	var args []Expr
	if p.acceptOp(")") {
		return nil
	}
	for {
		args = append(args, p.callArg())
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp(")")
	return args
}

func (p *parser) callArg() Expr {
	if (p.peek().kind == tIdent || p.peek().kind == tQuoted) && p.isOpAt(1, "=>") {
		name := p.next().text
		p.next()
		return &NamedArg{Name: strings.ToUpper(name), Value: p.expr()}
	}
	return p.expr()
}

func (p *parser) window() *Window {
	w := &Window{}
	if !p.isOp("(") {
		w.Name = p.ident()
		return w
	}
	p.expectOp("(")
	if (p.peek().kind == tIdent) && !reserved(p.peek().text) && !p.isKw("PARTITION") && !p.isKw("ORDER") && !p.isKw("ROWS") && !p.isKw("RANGE") {
		w.Name = p.ident()
	}
	if p.isKw("PARTITION") {
		p.next()
		p.expectKw("BY")
		for {
			w.PartitionBy = append(w.PartitionBy, p.expr())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.isKw("ORDER") {
		w.OrderBy = p.orderBy()
	}
	// Frame clause: ROWS/RANGE/GROUPS BETWEEN … AND … — no lineage in it.
	level := 0
	for {
		t := p.peek()
		if t.kind == tEOF {
			p.fail("unterminated OVER (…)")
		}
		if t.kind == tOp && t.text == "(" {
			level++
		}
		if t.kind == tOp && t.text == ")" {
			if level == 0 {
				break
			}
			level--
		}
		p.next()
	}
	p.expectOp(")")
	return w
}

func (p *parser) caseExpr() Expr {
	p.expectKw("CASE")
	c := &Case{}
	if !p.isKw("WHEN") {
		c.Operand = p.expr()
	}
	for p.acceptKw("WHEN") {
		w := When{Cond: p.expr()}
		p.expectKw("THEN")
		w.Result = p.expr()
		c.Whens = append(c.Whens, w)
	}
	if len(c.Whens) == 0 {
		p.fail("CASE without WHEN")
	}
	if p.acceptKw("ELSE") {
		c.Else = p.expr()
	}
	p.expectKw("END")
	return c
}

// ---- token helpers ----

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) peekAt(k int) token {
	if p.i+k >= len(p.toks) {
		return p.toks[len(p.toks)-1]
	}
	return p.toks[p.i+k]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) prevEnd() int {
	if p.i == 0 {
		return 0
	}
	return p.toks[p.i-1].end
}

func (p *parser) isKw(kw string) bool { return p.isKwAt(0, kw) }

func (p *parser) isKwAt(k int, kw string) bool {
	t := p.peekAt(k)
	return t.kind == tIdent && strings.EqualFold(t.text, kw)
}

func (p *parser) isOp(op string) bool { return p.isOpAt(0, op) }

func (p *parser) isOpAt(k int, op string) bool {
	t := p.peekAt(k)
	return t.kind == tOp && t.text == op
}

func (p *parser) acceptKw(kw string) bool {
	if p.isKw(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) acceptOp(op string) bool {
	if p.isOp(op) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectKw(kw string) {
	if !p.acceptKw(kw) {
		p.fail("expected %s, found %s", kw, p.peek())
	}
}

func (p *parser) expectOp(op string) {
	if !p.acceptOp(op) {
		p.fail("expected '%s', found %s", op, p.peek())
	}
}

func (p *parser) ident() string {
	t := p.next()
	if t.kind == tQuoted || t.kind == tIdent {
		return t.text
	}
	p.failAt(t, "expected an identifier, found %s", t)
	return ""
}

func (p *parser) qualifiedName() []string {
	name := []string{p.ident()}
	for p.isOp(".") {
		p.next()
		name = append(name, p.ident())
	}
	return name
}

func (p *parser) identList() []string {
	p.expectOp("(")
	var out []string
	for {
		out = append(out, p.ident())
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectOp(")")
	return out
}

func (p *parser) skipParens() {
	p.expectOp("(")
	level := 1
	for level > 0 {
		t := p.next()
		switch {
		case t.kind == tEOF:
			p.fail("unbalanced parentheses")
		case t.kind == tOp && t.text == "(":
			level++
		case t.kind == tOp && t.text == ")":
			level--
		}
	}
}

func (p *parser) skipBraces() {
	p.expectOp("{")
	level := 1
	for level > 0 {
		t := p.next()
		switch {
		case t.kind == tEOF:
			p.fail("unbalanced braces")
		case t.kind == tOp && t.text == "{":
			level++
		case t.kind == tOp && t.text == "}":
			level--
		}
	}
}

func (p *parser) fail(format string, args ...any) {
	panic(newSyntaxError(p.src, p.peek().pos, format, args...))
}

func (p *parser) failAt(t token, format string, args ...any) {
	panic(newSyntaxError(p.src, t.pos, format, args...))
}

// skippable statements carry no lineage; ParseScript steps over them.
var skippable = map[string]bool{}

var reservedWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`SET RESET USE CREATE DROP ALTER DESCRIBE DESC SHOW EXPLAIN BEGIN COMMIT ROLLBACK
		DECLARE GRANT REVOKE TRUNCATE DELETE UPDATE MERGE COPY CALL ADD LOAD UNLOAD COMMENT ANALYZE VACUUM`) {
		skippable[w] = true
	}
	for _, w := range strings.Fields(`SELECT FROM WHERE GROUP HAVING QUALIFY ORDER LIMIT OFFSET FETCH UNION INTERSECT EXCEPT MINUS
		JOIN INNER LEFT RIGHT FULL CROSS NATURAL ON USING WINDOW AND OR NOT AS WITH CASE WHEN THEN ELSE END
		LATERAL INTO VALUES IS IN BETWEEN LIKE ILIKE RLIKE OVER SET RETURNING ASOF TABLESAMPLE PIVOT UNPIVOT
		SEMI ANTI FOR EXCLUDE DISTINCT ALL BY ASC DESC NULLS`) {
		reservedWords[w] = true
	}
}

func reserved(s string) bool { return reservedWords[strings.ToUpper(s)] }
