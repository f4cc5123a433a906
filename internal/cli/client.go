package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/hlc"
)

// clientFlags are the flags that every client command has.
type clientFlags struct {
	server   string
	clientID string
	timeout  time.Duration
	json     bool
	sec      securityFlags
}

// addClientFlags adds --server and --timeout to cmd, and --json when
// withJSON is set. timeoutUsage says what the timeout bounds.
func addClientFlags(cmd *cobra.Command, f *clientFlags, withJSON bool, timeoutUsage string) {
	cmd.Flags().StringVar(&f.server, "server", "localhost:1883", "server address HOST:PORT, or a comma-separated list to fail over between")
	durationFlag(cmd.Flags(), &f.timeout, "timeout", 10*time.Second, timeoutUsage+" (0: no limit)")
	cmd.Flags().StringVar(&f.clientID, "client-id", "", "MQTT client id (default: dss- and 16 random hex digits); through a broker whose ACL names clients, the id it grants (dss attach)")
	if withJSON {
		cmd.Flags().BoolVar(&f.json, "json", false, "print the result as JSON, with the version")
	}
	f.sec.add(cmd.Flags())
}

// servers splits the --server list.
func (f *clientFlags) servers() []string {
	var out []string
	for _, s := range strings.Split(f.server, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// withTimeout bounds ctx by --timeout.
func (f *clientFlags) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if f.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, f.timeout)
}

// dial connects to the --server list. When every server refuses, it fails
// at once rather than trying again until --timeout.
func (f *clientFlags) dial(ctx context.Context) (*client.Client, error) {
	cfg, err := f.config()
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(ctx, cfg)
	return c, f.explain(err)
}

// config is the client configuration the flags ask for.
func (f *clientFlags) config() (client.Config, error) {
	tlsCfg, err := f.sec.tlsConfig()
	if err != nil {
		return client.Config{}, err
	}
	return client.Config{
		Servers:    f.servers(),
		ClientID:   f.clientID,
		DialRounds: 1,
		TLS:        tlsCfg,
		Username:   f.sec.username,
		Password:   f.sec.passwordBytes(),
	}, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// explain adds the flag to blame to a timeout.
func (f *clientFlags) explain(err error) error {
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (--timeout %v)", err, f.timeout)
	}
	return err
}

// runClient dials, runs do with the client under --timeout, and closes
// the client.
func (f *clientFlags) runClient(ctx context.Context, do func(context.Context, *client.Client) error) error {
	ctx, cancel := f.withTimeout(ctx)
	defer cancel()
	c, err := f.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return f.explain(do(ctx, c))
}

// readValue returns a value argument: the argument itself, or all of
// standard input for "-".
func readValue(arg string, in io.Reader) ([]byte, error) {
	if arg != "-" {
		return []byte(arg), nil
	}
	if in == nil {
		return nil, errors.New("value '-': no standard input")
	}
	b, err := io.ReadAll(in)
	if err != nil {
		return nil, fmt.Errorf("read the value from standard input: %w", err)
	}
	return b, nil
}

// fencingFlag is --fencing-token, of the commands that write a key.
type fencingFlag string

func (f *fencingFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVar((*string)(f), "fencing-token", "", "fencing token (a lock's version) for a protected key")
}

// token is the flag's fencing token; empty means none.
func (f fencingFlag) token() (hlc.Timestamp, error) {
	if f == "" {
		return hlc.Timestamp{}, nil
	}
	ts, err := hlc.Parse(string(f))
	if err != nil {
		return ts, fmt.Errorf("--fencing-token %q: want wall:counter:node, as a lock prints it", string(f))
	}
	return ts, nil
}

// jsonObject is one line of --json output. Keys and values are binary:
// every object that has any carries "encoding", which says how all of them
// are written: "utf8" when each is valid UTF-8 text, written as is, or
// "base64" when any is not, and then each is base64-encoded (standard
// alphabet, padded). So one command prints one shape of object, whatever
// the bytes.
type jsonObject map[string]any

// binary is a field of a jsonObject that holds bytes.
type binary []byte

func (o jsonObject) bytes(name string, b []byte) jsonObject {
	o[name] = binary(b)
	return o
}

func (o jsonObject) version(v hlc.Timestamp) jsonObject {
	if !v.IsZero() {
		o["version"] = v.String()
	}
	return o
}

func (o jsonObject) write(w io.Writer) error {
	encoding := ""
	for _, v := range o {
		if b, ok := v.(binary); ok {
			if encoding == "" {
				encoding = encodingUTF8
			}
			if !utf8.Valid(b) {
				encoding = encodingBase64
			}
		}
	}
	out := make(map[string]any, len(o)+1)
	for k, v := range o {
		if b, ok := v.(binary); ok {
			if encoding == encodingBase64 {
				v = base64.StdEncoding.EncodeToString(b)
			} else {
				v = string(b)
			}
		}
		out[k] = v
	}
	if encoding != "" {
		out["encoding"] = encoding
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// The encodings of the binary fields of --json output.
const (
	encodingUTF8   = "utf8"
	encodingBase64 = "base64"
)

// notMet is the exit status 1: the key is missing or a condition was not
// met. The reason goes to standard error when standard output is a
// terminal; a pipe gets nothing (see exitError.quiet).
func notMet(format string, args ...any) error {
	return &exitError{code: ExitFalse, err: fmt.Errorf(format, args...), quiet: true}
}
