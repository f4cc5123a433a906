package cli

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/client"
)

// mqttConn is a plain MQTT 5 connection for dss pub and dss sub, made
// with the client commands' flags (servers, TLS, credentials).
type mqttConn struct {
	pc   *paho.Client
	addr string
	// maxPacket is the server's Maximum Packet Size, 0 for none.
	maxPacket uint32
	lost      chan error // receives why the server or the network ended it
}

// dialMQTT connects to the first server of the --server list that
// answers. onPublish, when set, receives every message, on paho's
// goroutine.
func (f *clientFlags) dialMQTT(ctx context.Context, onPublish func(*paho.Publish)) (*mqttConn, error) {
	tlsCfg, err := f.sec.tlsConfig()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, s := range f.servers() {
		c, err := f.dialOne(ctx, s, tlsCfg, onPublish)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, errors.New("--server: no server given")
	}
	return nil, f.explain(errors.Join(errs...))
}

func (f *clientFlags) dialOne(ctx context.Context, server string, tlsCfg *tls.Config, onPublish func(*paho.Publish)) (*mqttConn, error) {
	addr, secure, err := client.ResolveServer(server, tlsCfg != nil)
	if err != nil {
		return nil, err
	}
	var nc net.Conn
	if secure {
		if tlsCfg == nil {
			tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		d := tls.Dialer{Config: tlsCfg}
		nc, err = d.DialContext(ctx, "tcp", addr)
		if err == nil {
			// paho writes a packet in several writes, which TLS does not
			// keep together; it holds a Locker writer's lock per packet.
			nc = &lockedConn{Conn: nc}
		}
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	c := &mqttConn{addr: addr, lost: make(chan error, 2)}
	var once sync.Once
	end := func(err error) { once.Do(func() { c.lost <- err }) }
	cfg := paho.ClientConfig{
		Conn:          nc,
		OnClientError: func(err error) { end(fmt.Errorf("connection to %s lost: %w", addr, err)) },
		OnServerDisconnect: func(d *paho.Disconnect) {
			reason := ""
			if d.Properties != nil && d.Properties.ReasonString != "" {
				reason = ": " + d.Properties.ReasonString
			}
			end(fmt.Errorf("%s disconnected with reason code %#02x%s", addr, d.ReasonCode, reason))
		},
	}
	if onPublish != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			onPublish(pr.Packet)
			return true, nil
		}}
	}
	c.pc = paho.NewClient(cfg)
	id := f.clientID
	if id == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id = "dss-" + hex.EncodeToString(b[:])
	}
	connect := &paho.Connect{ClientID: id, KeepAlive: 30, CleanStart: true}
	if f.sec.username != "" {
		connect.UsernameFlag, connect.Username = true, f.sec.username
	}
	if p := f.sec.passwordBytes(); p != nil {
		connect.PasswordFlag, connect.Password = true, p
	}
	ca, err := c.pc.Connect(ctx, connect)
	if err != nil {
		_ = nc.Close()
		if ca != nil && ca.ReasonCode >= 0x80 {
			reason := ""
			if ca.Properties != nil && ca.Properties.ReasonString != "" {
				reason = ": " + ca.Properties.ReasonString
			}
			return nil, fmt.Errorf("connect to %s: refused with reason code %#02x%s", addr, ca.ReasonCode, reason)
		}
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	if ca.Properties != nil && ca.Properties.MaximumPacketSize != nil {
		c.maxPacket = *ca.Properties.MaximumPacketSize
	}
	return c, nil
}

// close ends the connection with a normal DISCONNECT.
func (c *mqttConn) close() {
	_ = c.pc.Disconnect(&paho.Disconnect{ReasonCode: 0})
	<-c.pc.Done()
}

// lockedConn is a connection whose writers paho serializes packet by
// packet (it locks a writer that is a sync.Locker while it writes one).
type lockedConn struct {
	net.Conn
	sync.Mutex
}
