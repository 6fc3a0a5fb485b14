package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/stdlib"
)

// driverPostgres is pgx's database/sql driver with one change: statements
// are written once, with SQLite's `?` placeholders, and the driver numbers
// them ($1, $2, …) for PostgreSQL. Doing it here, under database/sql, keeps
// every query of the store a single text that both engines run, with no
// Rebind call to forget at any of its call sites.
const driverPostgres = "bindery_pgx"

var registerPostgresOnce sync.Once

func registerPostgres() {
	registerPostgresOnce.Do(func() {
		sql.Register(driverPostgres, &pgDriver{base: stdlib.GetDefaultDriver().(driver.DriverContext)})
	})
}

type pgDriver struct{ base driver.DriverContext }

func (d *pgDriver) Open(name string) (driver.Conn, error) {
	c, err := d.OpenConnector(name)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

func (d *pgDriver) OpenConnector(name string) (driver.Connector, error) {
	c, err := d.base.OpenConnector(name)
	if err != nil {
		return nil, err
	}
	return &pgConnector{base: c, driver: d}, nil
}

type pgConnector struct {
	base   driver.Connector
	driver *pgDriver
}

func (c *pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pgConn{conn.(*stdlib.Conn)}, nil
}

func (c *pgConnector) Driver() driver.Driver { return c.driver }

// pgConn forwards every interface database/sql asks of pgx's connection,
// numbering placeholders on the way.
type pgConn struct{ *stdlib.Conn }

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.Conn.Prepare(numberPlaceholders(query))
}

func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, numberPlaceholders(query))
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, numberPlaceholders(query), args)
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, numberPlaceholders(query), args)
}

// CheckNamedValue stores a Go bool (or *bool, as a patch holds it) as 0 or
// 1: the protocol's flags are integers on both engines, so that the same
// `= 1` reads them. Other values, Valuers included, go to pgx untouched.
func (c *pgConn) CheckNamedValue(nv *driver.NamedValue) error {
	switch v := nv.Value.(type) {
	case bool:
		nv.Value = flag(v)
		return nil
	case *bool:
		if nv.Value = nil; v != nil {
			nv.Value = flag(*v)
		}
		return nil
	}
	return c.Conn.CheckNamedValue(nv)
}

func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

var numbered sync.Map // query text → its numbered form

// numberPlaceholders turns each `?` outside quotes and comments into $1,
// $2, … in order, and SQLite's numbered `?N` into `$N`. The store's queries are constants (or built from them),
// so the results are cached.
func numberPlaceholders(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	if q, ok := numbered.Load(query); ok {
		return q.(string)
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		switch ch := query[i]; ch {
		case '\'', '"':
			end := strings.IndexByte(query[i+1:], ch)
			if end < 0 {
				b.WriteString(query[i:])
				i = len(query)
				continue
			}
			b.WriteString(query[i : i+end+2])
			i += end + 1
		case '-':
			if strings.HasPrefix(query[i:], "--") {
				end := strings.IndexByte(query[i:], '\n')
				if end < 0 {
					end = len(query) - i
				}
				b.WriteString(query[i : i+end])
				i += end - 1
				continue
			}
			b.WriteByte(ch)
		case '?':
			b.WriteByte('$')
			if j := i + 1; j < len(query) && query[j] >= '0' && query[j] <= '9' {
				continue // SQLite's numbered ?N is PostgreSQL's $N
			}
			n++
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(ch)
		}
	}
	out := b.String()
	numbered.Store(query, out)
	return out
}
