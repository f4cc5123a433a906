package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/spf13/cobra"
)

// pubFlags are the message options of dss pub.
type pubFlags struct {
	qos           int
	retain        bool
	user          []string
	contentType   string
	responseTopic string
	correlation   string
	expiry        time.Duration
}

func newPubCmd(stdio Stdio) *cobra.Command {
	var f clientFlags
	var p pubFlags
	cmd := &cobra.Command{
		Use:   "pub TOPIC MESSAGE",
		Short: "Publish an MQTT 5 message",
		Long: `Publish MESSAGE to TOPIC, as any MQTT 5 client would: the broker delivers it
to the topic's subscribers (dss sub). A MESSAGE of - reads standard input,
so any bytes can be sent.

--qos 0, 1 or 2; --retain keeps it for later subscribers (an empty retained
message deletes the one kept); --user KEY=VALUE adds a user property (again
for more); --content-type, --response-topic, --correlation-data and
--expiry (a duration) set those MQTT 5 properties.

With QoS 1 or 2 dss waits for the broker's acknowledgement: a refusal
(reason code 0x80 or above, such as 0x87 not authorized) exits 2 with the
code and the broker's reason. With --json, one object:
{"topic":..., "qos":..., "retain":..., "bytes":..., "reason_code":...}
(reason_code 16, 0x10, says that no subscriber matched).

Exit status: 0 published, 2 error.`,
		Example: `  dss pub sensors/line-1/temp 21.5
  dss pub --qos 1 --retain --user unit=celsius sensors/line-1/temp 21.5
  dss pub --qos 2 firmware/blob - < image.bin`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			payload, err := readValue(args[1], stdio.In)
			if err != nil {
				return err
			}
			msg, err := p.message(args[0], payload)
			if err != nil {
				return err
			}
			ctx, cancel := f.withTimeout(cmd.Context())
			defer cancel()
			c, err := f.dialMQTT(ctx, nil)
			if err != nil {
				return err
			}
			defer c.close()
			if n := publishSize(msg); c.maxPacket > 0 && n > int(c.maxPacket) {
				return fmt.Errorf("the message is %d bytes, more than the server's maximum packet size of %d bytes (dss serve --max-packet-size): not sent", n, c.maxPacket)
			}
			res, err := c.pc.Publish(ctx, msg)
			code := byte(0)
			if res != nil {
				code = res.ReasonCode
			}
			if code >= 0x80 {
				reason := ""
				if res.Properties != nil && res.Properties.ReasonString != "" {
					reason = ": " + res.Properties.ReasonString
				}
				return fmt.Errorf("publish to %q refused with reason code %#02x%s", args[0], code, reason)
			}
			if err != nil {
				return f.explain(fmt.Errorf("publish to %q: %w", args[0], err))
			}
			if f.json {
				return jsonObject{"topic": args[0], "qos": p.qos, "retain": p.retain, "bytes": len(payload), "reason_code": code}.write(stdio.Out)
			}
			return nil
		},
	}
	addClientFlags(cmd, &f, true, "how long to wait for the server and its acknowledgement")
	fs := cmd.Flags()
	fs.IntVar(&p.qos, "qos", 0, "quality of service: 0, 1 or 2")
	fs.BoolVar(&p.retain, "retain", false, "retain the message for later subscribers")
	fs.StringArrayVar(&p.user, "user", nil, "user property KEY=VALUE (repeat for more)")
	fs.StringVar(&p.contentType, "content-type", "", "MQTT 5 content type")
	fs.StringVar(&p.responseTopic, "response-topic", "", "MQTT 5 response topic")
	fs.StringVar(&p.correlation, "correlation-data", "", "MQTT 5 correlation data")
	durationFlag(fs, &p.expiry, "expiry", 0, "message expiry interval, whole seconds (0: none)")
	return cmd
}

// message builds the PUBLISH the flags ask for.
func (p *pubFlags) message(topic string, payload []byte) (*paho.Publish, error) {
	if p.qos < 0 || p.qos > 2 {
		return nil, fmt.Errorf("--qos %d: want 0, 1 or 2", p.qos)
	}
	if topic == "" || strings.ContainsAny(topic, "+#") {
		return nil, fmt.Errorf("topic %q: want a topic name without the wildcards + and #", topic)
	}
	props := &paho.PublishProperties{ContentType: p.contentType, ResponseTopic: p.responseTopic}
	if p.correlation != "" {
		props.CorrelationData = []byte(p.correlation)
	}
	if p.expiry < 0 || p.expiry%time.Second != 0 || p.expiry > time.Duration(1<<32-1)*time.Second {
		return nil, fmt.Errorf("--expiry %v: want whole seconds, 0 for none", p.expiry)
	}
	if p.expiry > 0 {
		secs := uint32(p.expiry / time.Second)
		props.MessageExpiry = &secs
	}
	for _, kv := range p.user {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--user %q: want KEY=VALUE", kv)
		}
		props.User = append(props.User, paho.UserProperty{Key: k, Value: v})
	}
	return &paho.Publish{Topic: topic, QoS: byte(p.qos), Retain: p.retain, Payload: payload, Properties: props}, nil
}

// publishSize is the size of p's PUBLISH packet on the wire.
func publishSize(p *paho.Publish) int {
	n := 0
	for _, b := range p.Packet().Buffers() {
		n += len(b)
	}
	switch { // the fixed header: a byte, and the length in 1 to 4
	case n < 128:
		return n + 2
	case n < 16384:
		return n + 3
	case n < 2097152:
		return n + 4
	}
	return n + 5
}
