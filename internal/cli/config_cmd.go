package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/dssio/dss/internal/server"
)

func newConfigCmd(stdio Stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the configuration dss serve would run with",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newConfigPrintCmd(stdio))
	return cmd
}

func newConfigPrintCmd(stdio Stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "print [SERVE FLAGS]",
		Short: "Print the effective settings of dss serve, with where each came from",
		Long: `Print the settings dss serve would run with, given the same flags,
environment and configuration file, as YAML that --config accepts: one
key per flag of dss serve, with a comment saying whether the value came from
the command line, the environment (DSS_...), the file or the default.
A setting left empty whose value the server works out (the listeners,
which stay on loopback until authentication is configured, and the node
id) names that value in its comment. Secrets (passwords, tokens) are
masked. The settings are checked as dss serve checks them before it
starts (a listener beyond loopback without authentication, a cluster
node --in-memory, a users, policy or TLS file that cannot be read); what
serve would refuse is reported with exit status 2. What only starting
can tell (a port already taken, a damaged data directory) is not checked.`,
		Example: `  dss config print
  dss config print --config /etc/dss/dss.yaml
  DSS_FSYNC=everysec dss config print --listen 127.0.0.1:1884`,
		Args: cobra.NoArgs,
	}
	// The settings are dss serve's own flags: whatever serve accepts,
	// this prints.
	serve, build := newServeCommand(stdio)
	cmd.Flags().AddFlagSet(serve.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		// The checks of dss serve, all of them: what serve would refuse
		// fails here too.
		cfg, st, err := build(cmd)
		if err != nil {
			return err
		}
		if err := server.Check(cfg); err != nil {
			return err
		}
		doc := &yaml.Node{Kind: yaml.MappingNode}
		for _, e := range configEntries(cmd.Flags(), st) {
			if e.flag.Name == configFlag {
				continue
			}
			v := e.node()
			v.LineComment = e.comment()
			if d := serverDefault(cmd.Flags(), e.flag); d != "" {
				v.LineComment += ": the server uses " + d
			}
			doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: e.flag.Name}, v)
		}
		out, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		header := "# dss serve settings: command line > environment > config file > default\n"
		if st.file != "" {
			header += fmt.Sprintf("# config file: %s\n", st.file)
		}
		_, err = fmt.Fprint(stdio.Out, header+string(out))
		return err
	}
	return cmd
}

// serverDefault returns the value the server puts in place of an empty
// setting whose default depends on the others (the listeners, which
// stay on loopback until authentication is configured) or on the
// machine (the node id), or "" for any other setting.
func serverDefault(fs *pflag.FlagSet, f *pflag.Flag) string {
	if f.Value.String() != "" {
		return ""
	}
	value := func(name string) string { return fs.Lookup(name).Value.String() }
	c := server.Config{Users: value("users"), TLSClientCA: value("tls-client-ca"), TLSCert: value("tls-cert")}
	switch f.Name {
	case "listen":
		return c.DefaultListen()
	case "tls-listen":
		if c.TLSCert != "" {
			return c.DefaultTLSListen()
		}
	case "node-id":
		return server.DefaultNodeID()
	}
	return ""
}
