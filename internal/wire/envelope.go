package wire

// Names and values of the RPC envelope that wraps every request and response
// in MQTT 5 user properties.
const (
	// PropTimestamp carries the client's clock on a request and the
	// version of the key on a response or notification.
	PropTimestamp = "__ts"
	// PropFencingToken carries the fencing token of a request.
	PropFencingToken = "__ft"
	// PropProtocolVersion carries the RPC protocol version.
	PropProtocolVersion = "__protVer"
	// PropStatus carries the RPC status of a response.
	PropStatus = "__stat"
	// PropStatusMessage carries a human readable reason for a non-200
	// status.
	PropStatusMessage = "__stMsg"
	// PropSupportedMajor lists the protocol major versions the server
	// supports, on a 505 response.
	PropSupportedMajor = "__supProtMajVer"
	// PropRequestProtocol repeats the version of a refused request.
	PropRequestProtocol = "__requestProtVer"
	// PropSourceID names the invoking client.
	PropSourceID = "__srcId"
	// PropPersistence asks for the key to survive a restart when its value
	// is "true".
	PropPersistence = "aio-persistence"
	// PropConsistency is dss's own: "stale" asks a cluster node to answer
	// a GET from its own copy at once, without confirming with the leader
	// that the copy is current. Any other value, or none, reads
	// linearizably.
	PropConsistency = "dss-consistency"
	// ConsistencyStale is the value of PropConsistency for a stale read.
	ConsistencyStale = "stale"
	// PropTTL is dss's own. On a GET request, "true" asks for the time the
	// key has left; the response then carries PropTTL with the
	// milliseconds left when the key expires, and none when it does not.
	// Responses to requests without it are unchanged, byte for byte.
	PropTTL = "dss-ttl"

	// ContentType is the content type of every request and response.
	ContentType = "application/octet-stream"
	// ProtocolVersion is the RPC protocol version the server speaks.
	ProtocolVersion = "1.0"
	// SupportedMajor is the RPC protocol major version the server speaks.
	SupportedMajor = "1"

	// StatusOK is the RPC status of every request that reached the store,
	// including those answered with an error payload.
	StatusOK = "200"
	// StatusVersionNotSupported answers a request of another major version.
	StatusVersionNotSupported = "505"
	// StatusBadRequest is dss's answer, on the Response Topic, to a
	// request the store refused without executing it because of its
	// envelope (QoS other than 1, no Correlation Data); __stMsg says why.
	StatusBadRequest = "400"
)

// SupportedVersion reports whether a request's __protVer value is one the
// server speaks: absent, or any version whose major part is 1.
func SupportedVersion(v string) bool {
	if v == "" {
		return true
	}
	major := v
	for i := 0; i < len(v); i++ {
		if v[i] == '.' {
			major = v[:i]
			break
		}
	}
	return major == SupportedMajor
}
