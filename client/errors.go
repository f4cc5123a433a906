package client

import (
	"errors"
	"fmt"

	"github.com/dssio/dss/internal/wire"
)

// ServerError is an error the state store answered a request with: the
// payload "-ERR <text>". Every text of the protocol has a sentinel below,
// and errors.Is matches a returned error against it; texts the client does
// not know (a newer server may add some) come back as a *ServerError too,
// so errors.As always yields the server's text.
type ServerError struct {
	// Text is the error text exactly as the server sent it.
	Text string
}

func (e *ServerError) Error() string { return e.Text }

// Is reports whether target is a *ServerError with the same text, so that
// errors.Is(err, ErrQuotaExceeded) holds for any error carrying that text.
func (e *ServerError) Is(target error) bool {
	t, ok := target.(*ServerError)
	return ok && t.Text == e.Text
}

// The error texts of the protocol (PROTOCOL.md, section 5), one sentinel
// each. Test with errors.Is.
var (
	// ErrTimestampSkew: the request's __ts is more than the allowed skew
	// ahead of the server's clock. Synchronise the clocks.
	ErrTimestampSkew = serverError(wire.ErrTimestampSkew)
	// ErrFencingTokenRequired: the key is protected by a fencing token and
	// the request carried none.
	ErrFencingTokenRequired = serverError(wire.ErrFencingRequired)
	// ErrFencingTokenSkew: the fencing token is more than the allowed skew
	// ahead of the server's clock.
	ErrFencingTokenSkew = serverError(wire.ErrFencingSkew)
	// ErrFencingTokenLowerVersion: the fencing token is older than the one
	// protecting the key; the caller's lock is stale.
	ErrFencingTokenLowerVersion = serverError(wire.ErrFencingLower)
	// ErrQuotaExceeded: the server's limit on keys or bytes would be
	// exceeded.
	ErrQuotaExceeded = serverError(wire.ErrQuotaExceeded)
	// ErrSyntax: the request was not well formed.
	ErrSyntax = serverError(wire.ErrSyntax)
	// ErrNotAuthorized: the client may not read or write the key.
	ErrNotAuthorized = serverError(wire.ErrNotAuthorized)
	// ErrUnknownCommand: the server does not know the verb.
	ErrUnknownCommand = serverError(wire.ErrUnknownCommand)
	// ErrWrongNumberOfArguments: the verb got the wrong number of
	// arguments.
	ErrWrongNumberOfArguments = serverError(wire.ErrWrongArgs)
	// ErrMissingTimestamp: a SET without __ts.
	ErrMissingTimestamp = serverError(wire.ErrMissingTimestamp)
	// ErrMalformedTimestamp: __ts or __ft did not parse as a version.
	ErrMalformedTimestamp = serverError(wire.ErrMalformedTimestamp)
	// ErrKeyLengthZero: the key is empty.
	ErrKeyLengthZero = serverError(wire.ErrEmptyKey)
	// ErrUnavailable is dss's own addition: the server could not carry out
	// the request (it is shutting down, or can no longer write to stable
	// storage), so the request does not take effect. The client retries
	// such requests until the context ends, failing over to the next
	// server when it has several.
	ErrUnavailable = serverError(wire.ErrUnavailable)
	// ErrBusy is dss's own addition: the server holds as many requests as
	// it may while its storage catches up, and did not carry this one
	// out. The client retries such requests on the same server after a
	// pause, until the context ends.
	ErrBusy = serverError(wire.ErrBusy)
	// ErrKeyTooLong is dss's own addition: the key is longer than the
	// server's maximum key size (dss serve --max-key-size).
	ErrKeyTooLong = serverError(wire.ErrKeyTooLong)
	// ErrValueTooLong is dss's own addition: the value is longer than the
	// server's maximum value size (dss serve --max-value-size).
	ErrValueTooLong = serverError(wire.ErrValueTooLong)
	// ErrUnknownRequester is dss's own addition: a server attached to
	// another broker (dss attach) could not tell the client id of a
	// KEYNOTIFY (the client sends it as __srcId, which this client does).
	ErrUnknownRequester = serverError(wire.ErrUnknownRequester)
)

