// SPDX-License-Identifier: GPL-2.0-only
//
// Scripted MySQL/MariaDB client on go-sql-driver/mysql for the privileged
// tests: a Go program whose TLS is Go's own crypto/tls, linked into the
// executable. Same line protocol as mt_client.c and pymysql_client.py:
//
//	connect                      ok | error <code> <message>
//	query <sql>                  ok <result_sets> <rows>  (all results read)
//	bigquery <n>                 query "select length('xxx...')" with n x's
//	parallel <conns> <queries>   ok <rows>     (<conns> goroutines, each on its
//	                             own connection, runs "select <c>, <q>" for q
//	                             in 1..<queries>, then closes it)
//	ping                         ok            (COM_PING)
//	quit                         ok            (COM_QUIT, socket closed)
//	initdb, stats, change_user, prepare, execute, close_stmt
//	                             unsupported   (not in database/sql's API)
//	exit / EOF                   exit 0 without an answer
//
// One connection is held (sql.DB.Conn) so every command goes over the same
// socket. A statement without arguments goes out as COM_QUERY (the driver's
// text protocol). With --ssl the connection is TLS without verifying the
// server's certificate (the driver's "skip-verify").
//
// Built by the tests offline from Debian's packages:
//
//	GOPATH=/usr/share/gocode GO111MODULE=off go build
package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"
)

var (
	socket   = flag.String("socket", "", "unix socket of the server")
	host     = flag.String("host", "", "TCP host of the server")
	port     = flag.Int("port", 0, "TCP port of the server")
	user     = flag.String("user", "", "user")
	password = flag.String("password", "", "password")
	useTLS   = flag.Bool("ssl", false, "TLS, the certificate not verified")
	multi    = flag.Bool("multi", false, "allow several statements per query")
)

type driver struct {
	db   *sql.DB
	conn *sql.Conn
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func errorLine(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return fmt.Sprintf("error %d %s", me.Number, oneLine(me.Message))
	}
	return "error 0 " + oneLine(err.Error())
}

func (d *driver) connect() (string, error) {
	if d.conn != nil {
		return "", errors.New("already connected")
	}
	db, err := open()
	if err != nil {
		return "", err
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		db.Close()
		return "", err
	}
	d.db, d.conn = db, conn
	return "ok", nil
}

func (d *driver) query(text string) (string, error) {
	if d.conn == nil {
		return "", errors.New("not connected")
	}
	rows, err := d.conn.QueryContext(context.Background(), text)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	sets, n := 0, 0
	for {
		cols, err := rows.Columns()
		if err != nil {
			return "", err
		}
		if len(cols) > 0 {
			sets++
			for rows.Next() {
				n++
			}
		}
		if err := rows.Err(); err != nil {
			return "", err
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return fmt.Sprintf("ok %d %d", sets, n), nil
}

// open returns a pool of one connection to the server.
func open() (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User = *user
	cfg.Passwd = *password
	if *socket != "" {
		cfg.Net = "unix"
		cfg.Addr = *socket
	} else {
		cfg.Net = "tcp"
		cfg.Addr = fmt.Sprintf("%s:%d", *host, *port)
	}
	if *useTLS {
		cfg.TLSConfig = "skip-verify"
	}
	cfg.MultiStatements = *multi
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	db.SetMaxIdleConns(1)
	db.SetMaxOpenConns(1)
	return db, nil
}

// parallel: goroutines blocked in reads are parked and resumed on any
// thread, which is what the tracer's per-goroutine pairing is for.
func parallel(arg string) (string, error) {
	f := strings.Fields(arg)
	if len(f) != 2 {
		return "", errors.New("parallel: give <conns> <queries>")
	}
	conns, err1 := strconv.Atoi(f[0])
	queries, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return "", errors.New("parallel: not numbers")
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	rows := 0
	var firstErr error
	for c := 1; c <= conns; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			n, err := func() (int, error) {
				db, err := open()
				if err != nil {
					return 0, err
				}
				defer db.Close()
				n := 0
				for q := 1; q <= queries; q++ {
					var a, b int
					err := db.QueryRow(fmt.Sprintf("select %d, %d", c, q)).Scan(&a, &b)
					if err != nil {
						return n, err
					}
					if a != c || b != q {
						return n, fmt.Errorf("select %d, %d answered %d, %d", c, q, a, b)
					}
					n++
				}
				return n, nil
			}()
			mu.Lock()
			rows += n
			if err != nil && firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	if firstErr != nil {
		return "", firstErr
	}
	return fmt.Sprintf("ok %d", rows), nil
}

func (d *driver) ping() (string, error) {
	if d.conn == nil {
		return "", errors.New("not connected")
	}
	return "ok", d.conn.PingContext(context.Background())
}

func (d *driver) quit() (string, error) {
	if d.conn == nil {
		return "", errors.New("not connected")
	}
	// Back to the pool, then the pool closes it: COM_QUIT and close().
	d.conn.Close()
	err := d.db.Close()
	d.conn, d.db = nil, nil
	return "ok", err
}

func (d *driver) handle(line string) string {
	name, arg, _ := strings.Cut(line, " ")
	var answer string
	var err error
	switch name {
	case "connect":
		answer, err = d.connect()
	case "query":
		answer, err = d.query(arg)
	case "bigquery":
		n, convErr := strconv.Atoi(arg)
		if convErr != nil {
			return "error 0 bigquery: not a count: " + arg
		}
		answer, err = d.query("select length('" + strings.Repeat("x", n) + "')")
	case "parallel":
		answer, err = parallel(arg)
	case "ping":
		answer, err = d.ping()
	case "quit":
		answer, err = d.quit()
	case "initdb", "stats", "change_user", "prepare", "execute", "close_stmt":
		return "unsupported"
	default:
		return "error 0 unknown command"
	}
	if err != nil {
		return errorLine(err)
	}
	return answer
}

func main() {
	flag.Parse()
	if *user == "" || (*socket == "" && (*host == "" || *port == 0)) {
		fmt.Fprintln(os.Stderr, "go_client: give --user and --socket PATH or --host H --port P")
		os.Exit(2)
	}
	d := &driver{}
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		line := strings.TrimRight(in.Text(), "\r")
		if line == "exit" {
			break
		}
		fmt.Fprintln(out, d.handle(line))
		out.Flush()
	}
}
