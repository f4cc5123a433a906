package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// What the watching connections of keynotify and watch runs share: their
// registration and the loop that reads their notifications.

// registerAll sends KEYNOTIFY from every watcher, a few at a time:
// watcher i registers for regs.key(index(i)), as a pattern when pattern is
// set.
func registerAll(ctx context.Context, cfg *Config, watchers []*conn, regs keySpace, pattern bool, index func(i int) int) error {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		tickets = make(chan struct{}, 64)
	)
	for i, c := range watchers {
		tickets <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-tickets }()
			tpl := newTemplate(opKeyNotify, regs, requestArgs{pattern: pattern}, c.responseTopic)
			ts := appendTimestamp(nil, time.Now().UnixMilli())
			deadline := time.Now().Add(cfg.Timeout)
			if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
				deadline = d
			}
			res, err := c.call(tpl.appendRequest(nil, 1, 1, ts, index(i)), opKeyNotify, 1, 0, deadline)
			_ = c.nc.SetDeadline(time.Time{})
			if err == nil && res.kind != errNone {
				err = errors.New(res.sample)
			}
			if err == nil && res.out != outOK {
				err = errors.New("KEYNOTIFY was not answered +OK")
			}
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("bench: KEYNOTIFY %q from %s: %w", regs.key(index(i)), c.id, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// quotePattern returns the pattern that matches s alone: its wildcards
// made literal, each in a set of its own (wire.MatchPattern has no escape
// character).
func quotePattern(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[':
			b.WriteByte('[')
			b.WriteRune(r)
			b.WriteByte(']')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// notificationReader reads the notifications of one watching connection,
// acknowledges them and hands each to a handler, until the connection
// ends or the phase stops.
type notificationReader struct {
	ph  *phase
	c   *conn
	cnt counters
	out []byte
	pkt publish
}

func (w *notificationReader) run(handle func(p *publish, now int64)) {
	ph := w.ph
	for {
		err := w.c.fill()
		now := ph.now()
		if err != nil {
			if !ph.stopped.Load() {
				w.cnt.fail(errConnection, func() string { return "read: " + err.Error() }, -1)
			}
			return
		}
		for {
			first, body, err := w.c.next()
			if errors.Is(err, errIncomplete) {
				break
			}
			if err != nil {
				w.cnt.fail(errConnection, func() string { return "read: " + err.Error() }, -1)
				return
			}
			switch first >> 4 {
			case typePublish:
				if err := parsePublish(first, body, &w.pkt); err != nil {
					w.cnt.fail(errConnection, func() string { return "malformed PUBLISH from the server" }, -1)
					return
				}
				if w.pkt.qos > 0 {
					w.out = appendPuback(w.out, w.pkt.packetID)
				}
				handle(&w.pkt, now)
			case typeDisconnect:
				w.cnt.fail(errConnection, func() string { return fmt.Sprintf("the server disconnected: % x", body) }, -1)
				return
			}
		}
		if len(w.out) > 0 {
			if _, err := w.c.nc.Write(w.out); err != nil {
				if !ph.stopped.Load() {
					w.cnt.fail(errConnection, func() string { return "write: " + err.Error() }, -1)
				}
				return
			}
			w.out = w.out[:0]
		}
	}
}