// serverErrors maps each known text to its sentinel.
var serverErrors = func() map[string]*ServerError {
	m := make(map[string]*ServerError)
	for _, e := range []*ServerError{
		ErrTimestampSkew, ErrFencingTokenRequired, ErrFencingTokenSkew,
		ErrFencingTokenLowerVersion, ErrQuotaExceeded, ErrSyntax,
		ErrNotAuthorized, ErrUnknownCommand, ErrWrongNumberOfArguments,
		ErrMissingTimestamp, ErrMalformedTimestamp, ErrKeyLengthZero,
		ErrUnavailable, ErrBusy, ErrKeyTooLong, ErrValueTooLong, ErrBadScanToken,
		ErrUnknownRequester,
	} {
		m[e.Text] = e
	}
	return m
}()

func serverError(e *wire.Error) *ServerError { return &ServerError{Text: e.Text()} }

// serverErrorFor returns the sentinel for text, or a new *ServerError for a
// text the client does not know.
func serverErrorFor(text string) *ServerError {
	if e, ok := serverErrors[text]; ok {
		return e
	}
	return &ServerError{Text: text}
}

// Errors of the client itself, not sent by the server.
var (
	// ErrClosed is returned by every call on a closed Client, and ends
	// the watches and leases of a Client that is closed.
	ErrClosed = errors.New("dss client: closed")
	// ErrUnreachable is returned by Dial when every server refused or
	// failed the connection for Config.DialRounds rounds; it wraps the
	// last attempt's error.
	ErrUnreachable = errors.New("no server reachable")
	// ErrConnectionLost is returned when the connection dropped after a
	// request that changes the store was sent and before its response
	// arrived: the request may or may not have been applied. Requests
	// that only read are retried on the next connection instead.
	ErrConnectionLost = errors.New("dss client: connection lost before the response arrived; the request may or may not have been applied")
	// ErrBadResponse is wrapped by the errors for responses that break
	// the protocol (a malformed payload or version, a reply of the wrong
	// type).
	ErrBadResponse = errors.New("dss client: malformed response")
	// ErrLeaseLost ends a Lease whose lock expired or was taken by
	// another holder before it could be renewed.
	ErrLeaseLost = errors.New("dss client: lock lease lost")
	// ErrWatchOverflow ends a Watch whose reader fell so far behind that
	// its queue of undelivered events reached WatchOptions.MaxPending.
	ErrWatchOverflow = errors.New("dss client: watch overflow: events were not read in time")
)

// StatusError is a response whose RPC status (__stat) is not 200: the
// request did not reach the store, for example because the server does not
// speak the protocol version the client sent (505).
type StatusError struct {
	// Status is the value of __stat.
	Status string
	// Message is the server's explanation (__stMsg), if any.
	Message string
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return "dss client: RPC status " + e.Status
	}
	return "dss client: RPC status " + e.Status + ": " + e.Message
}

// RefusedError is a request the server refused to accept at the MQTT level
// (a PUBACK with a failure reason code): it was not executed.
type RefusedError struct {
	// ReasonCode is the MQTT 5 reason code of the PUBACK.
	ReasonCode byte
	// Reason is the PUBACK's reason string, if any.
	Reason string
}

func (e *RefusedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("dss client: request refused with reason code %#x", e.ReasonCode)
	}
	return fmt.Sprintf("dss client: request refused with reason code %#x: %s", e.ReasonCode, e.Reason)
}

// ConnectRefusedError is a connection the server refused with a CONNACK
// reason code: 0x86 (bad user name or password), 0x87 (not authorized:
// no credentials, or the policy grants no Connect), 0x85 (the client id
// is held by another principal), among others.
type ConnectRefusedError struct {
	// ReasonCode is the MQTT 5 reason code of the CONNACK.
	ReasonCode byte
	// Reason is the CONNACK's reason string, if any.
	Reason string
}

func (e *ConnectRefusedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("dss client: connection refused with reason code %#x", e.ReasonCode)
	}
	return fmt.Sprintf("dss client: connection refused with reason code %#x: %s", e.ReasonCode, e.Reason)
}

// PacketTooLargeError is a request larger than the Maximum Packet Size
// the server announced (dss serve --max-packet-size): it is not sent,
// since the server would close the connection on it, and so it was
// certainly not executed.
type PacketTooLargeError struct {
	Size int // the request's packet, in bytes
	Max  int // the server's maximum
}

func (e *PacketTooLargeError) Error() string {
	return fmt.Sprintf("the request is %d bytes, more than the server's maximum packet size of %d bytes (dss serve --max-packet-size): not sent", e.Size, e.Max)
}
