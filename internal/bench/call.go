package bench

import (
	"encoding/binary"
	"fmt"
	"time"
)

// callResult is the validated response of a call.
type callResult struct {
	out    outcome
	kind   errKind // errNone when the response was valid
	sample string  // what was wrong, when kind is not errNone
}

// call sends one request (with packet id 1 and correlation corr) and waits
// until both its PUBACK and its response came, acknowledging the response.
// It is for the few requests that are not on a hot path: registrations
// and the fan-out writer's SETs. Publishes on other topics go to other,
// which may be nil.
func (c *conn) call(req []byte, v verb, corr uint64, valueSize int, deadline time.Time) (callResult, error) {
	_ = c.nc.SetDeadline(deadline)
	if _, err := c.nc.Write(req); err != nil {
		return callResult{}, err
	}
	var (
		res             callResult
		acked, answered bool
		p               publish
		ack             [4]byte
		wantCorrelation [8]byte
	)
	binary.BigEndian.PutUint64(wantCorrelation[:], corr)
	for !acked || !answered {
		first, body, err := c.readOne()
		if err != nil {
			return res, err
		}
		switch first >> 4 {
		case typePuback:
			id, reason, err := parseAck(body)
			if err != nil || id != 1 || acked {
				return res, fmt.Errorf("unexpected PUBACK (packet id %d)", id)
			}
			acked = true
			if reason >= 0x80 {
				res = callResult{kind: errPuback, sample: fmt.Sprintf("%s acknowledged with reason code %#x", v, reason)}
				answered = true
			}
		case typePublish:
			if err := parsePublish(first, body, &p); err != nil {
				return res, err
			}
			if p.qos > 0 {
				if _, err := c.nc.Write(appendPuback(ack[:0], p.packetID)); err != nil {
					return res, err
				}
			}
			switch {
			case string(p.topic) != c.responseTopic:
				return res, fmt.Errorf("unexpected message on %q", p.topic)
			case string(p.correlation) != string(wantCorrelation[:]):
				res = callResult{kind: errCorrelation, sample: fmt.Sprintf("correlation data % x of no outstanding request", p.correlation)}
			default:
				// Validate now: the payload is gone after the next read.
				res.out, res.kind = validate(v, valueSize, &p)
				if res.kind != errNone {
					res.sample = describe(v, &p)
				}
			}
			answered = true
		case typeDisconnect:
			return res, fmt.Errorf("the server disconnected: % x", body)
		}
	}
	return res, nil
}
