package cli

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/internal/wire"
)

func newAttachACLCmd(stdio Stdio) *cobra.Command {
	var dss []string
	cmd := &cobra.Command{
		Use:   "mosquitto-acl [--dss USER]... CLIENT...",
		Short: "Print the Mosquitto ACL lines of dss's users and of clients",
		Long: `Print the lines of a Mosquitto ACL file (acl_file) that let each CLIENT
read its own state store responses and notifications, and each --dss USER
(an attached dss instance) serve the requests. Both name a user whose
client id is its user name (use_username_as_clientid true): the
notification topic and the vendor's response topic hold the client id in
hex, which an ACL pattern cannot compute. deploy/mosquitto/aclfile has
the lines every client shares.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, clients []string) error {
			if len(clients) == 0 && len(dss) == 0 {
				return fmt.Errorf("name at least one client or --dss user")
			}
			var b strings.Builder
			for _, u := range dss {
				if err := checkACLName(u); err != nil {
					return err
				}
				fmt.Fprintf(&b, "user %s\ntopic read %s\ntopic write clients/#\ntopic read $SYS/broker/log/N\ntopic read $SYS/broker/log/I\n\n", u, wire.RequestTopic)
			}
			for _, c := range clients {
				if err := checkACLName(c); err != nil {
					return err
				}
				h := strings.ToUpper(hex.EncodeToString([]byte(c)))
				fmt.Fprintf(&b, "user %s\ntopic read clients/%s/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke/response\ntopic read %s/%s/command/notify/+\n\n", c, h, wire.ReservedPrefix, h)
			}
			_, err := fmt.Fprint(stdio.Out, strings.TrimSuffix(b.String(), "\n"))
			return err
		},
	}
	cmd.Flags().StringArrayVar(&dss, "dss", nil, "user of an attached dss instance (repeatable)")
	return cmd
}

// checkACLName refuses a user name that an ACL file line cannot hold.
func checkACLName(name string) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n#+/") {
		return fmt.Errorf("%q: a user name for the ACL file may not be empty or hold spaces, '#', '+' or '/'", name)
	}
	return nil
}
