package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// DefaultPrefix is the subject prefix of a URL without a path
// ("nats://host:4222").
const DefaultPrefix = "ds"

// DefaultPort is the NATS client port used when a URL names none.
const DefaultPort = "4222"

// A Target is where a fleet output publishes or a consumer reads: one or
// more servers of a NATS system and a subject prefix, parsed from
// nats://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]…][/PREFIX] (tls:// asks
// for TLS). Credentials in the URL are kept apart from Display, which is
// what ds prints and records.
type Target struct {
	// Servers are the server URLs handed to nats.Connect, with the
	// scheme and without credentials ("nats://h1:4222").
	Servers []string
	// Prefix is the subject prefix, dot-separated tokens of printable
	// ASCII without "*", ">" or spaces ("ds", "fleet.ci").
	Prefix string
	// User and Password come from the URL's userinfo; a user without
	// a password is a token (nats://TOKEN@host).
	User, Password string
	// TLS is set by the tls:// scheme.
	TLS bool
	// Display is the URL without credentials: scheme, servers and prefix
	// ("nats://127.0.0.1:4222/ds"). It names the output in
	// datastream.health and datastream.transport records and messages.
	Display string
}

// IsURL reports whether an -o value or an input names a NATS target
// (nats:// or tls://) rather than a file.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "nats://") || strings.HasPrefix(s, "tls://")
}

// ParseTarget parses a target URL (see [Target]). Errors never repeat a
// password or token.
func ParseTarget(s string) (Target, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || (scheme != "nats" && scheme != "tls") {
		return Target{}, fmt.Errorf("%s: want nats://HOST:PORT/PREFIX or tls://HOST:PORT/PREFIX", Redact(s))
	}
	t := Target{TLS: scheme == "tls"}
	hosts, path, _ := strings.Cut(rest, "/")
	if strings.Contains(path, "@") {
		// A password or token with a raw "/" (base64) ends the host
		// part early; what follows must not be echoed.
		return Target{}, fmt.Errorf("%s: \"@\" after the first \"/\": write a \"/\" in a password or token as %%2F", Redact(s))
	}
	if at := strings.LastIndexByte(hosts, '@'); at >= 0 {
		info := hosts[:at]
		hosts = hosts[at+1:]
		u, p, hasPass := strings.Cut(info, ":")
		var err error
		if t.User, err = url.PathUnescape(u); err == nil && hasPass {
			t.Password, err = url.PathUnescape(p)
		}
		if err != nil {
			return Target{}, fmt.Errorf("%s: bad user information", Redact(s))
		}
	}
	if hosts == "" {
		return Target{}, fmt.Errorf("%s: no server named", Redact(s))
	}
	var shown []string
	for _, h := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = h, DefaultPort
			if strings.Contains(strings.Trim(h, "[]"), ":") && !strings.HasPrefix(h, "[") {
				return Target{}, fmt.Errorf("%s: bad server %q (an IPv6 address goes in brackets)", Redact(s), h)
			}
			host = strings.Trim(host, "[]")
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return Target{}, fmt.Errorf("%s: bad port in %q", Redact(s), h)
		}
		if host == "" {
			return Target{}, fmt.Errorf("%s: empty host in %q", Redact(s), h)
		}
		if !validHost(host) {
			return Target{}, fmt.Errorf("%s: bad host in %q (want a name of letters, digits, \"-\", \".\" and \"_\", or an IP address)", Redact(s), h)
		}
		hp := net.JoinHostPort(host, port)
		t.Servers = append(t.Servers, scheme+"://"+hp)
		shown = append(shown, hp)
	}
	if strings.ContainsAny(path, "?#") {
		return Target{}, fmt.Errorf("%s: a NATS URL takes no query or fragment (want nats://HOST:PORT/PREFIX)", Redact(s))
	}
	if path == "" {
		path = DefaultPrefix
	}
	if err := checkPrefix(path); err != nil {
		return Target{}, fmt.Errorf("%s: %w", Redact(s), err)
	}
	t.Prefix = path
	t.Display = scheme + "://" + strings.Join(shown, ",") + "/" + path
	return t, nil
}

