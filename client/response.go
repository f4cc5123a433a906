package client

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// response is a checked response: RPC status 200, a well-formed payload
// that is not an error.
type response struct {
	reply resp.Reply
	// version is the response's __ts, when hasVersion is set.
	version    hlc.Timestamp
	hasVersion bool
	// ttl is the response's dss-ttl: the time a key has left.
	ttl time.Duration
}

// maxDrift bounds how far ahead of the local clock a version in a response
// may be for the client's clock to adopt it, as the vendor's clients do:
// a server clock far ahead must not drag the client's along.
const maxDrift = time.Minute

// decode checks a response publish and decodes its payload. A server error
// comes back as its *ServerError.
func (c *Client) decode(p *paho.Publish) (response, error) {
	res, err := decodeResponse(p)
	if err != nil {
		return res, err
	}
	if res.hasVersion && res.version.Wall <= time.Now().Add(maxDrift).UnixMilli() {
		// Later requests then carry a __ts after every version seen.
		c.clock.Observe(res.version)
	}
	return res, nil
}

// decodeResponse checks the envelope of a response (PROTOCOL.md section
// 2) and decodes its RESP3 payload (section 3).
func decodeResponse(p *paho.Publish) (response, error) {
	var res response
	var status, message, version, ts string
	var hasStatus, hasTs bool
	if p.Properties != nil {
		for _, u := range p.Properties.User {
			switch u.Key {
			case wire.PropStatus:
				status, hasStatus = u.Value, true
			case wire.PropStatusMessage:
				message = u.Value
			case wire.PropProtocolVersion:
				version = u.Value
			case wire.PropTimestamp:
				ts, hasTs = u.Value, true
			case wire.PropTTL:
				if ms, err := strconv.ParseInt(u.Value, 10, 64); err == nil && ms > 0 {
					res.ttl = time.Duration(ms) * time.Millisecond
				}
			}
		}
	}
	switch {
	case !hasStatus:
		return res, fmt.Errorf("%w: no %s", ErrBadResponse, wire.PropStatus)
	case status != wire.StatusOK:
		return res, &StatusError{Status: status, Message: message}
	case !wire.SupportedVersion(version):
		return res, fmt.Errorf("%w: protocol version %q", ErrBadResponse, version)
	}
	if hasTs {
		v, err := hlc.Parse(ts)
		if err != nil {
			return res, fmt.Errorf("%w: version %q: %w", ErrBadResponse, ts, err)
		}
		res.version, res.hasVersion = v, true
	}
	reply, err := resp.ParseReply(p.Payload)
	if err != nil {
		return res, fmt.Errorf("%w: payload %.64q: %w", ErrBadResponse, p.Payload, err)
	}
	if reply.Kind == resp.KindError {
		return res, serverErrorFor(string(bytes.TrimPrefix(reply.Text, []byte("ERR "))))
	}
	res.reply = reply
	return res, nil
}

// unexpected is the error for a reply of a kind the command never gets.
func unexpected(r resp.Reply) error {
	switch r.Kind {
	case resp.KindInteger:
		return fmt.Errorf("%w: unexpected integer %d", ErrBadResponse, r.Int)
	case resp.KindNull:
		return fmt.Errorf("%w: unexpected null", ErrBadResponse)
	}
	return fmt.Errorf("%w: unexpected reply %.64q", ErrBadResponse, r.Text)
}
