// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package listeners

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"log/slog"
)

const TypeTCP = "tcp"

// TCP is a listener for establishing client connections on basic TCP protocol.
type TCP struct { // [MQTT-4.2.0-1]
	sync.RWMutex
	id      string       // the internal id of the listener
	address string       // the network address to bind to
	listen  net.Listener // a net.Listener which will listen for new clients
	config  Config       // configuration values for the listener
	log     *slog.Logger // server logger
	end     uint32       // ensure the close methods are only called once

	// dss: accept errors are retried (see Serve).
	acceptErrors atomic.Int64
	burst        acceptBurst
	closed       chan struct{} // closed by Close: ends a retry's wait
	closeOnce    sync.Once
}

// The waits between the attempts of a burst of accept errors: doubling
// from the first to the last, as net/http's Server does.
const (
	firstAcceptRetry = 5 * time.Millisecond
	lastAcceptRetry  = time.Second
)

// NewTCP initializes and returns a new TCP listener, listening on an address.
func NewTCP(config Config) *TCP {
	return &TCP{
		id:      config.ID,
		address: config.Address,
		config:  config,
		closed:  make(chan struct{}),
	}
}

// NewTCPFromListener returns a TCP listener that serves ln, which is
// already listening (a socket handed over by a supervisor, or a test's).
// dss.
func NewTCPFromListener(id string, ln net.Listener) *TCP {
	l := NewTCP(Config{ID: id, Address: ln.Addr().String()})
	l.listen = ln
	return l
}

// ID returns the id of the listener.
func (l *TCP) ID() string {
	return l.id
}

// Address returns the address of the listener.
func (l *TCP) Address() string {
	if l.listen != nil {
		return l.listen.Addr().String()
	}
	return l.address
}

// Protocol returns the listener's protocol, "tcp".
func (l *TCP) Protocol() string {
	return "tcp"
}

// Init initializes the listener.
func (l *TCP) Init(log *slog.Logger) error {
	l.log = log
	if l.listen != nil {
		return nil // NewTCPFromListener
	}

	var err error
	if l.config.TLSConfig != nil {
		l.listen, err = tls.Listen("tcp", l.address, l.config.TLSConfig)
	} else {
		l.listen, err = net.Listen("tcp", l.address)
	}

	return err
}

// Serve starts waiting for new TCP connections, and calls the establish
// connection callback for any received.
//
// dss: upstream returned from its loop on any accept error, and the broker
// never accepted a connection again (one moment with more sockets than
// the descriptor limit was enough). Every error but the listener's close
// is now retried, after waits doubling from 5 ms to 1 s as net/http's
// Server does; each is counted (AcceptErrors), a burst is logged once
// when it starts and once acceptQuiet after a retry that did not fail,
// and Failing reports the last error until a connection is accepted or
// the burst ends.
func (l *TCP) Serve(establish EstablishFn) {
	var wait time.Duration
	for {
		if atomic.LoadUint32(&l.end) == 1 {
			return
		}

		conn, err := l.listen.Accept()
		if err != nil {
			if atomic.LoadUint32(&l.end) == 1 || errors.Is(err, net.ErrClosed) {
				return
			}
			l.acceptErrors.Add(1)
			if l.burst.failed(err) {
				l.log.Error("accepting connections failed; retrying", "error", err)
			}
			if wait == 0 {
				wait = firstAcceptRetry
			} else {
				wait = min(2*wait, lastAcceptRetry)
			}
			select {
			case <-time.After(wait):
			case <-l.closed:
				return
			}
			l.burst.retrying(func(errors int64) {
				l.log.Info("accepting connections again", "errors", errors)
			})
			continue
		}
		if wait != 0 {
			wait = 0
			l.burst.accepted()
		}

		if atomic.LoadUint32(&l.end) == 0 {
			go func() {
				// dss: the error was the loop's variable, written by
				// every connection's goroutine (a data race).
				if err := establish(l.id, conn); err != nil {
					// dss: a connection ending with an error (reset, closed at
					// shutdown, a malformed packet) is the client's business;
					// a Warn line each, with no message, flooded the log.
					l.log.Debug("client connection ended", "error", err)
				}
			}()
		} else {
			_ = conn.Close()
		}
	}
}

// AcceptErrors returns how many accept errors the listener met.
func (l *TCP) AcceptErrors() int64 { return l.acceptErrors.Load() }

// Failing returns the error of the burst of accept errors under way, or
// nil while the listener accepts connections.
func (l *TCP) Failing() error { return l.burst.failing() }

// Close closes the listener and any client connections.
func (l *TCP) Close(closeClients CloseFn) {
	l.Lock()
	defer l.Unlock()

	if atomic.CompareAndSwapUint32(&l.end, 0, 1) {
		closeClients(l.id)
	}
	l.closeOnce.Do(func() { close(l.closed) })
	l.burst.stop()

	if l.listen != nil {
		err := l.listen.Close()
		if err != nil {
			return
		}
	}
}
