package wire

// Error is a protocol error: the server answers it with the payload
// "-ERR <text>\r\n". Its text is part of the protocol and never changes.
type Error struct {
	text string
}

func (e *Error) Error() string { return e.text }

// Text returns the protocol text of the error.
func (e *Error) Text() string { return e.text }

// The errors of the protocol, each with its exact text.
var (
	ErrTimestampSkew      = &Error{"the request timestamp is too far in the future; ensure that the client and broker system clocks are synchronized"}
	ErrFencingRequired    = &Error{"a fencing token is required for this request"}
	ErrFencingSkew        = &Error{"the request fencing token timestamp is too far in the future; ensure that the client and broker system clocks are synchronized"}
	ErrFencingLower       = &Error{"the request fencing token is a lower version than the fencing token protecting the resource"}
	ErrQuotaExceeded      = &Error{"the quota has been exceeded"}
	ErrSyntax             = &Error{"syntax error"}
	ErrNotAuthorized      = &Error{"not authorized"}
	ErrUnknownCommand     = &Error{"unknown command"}
	ErrWrongArgs          = &Error{"wrong number of arguments"}
	ErrMissingTimestamp   = &Error{"missing timestamp"}
	ErrMalformedTimestamp = &Error{"malformed timestamp"}
	ErrEmptyKey           = &Error{"the key length is zero"}

	// ErrUnavailable is not in the vendor's table: the store could not
	// carry out the request because it is shutting down or can no longer
	// write to stable storage. The request may be retried elsewhere.
	ErrUnavailable = &Error{"the state store is unavailable"}

	// ErrBusy is not in the vendor's table either: the server holds as
	// many requests as it may while its storage or its cluster catches
	// up, and did not carry this one out. The request may be retried on
	// the same server after a pause.
	ErrBusy = &Error{"the state store is busy; retry the request later"}

	// ErrKeyTooLong and ErrValueTooLong are not in the vendor's table:
	// the key or value is longer than the server's --max-key-size or
	// --max-value-size.
	ErrKeyTooLong   = &Error{"the key is longer than the maximum key size"}
	ErrValueTooLong = &Error{"the value is longer than the maximum value size"}

	// ErrBadScanToken is not in the vendor's table: a SCAN's continuation
	// token is not one this server made, or was made by a server whose
	// keys are ordered by another hash (a single node that restarted
	// since, another cluster). The scan must start again without a token.
	ErrBadScanToken = &Error{"the SCAN continuation token is not valid here; start the scan again without a token"}

	// ErrUnknownRequester is not in the vendor's table: dss attach, which
	// serves the store from outside another broker, learns a requester's
	// client id from the request alone (__srcId, or the response topic),
	// and KEYNOTIFY needs it to name the notification topic.
	ErrUnknownRequester = &Error{"the requester's client id is unknown: send it in the user property __srcId"}
)

// Errors lists every protocol error.
var Errors = []*Error{
	ErrTimestampSkew, ErrFencingRequired, ErrFencingSkew, ErrFencingLower,
	ErrQuotaExceeded, ErrSyntax, ErrNotAuthorized, ErrUnknownCommand,
	ErrWrongArgs, ErrMissingTimestamp, ErrMalformedTimestamp, ErrEmptyKey,
	ErrUnavailable, ErrBusy, ErrKeyTooLong, ErrValueTooLong, ErrBadScanToken,
	ErrUnknownRequester,
}

// ErrorByText returns the protocol error with the given text, or nil when
// the text is not one of the protocol's.
func ErrorByText(text string) *Error {
	for _, e := range Errors {
		if e.text == text {
			return e
		}
	}
	return nil
}
