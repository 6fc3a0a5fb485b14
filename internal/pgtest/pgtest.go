// Package pgtest runs a private PostgreSQL server for tests, never a system
// instance: initdb in a temp folder, a server that listens on a Unix
// socket in that folder and on a free port of 127.0.0.1 only, and is
// killed with the test binary (Pdeathsig). PostgreSQL refuses to run as
// root, so as root the server runs as the postgres system user that
// Debian's package creates. scripts/deps.sh installs the package.
//
// Durability is off (fsync, full-page writes): a test server is thrown
// away, and tests measure behaviour, not the disk.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// Superuser is the server's bootstrap role; tests connect as it unless
// they ask for another role.
const Superuser = "bindery"

// Server is a running private PostgreSQL server.
type Server struct {
	dir, socketDir string
	port           int
	opts           Options
	cred           *syscall.Credential
	bin            string
	cmd            *exec.Cmd
	done           chan error
	databases      atomic.Int64
}

// Options shape a server that other hosts reach: by default it listens on
// 127.0.0.1 and trusts only local connections.
type Options struct {
	// Listen are the addresses the server listens on besides 127.0.0.1,
	// e.g. the test's network-namespace links; they must exist already.
	Listen []string
	// Trust are the client networks (CIDR) allowed in without a password
	// besides the local ones.
	Trust []string
}

// binDir finds the newest PostgreSQL 15+ server binaries Debian installed.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if version(d) >= 15 {
			if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
				return d, nil
			}
		}
	}
	return "", errors.New("PostgreSQL 15+ is not installed (scripts/deps.sh installs the postgresql package)")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start initializes and starts a server in a new temp folder.
func Start() (*Server, error) { return StartWith(Options{}) }

// StartWith is Start with options.
func StartWith(opts Options) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tempRoot(cred), "bindery-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, socketDir: filepath.Join(dir, "run"), opts: opts, cred: cred, bin: bin, done: make(chan error, 1)}
	if err := s.prepare(cred); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	initdb := s.command(cred, filepath.Join(bin, "initdb"), "-D", s.dataDir(), "-U", Superuser, "--auth=trust",
		"--no-sync", "-E", "UTF8", "--locale=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	if err := s.trust(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if s.port, err = freePort(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.start(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// serverUser is the postgres system user when running as root, else nil
// (the server runs as the current user).
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs the postgres system user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// tempRoot is where the server's folder goes: the usual temp dir, or,
// when the server runs as the postgres user, /tmp, which that user can
// reach (a TMPDIR under a root-only folder, as benchd's, it cannot: initdb
// would not even start).
func tempRoot(cred *syscall.Credential) string {
	if cred != nil {
		return "/tmp"
	}
	return ""
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

// prepare makes the folders the server user owns.
func (s *Server) prepare(cred *syscall.Credential) error {
	if err := os.Chmod(s.dir, 0o711); err != nil {
		return err
	}
	for _, d := range []string{s.dataDir(), s.socketDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
		if cred != nil {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Server) command(cred *syscall.Credential, bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// trust appends the Trust networks to pg_hba.conf.
func (s *Server) trust() error {
	if len(s.opts.Trust) == 0 {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(s.dataDir(), "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	for _, cidr := range s.opts.Trust {
		fmt.Fprintf(f, "host all all %s trust\n", cidr)
	}
	return f.Close()
}

func (s *Server) start() error {
	listen := strings.Join(append([]string{"127.0.0.1"}, s.opts.Listen...), ",")
	s.done = make(chan error, 1)
	s.cmd = s.command(s.cred, filepath.Join(s.bin, "postgres"), "-D", s.dataDir(), "-k", s.socketDir,
		"-p", strconv.Itoa(s.port), "-c", "listen_addresses="+listen, "-c", "fsync=off",
		"-c", "full_page_writes=off", "-c", "synchronous_commit=off", "-c", "max_connections=200")
	log, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	s.cmd.Stdout, s.cmd.Stderr = log, log
	cmd, done, started := s.cmd, s.done, make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that started the child ends, not
		// the process: the server keeps this thread for its whole life.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			done <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	return s.waitReady()
}

// waitReady polls until the server accepts connections.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		db, err := sql.Open("pgx", s.DSN("postgres", Superuser))
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		if err == nil {
			return nil
		}
		select {
		case werr := <-s.done:
			s.done <- werr
			data, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			return fmt.Errorf("postgres exited: %v: %s", werr, data)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after 30s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// DSN is the connection string of database db as role, over the Unix
// socket.
func (s *Server) DSN(db, role string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", s.socketDir, s.port, role, db)
}

// URL is the postgres:// URL of database db as role over TCP, the form
// BINDERY_DB takes.
func (s *Server) URL(db, role string) string { return s.URLAt("127.0.0.1", db, role) }

// URLAt is URL through another of the server's addresses (Options.Listen).
func (s *Server) URLAt(host, db, role string) string {
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", role, host, s.port, db)
}

// Exec runs statements as the superuser on database db.
func (s *Server) Exec(ctx context.Context, db string, stmts ...string) error {
	conn, err := sql.Open("pgx", s.DSN(db, Superuser))
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// Close stops the server (fast shutdown) and removes its folder.
func (s *Server) Close() error {
	s.stop()
	return os.RemoveAll(s.dir)
}

// Restart stops the server (fast shutdown: clients' connections are cut)
// and starts it again on the same port and data, as an operator's
// `systemctl restart postgresql` would.
func (s *Server) Restart() error {
	s.stop()
	return s.start()
}

func (s *Server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	s.cmd = nil
}

var shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Shared starts one server per test binary on first use; StopShared (from
// TestMain) stops it, and the kernel does if the binary dies first.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	shared.once.Do(func() { shared.srv, shared.err = Start() })
	if shared.err != nil {
		tb.Fatalf("pgtest: %v", shared.err)
	}
	return shared.srv
}

// StopShared stops the shared server, if one was started.
func StopShared() {
	if shared.srv != nil {
		shared.srv.Close()
	}
}

// NewDatabase creates an empty database owned by the superuser for one
// test, and drops it when the test ends. It returns its name.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	return NewDatabaseFrom(tb, "")
}

// NewDatabaseFrom is NewDatabase copying the database template (one
// nobody is connected to), or template1 when it is "".
func NewDatabaseFrom(tb testing.TB, template string) string {
	tb.Helper()
	s := Shared(tb)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.databases.Add(1))
	ctx := context.Background()
	create := "CREATE DATABASE " + name
	if template != "" {
		create += " TEMPLATE " + template
	}
	if err := s.Exec(ctx, "postgres", create); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() { _ = s.Exec(ctx, "postgres", "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return name
}