// validHost accepts a host name (letters, digits, "-", ".", "_"), an IPv4
// address or an IPv6 address (with an optional "%zone"): the hosts whose
// net.JoinHostPort form parses back to the same host, so that a Target's
// Display is itself a URL that ParseTarget accepts.
func validHost(host string) bool {
	addr, zone, hasZone := strings.Cut(host, "%")
	if ip := net.ParseIP(addr); ip != nil {
		return !hasZone || (strings.Contains(addr, ":") && zone != "" && hostChars(zone))
	}
	return !hasZone && hostChars(host)
}

func hostChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// checkPrefix accepts dot-separated tokens of printable ASCII other than
// the wildcards "*" and ">": the subjects ds builds under it must not
// match what the user did not ask for.
func checkPrefix(p string) error {
	for _, tok := range strings.Split(p, ".") {
		if tok == "" {
			return fmt.Errorf("prefix %q: empty token (want tokens separated by single dots)", p)
		}
		for i := 0; i < len(tok); i++ {
			c := tok[i]
			if c <= ' ' || c >= 0x7f || c == '*' || c == '>' || c == '/' {
				return fmt.Errorf("prefix %q: %q is not allowed in a subject token", p, string(c))
			}
		}
	}
	return nil
}

// Redact returns URL s with its user information replaced by "***" (all
// up to the last "@", which may follow a "/" of a password), for an error
// message or a name: what ds prints of a URL that [ParseTarget] refuses
// (one it takes is printed as its Display).
func Redact(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		scheme, rest = "", s
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		rest = "***@" + rest[at+1:]
	}
	if !ok {
		return rest
	}
	return scheme + "://" + rest
}

// Subject returns the subject of stream id under prefix:
// PREFIX.s.NODE.LIFE, NODE escaped by [EscapeNode] and LIFE in decimal.
func Subject(prefix string, id frames.StreamID) string {
	return prefix + ".s." + EscapeNode(string(id.Node)) + "." + strconv.FormatUint(uint64(id.Life), 10)
}

// AllSubjects returns the filter that matches every stream's subject
// under prefix: PREFIX.s.>.
func AllSubjects(prefix string) string { return prefix + ".s.>" }

// NodeSubjects returns the filter that matches every life of node under
// prefix: PREFIX.s.NODE.*.
func NodeSubjects(prefix string, node frames.NodeID) string {
	return prefix + ".s." + EscapeNode(string(node)) + ".*"
}

// EscapeNode makes a node name one subject token: bytes other than ASCII
// letters, digits, "-" and "_" become "=XX" (two upper-case hex digits),
// and the empty name is "=". The mapping is one to one, so no node name
// (one with dots, wildcards, spaces or "=") can reach another node's
// subject. Long names give long subjects; the server's limits apply.
func EscapeNode(node string) string {
	if node == "" {
		return "="
	}
	var b strings.Builder
	for i := 0; i < len(node); i++ {
		c := node[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "=%02X", c)
	}
	return b.String()
}

