package cli

import (
	"fmt"

	"github.com/eclipse/paho.golang/paho"
	"github.com/spf13/cobra"
)

func newSubCmd(stdio Stdio) *cobra.Command {
	var (
		f       clientFlags
		qos     int
		count   int
		noLocal bool
	)
	cmd := &cobra.Command{
		Use:   "sub FILTER...",
		Short: "Subscribe to MQTT topics and print the messages",
		Long: `Subscribe to the topic FILTERs (MQTT wildcards + and # allowed) and print
every message until interrupted (SIGINT or SIGTERM; then dss exits 0) or
until --count messages arrived.

Each message is one line, TOPIC PAYLOAD, escaped as dss watch escapes keys
and values (a space in the topic as \x20, a newline in the payload as \n,
bytes that are not printable UTF-8 as \xHH), so that one message is one
line. With --json, one object per message: {"topic":..., "payload":...,
"encoding":..., "qos":..., "retain":..., "user_properties":[{"key":...,
"value":...}], "content_type":..., "response_topic":...,
"correlation_data":..., "message_expiry":...} (the last four when set;
"encoding" says how payload and correlation_data are written, "utf8" or
"base64", as for every --json of dss).

--timeout bounds the connection and the subscription, not the wait for
messages.

Exit status: 0 interrupted or --count reached, 2 error (a refused
subscription, a lost connection).`,
		Example: `  dss sub 'sensors/#'
  dss sub --json --qos 1 sensors/line-1/temp alarms/+
  dss sub --count 1 config/version`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, filters []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			if qos < 0 || qos > 2 {
				return fmt.Errorf("--qos %d: want 0, 1 or 2", qos)
			}
			ctx := cmd.Context()
			// Messages are handed from paho's goroutine to this one, which
			// writes and counts them.
			msgs := make(chan *paho.Publish, 256)
			done := make(chan struct{})
			defer close(done)
			cctx, cancel := f.withTimeout(ctx)
			defer cancel()
			c, err := f.dialMQTT(cctx, func(p *paho.Publish) {
				select {
				case msgs <- p:
				case <-done:
				}
			})
			if err != nil {
				return err
			}
			defer c.close()
			sub := &paho.Subscribe{}
			for _, filter := range filters {
				sub.Subscriptions = append(sub.Subscriptions, paho.SubscribeOptions{Topic: filter, QoS: byte(qos), NoLocal: noLocal})
			}
			sa, err := c.pc.Subscribe(cctx, sub)
			if sa != nil {
				for i, code := range sa.Reasons {
					if code >= 0x80 && i < len(filters) {
						return fmt.Errorf("subscription to %q refused with reason code %#02x%s", filters[i], code, reasonString(sa))
					}
				}
			}
			if err != nil {
				return f.explain(fmt.Errorf("subscribe: %w", err))
			}
			cancel()
			n := 0
			for count <= 0 || n < count {
				select {
				case p := <-msgs:
					if err := printMessage(stdio, &f, p); err != nil {
						return err
					}
					n++
				case err := <-c.lost:
					return err
				case <-ctx.Done():
					return nil
				}
			}
			return nil
		},
	}
	addClientFlags(cmd, &f, true, "how long to wait for the server and the subscription")
	fs := cmd.Flags()
	fs.IntVar(&qos, "qos", 0, "the highest quality of service to receive with: 0, 1 or 2")
	fs.IntVar(&count, "count", 0, "exit after this many messages (0: run until interrupted)")
	fs.BoolVar(&noLocal, "no-local", false, "do not receive the messages this connection publishes")
	return cmd
}

func reasonString(sa *paho.Suback) string {
	if sa.Properties != nil && sa.Properties.ReasonString != "" {
		return ": " + sa.Properties.ReasonString
	}
	return ""
}

// printMessage writes one received message.
func printMessage(stdio Stdio, f *clientFlags, p *paho.Publish) error {
	if f.json {
		o := jsonObject{"topic": p.Topic, "qos": p.QoS, "retain": p.Retain}.bytes("payload", p.Payload)
		users := []map[string]string{}
		if pp := p.Properties; pp != nil {
			for _, u := range pp.User {
				users = append(users, map[string]string{"key": u.Key, "value": u.Value})
			}
			if pp.ContentType != "" {
				o["content_type"] = pp.ContentType
			}
			if pp.ResponseTopic != "" {
				o["response_topic"] = pp.ResponseTopic
			}
			if pp.CorrelationData != nil {
				o.bytes("correlation_data", pp.CorrelationData)
			}
			if pp.MessageExpiry != nil {
				o["message_expiry"] = *pp.MessageExpiry
			}
		}
		o["user_properties"] = users
		return o.write(stdio.Out)
	}
	line := appendEscaped(nil, []byte(p.Topic), true)
	line = append(line, ' ')
	line = appendEscaped(line, p.Payload, false)
	_, err := stdio.Out.Write(append(line, '\n'))
	return err
}
