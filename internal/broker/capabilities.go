package broker

import (
	"errors"
	"fmt"
	"time"

	mqtt "github.com/dssio/dss/internal/mqtt"
)

// Capabilities are the MQTT 5 capabilities the broker announces in every
// CONNACK and enforces. The Maximum Packet Size is Config.MaxPacketSize.
type Capabilities struct {
	// MaxKeepAlive caps the keep alive of MQTT 5 clients: one that asks
	// for more, or for none, gets this as Server Keep Alive and is held
	// to it. 0 sets no cap. MQTT 3.1.1 clients, which cannot be told,
	// keep their own.
	MaxKeepAlive time.Duration
	// MaxQoS is the highest QoS a client may publish with (a higher one
	// ends an MQTT 5 connection with DISCONNECT 0x9B) and that messages
	// are delivered with: 1 or 2. The state store needs QoS 1.
	MaxQoS byte
	// RetainAvailable lets clients retain messages; without it a PUBLISH
	// with RETAIN ends an MQTT 5 connection with DISCONNECT 0x9A.
	RetainAvailable bool
	// WildcardSubscriptions lets clients subscribe to filters with + or
	// #; without it such a subscription gets SUBACK 0xA2.
	WildcardSubscriptions bool
	// SharedSubscriptions lets clients subscribe to $share/...; without
	// it such a subscription gets SUBACK 0x9E.
	SharedSubscriptions bool
	// TopicAliasMaximum is how many topic aliases a client may set
	// (0: none); an alias above it ends the connection with DISCONNECT
	// 0x94.
	TopicAliasMaximum uint16
	// ReceiveMaximum is how many QoS 1 and 2 publishes a client may have
	// unacknowledged by the broker; one more ends the connection with
	// DISCONNECT 0x93. At least 1.
	ReceiveMaximum uint16
}

// DefaultCapabilities returns the capabilities dss serve starts with.
func DefaultCapabilities() Capabilities {
	return Capabilities{
		MaxQoS:                2,
		RetainAvailable:       true,
		WildcardSubscriptions: true,
		SharedSubscriptions:   true,
		// Each alias keeps a topic for the connection's life: a bound
		// keeps a client from making the broker hold many.
		TopicAliasMaximum: 10,
		ReceiveMaximum:    1024,
	}
}

// maxKeepAlive is the largest keep alive MQTT can carry, 65,535 seconds.
const maxKeepAlive = 65535 * time.Second

// Validate reports the first capability that cannot work.
func (c Capabilities) Validate() error {
	switch {
	case c.MaxKeepAlive < 0 || c.MaxKeepAlive > maxKeepAlive || c.MaxKeepAlive%time.Second != 0:
		return fmt.Errorf("broker: maximum keep alive %v: want 0 (no cap) or whole seconds up to %v", c.MaxKeepAlive, maxKeepAlive)
	case c.MaxQoS < 1 || c.MaxQoS > 2:
		return fmt.Errorf("broker: maximum QoS %d: want 1 or 2 (the state store needs QoS 1)", c.MaxQoS)
	case c.ReceiveMaximum == 0:
		return errors.New("broker: receive maximum 0: want 1 to 65535")
	}
	return nil
}

// apply sets the broker core's capabilities to c.
func (c Capabilities) apply(caps *mqtt.Capabilities) {
	caps.MaximumKeepalive = uint16(c.MaxKeepAlive / time.Second)
	caps.MaximumQos = c.MaxQoS
	caps.RetainAvailable = flag(c.RetainAvailable)
	caps.WildcardSubAvailable = flag(c.WildcardSubscriptions)
	caps.SharedSubAvailable = flag(c.SharedSubscriptions)
	caps.TopicAliasMaximum = c.TopicAliasMaximum
	caps.ReceiveMaximum = c.ReceiveMaximum
}

func flag(b bool) byte {
	if b {
		return 1
	}
	return 0
}
