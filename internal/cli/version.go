package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/internal/buildinfo"
)

func newVersionCmd(stdio Stdio) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go release of this dss",
		Long: `Print dss's version, the commit it was built from and the Go release that
built it, as dss --version does. With --json, one object:
{"version":..., "commit":..., "modified":..., "go":..., "platform":...}.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			in := buildinfo.Get()
			if asJSON {
				return jsonObject{
					"version": in.Version, "commit": in.Commit, "modified": in.Modified,
					"go": in.GoVersion, "platform": in.Platform,
				}.write(stdio.Out)
			}
			_, err := fmt.Fprintln(stdio.Out, in)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the build as JSON")
	return cmd
}