// StreamName returns the name of the JetStream stream ds nats init and
// ds collect create for prefix: "DS_" and the prefix with every byte other
// than letters, digits, "-" and "_" replaced by "_" (JetStream names
// cannot hold dots).
func StreamName(prefix string) string {
	b := []byte("DS_" + prefix)
	for i := 3; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// MsgID returns the Nats-Msg-Id of a message of stream id holding
// positions first..last: the stream (a hash of the node, so that the id
// stays short, and the life) and the two positions. A message without
// frames (only the stream's end) passes seq, the segment sequence number,
// as its identity instead. Publishing the same message again gives the
// same id, which JetStream de-duplicates.
func MsgID(id frames.StreamID, first, last frames.Position, frameless bool, seq uint64) string {
	h := sha256.Sum256([]byte(id.Node))
	node := hex.EncodeToString(h[:8])
	if frameless {
		return fmt.Sprintf("%s.%d.end%d", node, id.Life, seq)
	}
	return fmt.Sprintf("%s.%d.%d-%d", node, id.Life, first, last)
}

// Auth holds the credentials ds passes to a server besides the URL's.
// None of them is ever printed.
type Auth struct {
	CredsFile string // a NATS creds file (JWT and NKey seed)
	Token     string // a token (also: the URL's user without a password)
	TLSCA     string // PEM file of the CAs that sign the server's certificate
	TLSCert   string // PEM client certificate, with TLSKey
	TLSKey    string
}

// ConnectOptions says how [Connect] behaves while the server is away.
type ConnectOptions struct {
	// Name is the client name the server shows ("ds wrap").
	Name string
	// Retry keeps trying when the first connection fails (a producer
	// whose server is not up yet): Connect then returns a connection
	// that is reconnecting. Without it, a server that does not answer
	// within Timeout is an error.
	Retry bool
	// Timeout bounds the first connection attempt; 0 means 5 s.
	Timeout time.Duration
	// Disconnected and Reconnected, if set, are told of each outage
	// (with the error that ended the connection, nil when it was
	// closed cleanly) and of its end.
	Disconnected func(error)
	Reconnected  func()
}

// Connect connects to t's servers with auth. It reconnects forever after a
// lost connection, every 250 ms to 2 s, and keeps no reconnect buffer:
// while disconnected a publish fails at once, so that the caller's own
// bounded buffer is the only one and what it cannot hold is counted.
// Errors name the target by its Display form.
func Connect(t Target, auth Auth, o ConnectOptions) (*nats.Conn, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.CustomReconnectDelay(func(attempts int) time.Duration {
			return min(2*time.Second, time.Duration(attempts)*250*time.Millisecond)
		}),
		nats.ReconnectBufSize(-1),
		nats.PingInterval(5 * time.Second),
		nats.MaxPingsOutstanding(2),
		nats.RetryOnFailedConnect(o.Retry),
		// A socket write that blocks (a server that stopped reading)
		// gives up after 5 s instead of nats.go's minute, so that the
		// connection's lock, which Take's state checks take, is never
		// held long.
		nats.FlusherTimeout(5 * time.Second),
		// nats.go would print asynchronous errors on the process's
		// stderr (inside a wrapped command's output); the publisher
		// reports what they cost through its own state.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}
	if o.Disconnected != nil {
		opts = append(opts, nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { o.Disconnected(err) }))
	}
	if o.Reconnected != nil {
		opts = append(opts, nats.ReconnectHandler(func(*nats.Conn) { o.Reconnected() }))
		opts = append(opts, nats.ConnectHandler(func(*nats.Conn) { o.Reconnected() }))
	}
	switch {
	case t.User != "" && t.Password != "":
		opts = append(opts, nats.UserInfo(t.User, t.Password))
	case t.User != "":
		opts = append(opts, nats.Token(t.User))
	case auth.Token != "":
		opts = append(opts, nats.Token(auth.Token))
	}
	if auth.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(auth.CredsFile))
	}
	if auth.TLSCA != "" {
		opts = append(opts, nats.RootCAs(auth.TLSCA))
	}
	if auth.TLSCert != "" || auth.TLSKey != "" {
		opts = append(opts, nats.ClientCert(auth.TLSCert, auth.TLSKey))
	}
	if t.TLS && auth.TLSCA == "" && auth.TLSCert == "" {
		opts = append(opts, nats.Secure())
	}
	nc, err := nats.Connect(strings.Join(t.Servers, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Display, explain(err))
	}
	return nc, nil
}

// explain turns the errors of a failed connection into what the user
// should check.
func explain(err error) error {
	switch {
	case errors.Is(err, nats.ErrNoServers):
		return fmt.Errorf("server unreachable (%w)", err)
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		return fmt.Errorf("authorization refused: check the creds file, token or user (%w)", err)
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return fmt.Errorf("server unreachable (%w)", err)
	}
	return err
}

// Unreachable reports whether err, from Connect, means the server did
// not answer (nothing listens, a timeout, a refused or reset connection),
// as opposed to a server that answered and refused (credentials, TLS):
// only the first is worth retrying in the background.
func Unreachable(err error) bool {
	var op *net.OpError
	return errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout) || errors.As(err, &op)
}

// waitConnected waits until nc is connected or ctx is done.
func waitConnected(ctx context.Context, nc *nats.Conn) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !nc.IsConnected() {
		if nc.IsClosed() {
			return nats.ErrConnectionClosed
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
