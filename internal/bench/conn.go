package bench

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/packets"

	"github.com/dssio/dss/internal/rawio"
)

// conn is one MQTT 5 connection of the generator, with its own read
// buffer. It is used by one goroutine at a time.
type conn struct {
	nc            net.Conn
	id            string
	responseTopic string
	// receiveMax is how many unacknowledged QoS 1 requests the server
	// accepts from this connection (its CONNACK's Receive Maximum).
	receiveMax int

	buf        []byte
	start, end int // buf[start:end] is read and not yet consumed
}

// responseTopicFor is the response topic the protocol recommends.
func responseTopicFor(clientID string) string {
	return "clients/" + clientID + "/services/statestore/_any_/command/invoke/response"
}

// dial connects as clientID (with cfg's credentials and TLS) and
// subscribes to the response topic with QoS qos, and to any extra topic
// filters.
func dial(ctx context.Context, cfg *Config, clientID string, qos byte, extra ...string) (*conn, error) {
	var nc net.Conn
	var err error
	if cfg.TLS != nil {
		d := tls.Dialer{Config: cfg.TLS}
		nc, err = d.DialContext(ctx, "tcp", cfg.Server)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", cfg.Server)
		if err == nil {
			nc = rawio.Wrap(nc)
		}
	}
	if err != nil {
		return nil, err
	}
	c := &conn{nc: nc, id: clientID, responseTopic: responseTopicFor(clientID), buf: make([]byte, 16<<10)}
	if err := c.handshake(ctx, cfg, qos, extra); err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: %w", clientID, err)
	}
	return c, nil
}

func (c *conn) handshake(ctx context.Context, cfg *Config, qos byte, extra []string) error {
	if d, ok := ctx.Deadline(); ok {
		_ = c.nc.SetDeadline(d)
		defer c.nc.SetDeadline(time.Time{})
	}
	// Stop the handshake when ctx ends without a deadline, too.
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	recvMax := uint16(65535)
	connect := &packets.Connect{
		ProtocolName:    "MQTT",
		ProtocolVersion: 5,
		ClientID:        c.id,
		CleanStart:      true,
		KeepAlive:       cfg.keepAlive,
		Properties:      &packets.Properties{ReceiveMaximum: &recvMax},
	}
	if cfg.Username != "" {
		connect.UsernameFlag, connect.Username = true, cfg.Username
	}
	if cfg.Password != nil {
		connect.PasswordFlag, connect.Password = true, cfg.Password
	}
	if _, err := connect.WriteTo(c.nc); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	first, body, err := c.readOne()
	if err != nil {
		return fmt.Errorf("connack: %w", err)
	}
	if first>>4 != typeConnack {
		return fmt.Errorf("expected CONNACK, got packet type %d", first>>4)
	}
	if c.receiveMax, err = parseConnack(body); err != nil {
		return err
	}

	sub := &packets.Subscribe{PacketID: 1, Properties: &packets.Properties{}}
	for _, f := range append([]string{c.responseTopic}, extra...) {
		sub.Subscriptions = append(sub.Subscriptions, packets.SubOptions{Topic: f, QoS: qos})
	}
	if _, err := sub.WriteTo(c.nc); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	first, body, err = c.readOne()
	if err != nil {
		return fmt.Errorf("suback: %w", err)
	}
	if first>>4 != typeSuback {
		return fmt.Errorf("expected SUBACK, got packet type %d", first>>4)
	}
	return checkSuback(body, len(sub.Subscriptions))
}

// parseConnack returns the server's Receive Maximum (65,535 when absent)
// or the error of a refused connection.
func parseConnack(body []byte) (int, error) {
	if len(body) < 2 {
		return 0, errMalformed
	}
	if body[1] >= 0x80 {
		return 0, fmt.Errorf("connection refused with reason code %#x", body[1])
	}
	recvMax := 65535
	plen, m, ok := readVBI(body[2:])
	if !ok || len(body)-2-m < plen {
		return 0, errMalformed
	}
	props := body[2+m : 2+m+plen]
	for len(props) > 0 {
		id := props[0]
		if id == 0x21 && len(props) >= 3 {
			recvMax = int(binary.BigEndian.Uint16(props[1:]))
		}
		if props, ok = skipProperty(id, props[1:]); !ok {
			return 0, errMalformed
		}
	}
	return recvMax, nil
}

func checkSuback(body []byte, n int) error {
	if len(body) < 3 {
		return errMalformed
	}
	plen, m, ok := readVBI(body[2:])
	if !ok || len(body)-2-m < plen {
		return errMalformed
	}
	reasons := body[2+m+plen:]
	if len(reasons) != n {
		return fmt.Errorf("SUBACK with %d reason codes for %d subscriptions", len(reasons), n)
	}
	for _, r := range reasons {
		if r >= 0x80 {
			return fmt.Errorf("subscription refused with reason code %#x", r)
		}
	}
	return nil
}

// readOne blocks until one whole packet is read. The body aliases the read
// buffer until the next read.
func (c *conn) readOne() (first byte, body []byte, err error) {
	for {
		first, body, err = c.next()
		if !errors.Is(err, errIncomplete) {
			return first, body, err
		}
		if err := c.fill(); err != nil {
			return 0, nil, err
		}
	}
}

// next takes the next whole packet from the read buffer, or returns
// errIncomplete.
func (c *conn) next() (first byte, body []byte, err error) {
	first, body, n, err := splitPacket(c.buf[c.start:c.end])
	if err == nil {
		c.start += n
	}
	return first, body, err
}

// fill reads from the network into the buffer, making room first. Bodies
// returned by next before are invalid afterwards.
func (c *conn) fill() error {
	if c.start == c.end {
		c.start, c.end = 0, 0
	}
	if need, ok := packetLen(c.buf[c.start:c.end]); ok && need > len(c.buf) {
		// A packet larger than the buffer: grow it to fit.
		nb := make([]byte, need+4096)
		c.end = copy(nb, c.buf[c.start:c.end])
		c.start, c.buf = 0, nb
	} else if c.start > 0 && len(c.buf)-c.end < 4096 {
		c.end = copy(c.buf, c.buf[c.start:c.end])
		c.start = 0
	}
	n, err := c.nc.Read(c.buf[c.end:])
	c.end += n
	if n > 0 {
		return nil // deliver what was read; the error, if any, comes back
	}
	return err
}

// close says goodbye to the server and closes the connection.
func (c *conn) close() {
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.nc.Write(disconnectPacket)
	_ = c.nc.Close()
}

// dialAll connects n clients, a few at a time, and closes them all if one
// fails.
func dialAll(ctx context.Context, cfg *Config, prefix string, n int, qos byte, extra func(id string) []string) ([]*conn, error) {
	conns := make([]*conn, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		tickets = make(chan struct{}, 64)
	)
	for i := range conns {
		tickets <- struct{}{}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-tickets }()
			id := fmt.Sprintf("%s-%d", prefix, i)
			var subs []string
			if extra != nil {
				subs = extra(id)
			}
			dctx, dcancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
			c, err := dial(dctx, cfg, id, qos, subs...)
			dcancel()
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				cancel()
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	if first != nil {
		closeAll(conns)
		return nil, fmt.Errorf("bench: connect to %s: %w", cfg.Server, first)
	}
	return conns, nil
}

func closeAll(conns []*conn) {
	for _, c := range conns {
		if c != nil {
			c.close()
		}
	}
}
